// The predictor folder: predictor.json + <kernel>.json models + meta.yaml, and its load-time checks.
#include <gtest/gtest.h>

#include "common/io.h"
#include "nnmeter/predictor_folder.h"
#include "nnmeter/registry.h"
#include "regressors/synthetic_conv.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

using test::error_of;

KernelPredictorMeta kernel_meta(const std::string& kernel, const RegressorParams& params,
                                std::optional<LatencyMetrics> metrics = std::nullopt, size_t sample_count = 0,
                                std::vector<std::string> feature_names = {}) {
  KernelPredictorMeta m;
  m.kernel = kernel;
  m.params = params;
  m.metrics = metrics;
  m.sample_count = sample_count;
  m.feature_names = std::move(feature_names);
  return m;
}

struct BuiltFolder {
  test::TempDir dir;
  fs::path folder = dir / "onednn_cpu_predictor";
  KernelDataset conv = test::synthetic_conv_dataset(200, 21);
  KernelDataset fc;
  std::vector<double> conv_pred, fc_pred;
  fs::path meta_yaml;

  BuiltFolder() {
    for (size_t i = 0; i < 100; ++i) {
      const double cin = 8.0 + static_cast<double>(i * 7 % 500), cout = 16.0 + static_cast<double>(i * 13 % 300);
      const double f = (2 * cin + 1) * cout;
      fc.features.push_back({cin, cout, f / 2e6, f / 1e6});
      fc.labels.push_back(0.002 + f * 1e-7);
    }
    fc.feature_names = {"CIN", "COUT", "feature_0", "feature_1"};
    RegressorParams p = default_regressor_params("conv-bn-relu", "onednn_cpu");
    p.n_estimators = 10;
    TrainResult conv_fit = train_kernel_predictor(conv, p, 0.1);
    RegressorParams q = default_gbdt_params();
    q.rounds = 30;
    q.log_target = false;
    TrainResult fc_fit = train_kernel_predictor(fc, q, 0.1, TrainMode::final);
    conv_pred = conv_fit.model.predict(conv.features);
    fc_pred = fc_fit.model.predict(fc.features);

    PredictorInfo info;
    info.name = "onednn_cpu_predictor";
    info.backend = "onednn_cpu";
    info.backend_config = {{"THREADS", 1}};
    PredictorWriter writer(folder, info);
    writer.add_kernel(conv_fit.model, kernel_meta("conv-bn-relu", p, conv_fit.metrics, conv_fit.sample_count));
    writer.add_kernel(fc_fit.model, kernel_meta("fc", q, std::nullopt, fc_fit.sample_count));
    meta_yaml = writer.finish();
  }
  Json meta() const { return io::load_json_file(folder / kPredictorMetaFile); }
};

// The error of predicting `kernel` (one row of its width) with the folder: model files are read on first use.
std::string predict_error(const BuiltFolder& b, const std::string& kernel) {
  const size_t width = kernel == "fc" ? b.fc.features.front().size() : b.conv.features.front().size();
  return error_of([&] { load_predictor_folder(b.folder).predict(kernel, {std::vector<double>(width, 1.0)}); });
}

TEST(PredictorFolder, RoundTripPredictsIdentically) {
  BuiltFolder b;
  const LoadedPredictor p = load_predictor_folder(b.folder);
  EXPECT_EQ(p.kernels(), (std::vector<std::string>{"conv-bn-relu", "fc"}));
  EXPECT_EQ(p.predict("conv-bn-relu", b.conv.features), b.conv_pred);
  EXPECT_EQ(p.predict("fc", b.fc.features), b.fc_pred);
  EXPECT_EQ(p.meta().kernels.at("fc").feature_names, b.fc.feature_names);
  EXPECT_FALSE(p.meta().kernels.at("fc").log_target);
  EXPECT_TRUE(p.meta().kernels.at("conv-bn-relu").metrics);
  EXPECT_FALSE(p.meta().kernels.at("fc").metrics);
  EXPECT_THROW(p.predict("se", {{1.0, 2.0}}), Error);
  EXPECT_THROW(p.predict("fc", {{1.0, 2.0}}), Error);
}

// A predictor built before a kernel gained an appended feature (concat's elements) still predicts: it reads
// the leading features it was trained on. Narrower rows are still an error.
TEST(PredictorFolder, RowsWiderThanTheModelAreReadUpToItsWidth) {
  BuiltFolder b;
  const LoadedPredictor p = load_predictor_folder(b.folder);
  FeatureMatrix wider = b.fc.features;
  for (auto& row : wider) row.push_back(12345.0);
  EXPECT_EQ(p.predict("fc", wider), b.fc_pred);
  FeatureMatrix narrower = b.fc.features;
  for (auto& row : narrower) row.pop_back();
  EXPECT_THROW(p.predict("fc", narrower), Error);
}

TEST(PredictorFolder, MetadataDescribesBackendDeviceLibrariesAndLayout) {
  BuiltFolder b;
  const Json m = b.meta();
  EXPECT_EQ(m["format"], "nn-meter-predictor");
  EXPECT_EQ(m["format_version"], kPredictorFormatVersion);
  EXPECT_EQ(m["backend"]["name"], "onednn_cpu");
  EXPECT_EQ(m["backend"]["config"]["THREADS"], 1);
  EXPECT_FALSE(m["device"]["cpu_model"].get<std::string>().empty());
  EXPECT_GE(m["device"]["logical_cores"].get<int>(), 1);
  EXPECT_EQ(m["libraries"]["nn-meter"], version());
  EXPECT_EQ(m["libraries"]["xgboost"].get<std::string>().rfind("1.", 0), 0u);
  EXPECT_EQ(m["fusion_rules"], kFusionRulesFile);
  const Json& conv = m["kernels"]["conv-bn-relu"];
  EXPECT_EQ(conv["feature_count"], 7);
  EXPECT_EQ(conv["feature_names"][0], "HW");
  EXPECT_EQ(conv["target_transform"], "log");
  EXPECT_EQ(conv["regressor"]["n_estimators"], 10);
  EXPECT_EQ(conv["sample_count"], 200);
  EXPECT_EQ(conv["metrics"]["count"], 40);
  EXPECT_EQ(conv["model_file"], "conv-bn-relu.json");
}

TEST(PredictorFolder, MetaYamlRegistersWithTheRegistry) {
  BuiltFolder b;
  const Json meta = io::load_yaml_file(b.meta_yaml);
  EXPECT_EQ(meta["package_location"], ".");
  EXPECT_EQ(meta["kernel_predictors"], Json({"conv-bn-relu", "fc"}));
  test::TempDir home;
  Registry registry(home.path());
  const PredictorEntry e = registry.register_predictor(b.meta_yaml);
  EXPECT_EQ(e.name, "onednn_cpu_predictor");
  EXPECT_EQ(e.version, "1.0");
  EXPECT_EQ(fs::canonical(e.package_location), fs::canonical(b.folder));
  EXPECT_EQ(load_predictor_folder(e.package_location).kernels().size(), 2u);
}

TEST(PredictorFolder, MissingModelFileIsNamed) {
  BuiltFolder b;
  fs::remove(b.folder / "fc.json");
  const std::string msg = error_of([&] { load_predictor_folder(b.folder); });
  EXPECT_NE(msg.find((b.folder / "fc.json").string()), std::string::npos) << msg;
}

// A damaged model file fails every prediction that needs it, with the same one-line error, and only those:
// the other kernels' predictions are sound, so a model without that kernel is still predicted.
TEST(PredictorFolder, CorruptModelFileIsNamedWhenItsKernelIsNeeded) {
  BuiltFolder b;
  test::write_text(b.folder / "conv-bn-relu.json", "{\"learner\": {");
  const LoadedPredictor p = load_predictor_folder(b.folder);
  EXPECT_EQ(p.predict("fc", b.fc.features), b.fc_pred);
  const std::string msg = error_of([&] { p.predict("conv-bn-relu", b.conv.features); });
  EXPECT_NE(msg.find((b.folder / "conv-bn-relu.json").string()), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(error_of([&] { p.predict("conv-bn-relu", b.conv.features); }), msg);
  EXPECT_EQ(predict_error(b, "conv-bn-relu"), msg);
}

TEST(PredictorFolder, FeatureLayoutMismatchIsNamed) {
  BuiltFolder b;
  const fs::path model = b.folder / "fc.json";
  // Fewer features declared than the model takes.
  Json m = b.meta();
  m["kernels"]["fc"]["feature_names"] = {"CIN", "COUT"};
  m["kernels"]["fc"]["feature_count"] = 2;
  io::save_json_file(b.folder / kPredictorMetaFile, m);
  std::string msg = predict_error(b, "fc");
  EXPECT_NE(msg.find(model.string()), std::string::npos) << msg;
  // Same count, different order.
  m = b.meta();
  m["kernels"]["fc"]["feature_names"] = {"COUT", "CIN", "feature_0", "feature_1"};
  m["kernels"]["fc"]["feature_count"] = 4;
  io::save_json_file(b.folder / kPredictorMetaFile, m);
  msg = predict_error(b, "fc");
  EXPECT_NE(msg.find(model.string()), std::string::npos) << msg;
  // A model swapped in from another kernel.
  m["kernels"]["fc"]["feature_names"] = b.fc.feature_names;
  io::save_json_file(b.folder / kPredictorMetaFile, m);
  fs::copy_file(b.folder / "conv-bn-relu.json", model, fs::copy_options::overwrite_existing);
  msg = predict_error(b, "fc");
  EXPECT_NE(msg.find(model.string()), std::string::npos) << msg;
}

TEST(PredictorFolder, FormatVersionAndMissingMetadataAreErrors) {
  BuiltFolder b;
  const fs::path meta_file = b.folder / kPredictorMetaFile;
  Json m = b.meta();
  m["format_version"] = kPredictorFormatVersion + 1;
  io::save_json_file(meta_file, m);
  std::string msg = error_of([&] { load_predictor_folder(b.folder); });
  EXPECT_NE(msg.find(meta_file.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("format_version"), std::string::npos) << msg;
  fs::remove(meta_file);
  msg = error_of([&] { load_predictor_folder(b.folder); });
  EXPECT_NE(msg.find(kPredictorMetaFile), std::string::npos) << msg;
  EXPECT_THROW(load_predictor_folder(b.dir / "nowhere"), Error);
}

// The tree cache (regressors/model_cache.h): written with the folder, used when it matches its model file,
// never trusted otherwise; predictions are the same bit for bit either way.
TEST(PredictorFolder, TreeCacheIsWrittenWithTheFolderAndPredictsIdentically) {
  BuiltFolder b;
  for (const char* kernel : {"conv-bn-relu", "fc"}) EXPECT_TRUE(fs::is_regular_file(b.folder / (std::string(kernel) + ".trees")));
  const std::string cache = test::read_text(b.folder / "conv-bn-relu.trees");
  EXPECT_EQ(load_predictor_folder(b.folder).predict("conv-bn-relu", b.conv.features), b.conv_pred);
  // Without caches the JSON is read, and the caches come back as they were.
  fs::remove(b.folder / "conv-bn-relu.trees");
  fs::remove(b.folder / "fc.trees");
  const LoadedPredictor p = load_predictor_folder(b.folder);
  EXPECT_EQ(p.predict("conv-bn-relu", b.conv.features), b.conv_pred);
  EXPECT_EQ(p.predict("fc", b.fc.features), b.fc_pred);
  EXPECT_EQ(test::read_text(b.folder / "conv-bn-relu.trees"), cache);
  EXPECT_TRUE(fs::is_regular_file(b.folder / "fc.trees"));
}

TEST(PredictorFolder, DamagedTreeCacheIsIgnoredAndRewritten) {
  BuiltFolder b;
  const fs::path file = b.folder / "conv-bn-relu.trees";
  const std::string good = test::read_text(file);
  std::string flipped = good;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x5a);
  std::string early = good;  // a byte of the header or the payload's first trees
  early[good.size() / 3] = static_cast<char>(~early[good.size() / 3]);
  const std::vector<std::string> damaged = {"", good.substr(0, good.size() / 2), good.substr(0, 30), flipped, early,
                                            good + "x", test::read_text(b.folder / "fc.trees"), std::string(4096, '\0')};
  for (size_t i = 0; i < damaged.size(); ++i) {
    test::write_text(file, damaged[i]);
    EXPECT_EQ(load_predictor_folder(b.folder).predict("conv-bn-relu", b.conv.features), b.conv_pred) << "damage " << i;
    EXPECT_EQ(test::read_text(file), good) << "damage " << i;
  }
  fs::remove(file);
  fs::create_directory(file);  // a cache that cannot be read nor replaced: the JSON still serves
  EXPECT_EQ(load_predictor_folder(b.folder).predict("conv-bn-relu", b.conv.features), b.conv_pred);
}

TEST(PredictorFolder, TreeCacheOfAnotherModelFileIsNotTrusted) {
  BuiltFolder b;
  // The same length and modification time, other content: the cache matches the bytes, not the file's stat.
  const fs::path model = b.folder / "fc.json";
  const auto mtime = fs::last_write_time(model);
  std::string text = test::read_text(model);
  text[0] = ' ';  // the opening brace gone: a broken file, whatever its cache says
  test::write_text(model, text);
  fs::last_write_time(model, mtime);
  const std::string msg = predict_error(b, "fc");
  EXPECT_NE(msg.find(model.string()), std::string::npos) << msg;
}

TEST(PredictorFolder, WriterRejectsInconsistentKernels) {
  test::TempDir dir;
  const KernelDataset data = test::synthetic_conv_dataset(50, 22);
  RegressorParams p = default_regressor_params("conv-bn-relu", "onednn_cpu");
  p.n_estimators = 5;
  const KernelRegressor model = KernelRegressor::train(data.features, data.labels, p, data.feature_names);
  PredictorInfo info;
  info.name = "p";
  info.backend = "onednn_cpu";
  PredictorWriter w(dir / "p", info);
  EXPECT_THROW(w.add_kernel(model, kernel_meta("conv-bn-relu", p, std::nullopt, 50, {"HW"})), Error);
  RegressorParams raw = p;
  raw.log_target = false;
  EXPECT_THROW(w.add_kernel(model, kernel_meta("conv-bn-relu", raw)), Error);
  EXPECT_THROW(w.add_kernel(model, kernel_meta("../evil", p)), Error);
  EXPECT_THROW(w.finish(), Error);  // nothing added
  EXPECT_FALSE(fs::exists(dir / "p" / kRegistryMetaFile));
}

}  // namespace
}  // namespace nnmeter
