// generate_config_sample: files and their format, dedup, byte-stable JSON, no partial files on failure,
// kernel data collection and CSV export.
#include <gtest/gtest.h>

#include <regex>

#include "common/io.h"
#include "kernels/kernel_test_util.h"
#include "nnmeter/kernel_data.h"
#include "nnmeter/registry.h"
#include "nnmeter/sampling.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

KernelSuite suite_for(const std::string& name) {
  for (auto& info : builtin_kernels())
    if (info.name == name) return info.create(Json::object());
  throw std::runtime_error("no builtin kernel " + name);
}

Workspace workspace_at(const fs::path& root, int batch = 1) {
  Workspace ws;
  ws.root = root;
  ws.predictorbuild_config = {{"BATCH_SIZE", batch}};
  return ws;
}

size_t count_files(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

TEST(GenerateConfigSample, WritesModelsAndResultsInTheSeedsFormat) {
  test::TempDir dir;
  auto ws = workspace_at(dir.path(), 2);
  auto suite = suite_for("dwconv-bn-relu");
  SampleResult r = generate_config_sample(ws, suite, 12, "prior", SamplingMode::Prior, {}, 5);
  EXPECT_EQ(r.sampled, 12);
  EXPECT_EQ(r.results_file, dir / "predictor_build/results/dwconv-bn-relu_prior.json");
  const Json data = io::load_json_file(r.results_file);
  ASSERT_TRUE(data.contains("dwconv-bn-relu"));
  const Json& entries = data["dwconv-bn-relu"];
  EXPECT_EQ(entries.size(), r.new_entries.size());
  EXPECT_EQ(entries.size() + static_cast<size_t>(r.duplicates), 12u);
  EXPECT_EQ(count_files(dir / "predictor_build/kernels"), entries.size());
  const std::regex id_re("[A-Z]{6}");
  for (const auto& [id, item] : entries.items()) {
    EXPECT_TRUE(std::regex_match(id, id_re)) << id;
    EXPECT_EQ(fs::path(item["model"].get<std::string>()),
              fs::absolute(dir / ("predictor_build/kernels/dwconv-bn-relu_prior_" + id + ".onnx")));
    EXPECT_EQ(item["shapes"], Json(suite.kernel->input_tensor_shape(item["config"])));
    auto model = test::parse_model(test::read_text(item["model"].get<std::string>()));
    EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_value(), 2);  // BATCH_SIZE
  }
}

TEST(GenerateConfigSample, ResultsJsonRoundTripsByteStable) {
  test::TempDir dir;
  auto suite = suite_for("fc");
  auto r = generate_config_sample(workspace_at(dir.path()), suite, 6, "prior", SamplingMode::Prior, {}, 3);
  const std::string before = test::read_text(r.results_file);
  io::save_json_file(dir / "copy.json", io::load_json_file(r.results_file));
  EXPECT_EQ(test::read_text(dir / "copy.json"), before);
}

TEST(GenerateConfigSample, DropsDuplicatesWithinABatchAndAgainstTheWorkspace) {
  test::TempDir dir;
  auto ws = workspace_at(dir.path());
  auto suite = suite_for("relu");
  // Two identical configs to sample around: the second one's samples repeat the first's.
  const std::vector<KernelConfig> around = {{{"HW", 7}, {"CIN", 10}}, {{"HW", 7}, {"CIN", 10}}};
  auto r1 = generate_config_sample(ws, suite, 100, "finegrained1", SamplingMode::Finegrained, around, 1);
  EXPECT_EQ(r1.sampled, 18);  // all 9 values of [4, 12], twice
  EXPECT_EQ(r1.new_entries.size(), 9u);
  EXPECT_EQ(r1.duplicates, 9);
  // Same configs again under another mark: everything is already in the workspace, nothing is written.
  const std::string before = test::read_text(r1.results_file);
  auto r2 = generate_config_sample(ws, suite, 100, "finegrained2", SamplingMode::Finegrained, {around[0]}, 2);
  EXPECT_EQ(r2.new_entries.size(), 0u);
  EXPECT_EQ(r2.duplicates, r2.sampled);
  EXPECT_FALSE(fs::exists(dir / "predictor_build/results/relu_finegrained2.json"));
  EXPECT_EQ(test::read_text(r1.results_file), before);
  EXPECT_EQ(count_files(dir / "predictor_build/kernels"), 9u);
  // A new batch under the same mark extends the file and keeps the old entries.
  auto r3 = generate_config_sample(ws, suite, 3, "finegrained1", SamplingMode::Finegrained, {{{"HW", 14}, {"CIN", 10}}}, 3);
  EXPECT_EQ(r3.new_entries.size(), 3u);
  EXPECT_EQ(io::load_json_file(r1.results_file)["relu"].size(), 12u);
}

TEST(GenerateConfigSample, BadInputsLeaveNoFiles) {
  test::TempDir dir;
  auto ws = workspace_at(dir.path());
  auto suite = suite_for("conv-bn-relu");
  EXPECT_THROW(generate_config_sample(ws, suite, 0, "prior", SamplingMode::Prior, {}, 1), Error);
  EXPECT_THROW(generate_config_sample(ws, suite, -5, "prior", SamplingMode::Prior, {}, 1), Error);
  EXPECT_THROW(generate_config_sample(ws, suite, 5, "../x", SamplingMode::Prior, {}, 1), Error);
  EXPECT_THROW(generate_config_sample(ws, suite, 5, "fg", SamplingMode::Finegrained, {}, 1), Error);
  // A valid config next to one with KERNEL_SIZE far beyond HW: validation fails before any model is written.
  const std::vector<KernelConfig> configs = {{{"HW", 7}, {"CIN", 8}, {"COUT", 8}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}},
                                             {{"HW", 1}, {"CIN", 8}, {"COUT", 8}, {"KERNEL_SIZE", 31}, {"STRIDES", 1}}};
  EXPECT_THROW(generate_config_sample(ws, suite, 2, "fg", SamplingMode::Finegrained, configs, 1), Error);
  auto bad_batch = workspace_at(dir.path(), 0);
  EXPECT_THROW(generate_config_sample(bad_batch, suite, 2, "prior", SamplingMode::Prior, {}, 1), Error);
  EXPECT_FALSE(fs::exists(dir / "predictor_build"));
}

// A customized kernel (as a plugin would bring) whose model building fails on its third config: the two
// models already written are removed again and no results file appears.
class FailingThirdKernel : public Kernel {
 public:
  std::vector<Shape> input_tensor_shape(const KernelConfig& c) const override { return {{c["CIN"].get<int64_t>()}}; }
  std::string build_onnx(const KernelConfig& c, int batch) const override {
    if (++built_ == 3) throw std::runtime_error("device out of memory");
    return inner_->build_onnx(c, batch);
  }
  std::unique_ptr<Kernel> inner_ = std::move(suite_for("fc").kernel);
  mutable int built_ = 0;
};

TEST(GenerateConfigSample, FailureMidwayRemovesWhatItWrote) {
  test::TempDir dir;
  KernelSuite suite = suite_for("fc");
  suite.name = "myfc";
  suite.kernel = std::make_unique<FailingThirdKernel>();
  try {
    generate_config_sample(workspace_at(dir.path()), suite, 6, "prior", SamplingMode::Prior, {}, 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device out of memory"), std::string::npos);
  }
  EXPECT_EQ(count_files(dir / "predictor_build/kernels"), 0u);
  EXPECT_EQ(count_files(dir / "predictor_build/results"), 0u);
}

TEST(KernelData, CollectsAndExportsTheDocumentedCsvColumns) {
  test::TempDir dir;
  auto ws = workspace_at(dir.path());
  auto suite = suite_for("conv-bn-relu");
  auto r = generate_config_sample(ws, suite, 4, "prior", SamplingMode::Prior, {}, 8);
  Json latencies = Json::object();
  std::vector<std::string> ids;
  for (const auto& [id, item] : r.new_entries.items()) ids.push_back(id);
  ASSERT_EQ(ids.size(), 4u);
  latencies["conv-bn-relu"][ids[0]]["latency"] = "1.25 +- 0.1";
  latencies["conv-bn-relu"][ids[1]]["latency"] = 2.5;
  latencies["conv-bn-relu"][ids[2]]["latency"] = "0.0 +- 0.0";  // failed profiling: dropped
  latencies["conv-bn-relu"]["ZZZZZZ"]["latency"] = "9 +- 0";     // no config: ignored
  io::save_json_file(dir / "profiled.json", latencies);

  Json data = collect_kernel_data({r.results_file}, {dir / "profiled.json"});
  EXPECT_EQ(data["conv-bn-relu"].size(), 4u);
  KernelDataTable table = get_data_by_profiled_results("conv-bn-relu", *suite.parser, data);
  EXPECT_EQ(table.columns, (std::vector<std::string>{"model_path", "HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES",
                                                     "feature_0", "feature_1", "latency"}));
  ASSERT_EQ(table.labels.size(), 2u);
  save_kernel_data_csv(table, dir / "out.csv");
  const std::string csv = test::read_text(dir / "out.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "model_path,HW,CIN,COUT,KERNEL_SIZE,STRIDES,feature_0,feature_1,latency");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  const auto& cfg = r.new_entries[ids[0]]["config"];
  const std::string row = r.new_entries[ids[0]]["model"].get<std::string>() + "," + std::to_string(cfg["HW"].get<int>()) +
                          "," + std::to_string(cfg["CIN"].get<int>()) + ",";
  EXPECT_NE(csv.find(row), std::string::npos) << csv;
  EXPECT_NE(csv.find(",1.25\n"), std::string::npos) << csv;

  Json none = collect_kernel_data({r.results_file}, {});
  EXPECT_THROW(get_data_by_profiled_results("conv-bn-relu", *suite.parser, none), Error);
  EXPECT_THROW(get_data_by_profiled_results("fc", *suite.parser, data), Error);

  // A "model" that is not a path is a one-line error naming the entry (found by fuzzing: it was an
  // uncaught json type_error).
  Json odd = data;
  odd["conv-bn-relu"][ids[0]]["model"] = Json::array({Json::array({1, 8, 8, 4})});
  try {
    get_data_by_profiled_results("conv-bn-relu", *suite.parser, odd);
    ADD_FAILURE() << "a non-string model path was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(ids[0]), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"model\" must be the model's path"), std::string::npos) << e.what();
  }
}

TEST(KernelData, LatencyValues) {
  EXPECT_EQ(parse_latency_value("12.5 +- 0.3"), 12.5);
  EXPECT_EQ(parse_latency_value(3), 3.0);
  EXPECT_EQ(parse_latency_value("n/a"), std::nullopt);
  EXPECT_EQ(parse_latency_value(nullptr), std::nullopt);
}

}  // namespace
}  // namespace nnmeter
