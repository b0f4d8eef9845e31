// Model-level prediction with a small real predictor folder (XGBoost models trained in the test).
#include <cmath>

#include "prediction/onnx_model.h"
#include "networks/architectures.h"
#include "nnmeter/registry.h"
#include "prediction/prediction_fixtures.h"

namespace nnmeter {
namespace {

using networks::LayerBuilder;
using test::error_of;

const std::vector<std::string> kKernels = {"conv-bn-relu", "dwconv-bn-relu", "fc", "global-avgpool", "add", "relu", "se",
                                           "hswish"};

struct Folder {
  test::TempDir dir;
  fs::path path = dir / "tiny_cpu";
  explicit Folder(const std::vector<std::string>& kernels = kKernels, const Json& rules = test::rules_json({
      "BF_conv_bn", "BF_conv_relu", "BF_conv_relu6", "BF_conv_hswish", "BF_dwconv_bn", "BF_dwconv_relu",
      "BF_dwconv_relu6", "BF_dwconv_hswish", "BF_bn_relu", "BF_add_relu"})) {
    test::make_predictor_folder(path, kernels, rules);
  }
};

// One predictor for the whole file: training takes a moment. Removed at exit.
const Folder& shared_folder() {
  static const Folder f;
  return f;
}

const KernelPrediction& with_op(const ModelPrediction& p, const std::string& op) {
  for (const auto& k : p.kernels)
    if (k.op == op) return k;
  throw std::runtime_error("no kernel " + op);
}

TEST(Predict, TotalIsTheSumOfKernelPredictionsFromTheBuildersParsers) {
  const auto predictor = LatencyPredictor::from_folder(shared_folder().path);
  const auto zm = networks::build("mobilenet_v2", 96);
  const ModelPrediction p = predictor.predict_ir(onnx_to_ir(zm.model, "mobilenet_v2"));
  EXPECT_TRUE(p.uncovered.empty());
  double sum = 0;
  const LoadedPredictor raw = load_predictor_folder(shared_folder().path);
  for (const auto& k : p.kernels) {
    sum += k.latency_ms;
    if (k.predictor_kernel.empty()) continue;
    EXPECT_GT(k.latency_ms, 0) << k.name;
    // Features are exactly the builder parser's for the config; the latency is the regressor's answer.
    const auto parser = find_kernel(Registry(), k.predictor_kernel).create(Json::object()).parser;
    EXPECT_EQ(k.features, parser->get_feature_by_config(k.config)) << k.name;
    EXPECT_DOUBLE_EQ(k.latency_ms,
                     raw.predict(k.predictor_kernel, {k.features})[0] * static_cast<double>(k.groups) * k.work);
  }
  EXPECT_DOUBLE_EQ(p.latency_ms, sum);
  EXPECT_GT(p.latency_ms, 0);
  // Clipped relus use the relu predictors of their family, and say so.
  const auto& first = p.kernels.front();
  EXPECT_EQ(first.op, "conv-relu6");  // the exporter folded the BN
  EXPECT_EQ(first.kernel, "conv-relu6");
  EXPECT_EQ(first.predictor_kernel, "conv-bn-relu");
  EXPECT_NE(first.note.find("conv-bn-relu"), std::string::npos);
  EXPECT_EQ(with_op(p, "globalavgpool").config["HW"], 3);  // 96 / 32: the real input size
}

// Inception's 1×7 and 7×1 convs: predicted as the 3×3 of KERNEL_SIZE, for 7/9 of its time, and said so.
TEST(Predict, NonSquareConvsTakeTheirShareOfTheirSquaresWork) {
  const auto predictor = LatencyPredictor::from_folder(shared_folder().path);
  const auto predict = [&](int64_t kh, int64_t kw) {
    LayerBuilder b("rect");
    b.output(b.relu(b.conv_rect(b.input("x", {1, 64, 17, 17}), 64, kh, kw)));
    const ModelPrediction p = predictor.predict_ir(onnx_to_ir(b.model(), "rect"));
    return with_op(p, "conv-relu");
  };
  const KernelPrediction square = predict(3, 3), wide = predict(1, 7), tall = predict(7, 1);
  EXPECT_EQ(square.work, 1);
  EXPECT_EQ(square.note.find("non-square"), std::string::npos);
  for (const KernelPrediction* k : {&wide, &tall}) {
    EXPECT_EQ(k->config, square.config);
    EXPECT_DOUBLE_EQ(k->work, 7.0 / 9);
    EXPECT_DOUBLE_EQ(k->latency_ms, square.latency_ms * 7 / 9);
    EXPECT_NE(k->note.find("non-square kernel: 0.778 of the work of its KERNEL_SIZE 3 square"), std::string::npos) << k->note;
  }
  ModelPrediction p;
  p.kernels = {wide, square};
  EXPECT_DOUBLE_EQ(p.to_json()["kernels"][0]["work"].get<double>(), 7.0 / 9);
  EXPECT_FALSE(p.to_json()["kernels"][1].contains("work"));
}

TEST(Predict, FileMemoryAndIrJsonAgree) {
  const auto predictor = LatencyPredictor::from_folder(shared_folder().path);
  test::TempDir dir;
  const auto zm = networks::build("mobilenet_v3_large", 64);
  const fs::path file = dir / "mbv3.onnx";
  test::write_text(file, zm.model.SerializeAsString());
  const double from_file = predictor.predict_file(file).latency_ms;
  EXPECT_DOUBLE_EQ(predictor.predict_ir(onnx_to_ir(zm.model, "m")).latency_ms, from_file);
  const Json ir = ir_to_nnmeter_json(load_onnx_ir(file));
  EXPECT_DOUBLE_EQ(predictor.predict_ir(ir_from_nnmeter_json(Json::parse(ir.dump()), "ir.json")).latency_ms, from_file);
  const ModelPrediction p = predictor.predict_file(file);
  EXPECT_GT(with_op(p, "se").latency_ms, 0);
  EXPECT_EQ(p.to_json()["latency_ms"], p.latency_ms);
  EXPECT_EQ(p.to_json()["kernels"].size(), p.kernels.size());
}

TEST(Predict, GroupedConvWithoutItsKernelIsGroupsTimesOneGroupAndSaysSo) {
  const auto predictor = LatencyPredictor::from_folder(shared_folder().path);
  LayerBuilder b("grouped");
  b.output(b.relu(b.conv_bn(b.input("x", {1, 64, 28, 28}), 128, 3, 1, 8)));
  const ModelPrediction grouped = predictor.predict_ir(onnx_to_ir(b.model(), "grouped"));
  ASSERT_EQ(grouped.kernels.size(), 1u);
  LayerBuilder one("one");
  one.output(one.relu(one.conv_bn(one.input("x", {1, 8, 28, 28}), 16, 3)));
  const ModelPrediction single = predictor.predict_ir(onnx_to_ir(one.model(), "one"));
  EXPECT_DOUBLE_EQ(grouped.latency_ms, 8 * single.latency_ms);
  const KernelPrediction& k = grouped.kernels[0];
  EXPECT_EQ(k.kernel, "gconv-relu");  // the exporter folded the BN
  EXPECT_EQ(k.predictor_kernel, "conv-bn-relu");
  EXPECT_EQ(k.groups, 8);
  EXPECT_EQ(k.config["CIN"], 8);  // one group's
  EXPECT_TRUE(k.stand_in);
  EXPECT_EQ(grouped.stand_ins(), (std::map<std::string, size_t>{{"gconv-relu -> conv-bn-relu", 1}}));
  EXPECT_NE(k.note.find("grouped conv: 8 x"), std::string::npos);
}

TEST(Predict, GroupedConvUsesTheGroupedConvKernelWhenThePredictorHasIt) {
  const Folder folder({"conv-bn-relu", "gconv-bn-relu"}, test::rules_json({"BF_conv_bn", "BF_conv_relu"}));
  const auto predictor = LatencyPredictor::from_folder(folder.path);
  LayerBuilder b("grouped");
  b.output(b.relu(b.conv_bn(b.input("x", {1, 64, 28, 28}), 128, 3, 1, 8)));  // BN folded, as exporters write it
  const ModelPrediction p = predictor.predict_ir(onnx_to_ir(b.model(), "grouped"));
  ASSERT_EQ(p.kernels.size(), 1u);
  const KernelPrediction& k = p.kernels[0];
  EXPECT_EQ(k.kernel, "gconv-relu");
  EXPECT_EQ(k.predictor_kernel, "gconv-bn-relu");
  EXPECT_FALSE(k.stand_in);  // the backend fuses the BN: its twin is its own
  EXPECT_EQ(k.groups, 1);
  EXPECT_EQ(k.config, (Json{{"HW", 28}, {"CIN", 64}, {"COUT", 128}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}, {"GROUPS", 8}}));
  const auto parser = find_kernel(Registry(), "gconv-bn-relu").create(Json::object()).parser;
  EXPECT_DOUBLE_EQ(k.latency_ms, load_predictor_folder(folder.path).predict("gconv-bn-relu", {parser->get_feature_by_config(k.config)})[0]);
  EXPECT_TRUE(p.stand_ins().empty());
}

TEST(Predict, ElementwiseOpsAreCoveredAndLayoutOpsAreFree) {
  const auto predictor = LatencyPredictor::from_folder(shared_folder().path);
  LayerBuilder b("ew");
  const auto x = b.input("x", {1, 16, 8, 8});
  const auto y = b.mul(b.sigmoid(x), b.relu(x));
  b.output(b.flatten(y));
  const ModelPrediction p = predictor.predict_ir(onnx_to_ir(b.model(), "ew"));
  EXPECT_TRUE(p.uncovered.empty());
  EXPECT_EQ(with_op(p, "sigmoid").predictor_kernel, "relu");
  EXPECT_EQ(with_op(p, "mul").predictor_kernel, "add");  // reads two tensors
  EXPECT_NE(with_op(p, "mul").note.find("element-wise"), std::string::npos);
  EXPECT_GT(with_op(p, "mul").latency_ms, 0);
  EXPECT_EQ(with_op(p, "flatten").latency_ms, 0);
  EXPECT_EQ(with_op(p, "flatten").predictor_kernel, "");
}

TEST(Predict, MissingKernelsAndUnknownOpsAreReportedNotZero) {
  const Folder folder({"conv-bn-relu"}, test::rules_json({"BF_conv_bn", "BF_conv_relu"}));
  const auto predictor = LatencyPredictor::from_folder(folder.path);
  LayerBuilder b("gap");
  const auto x = b.relu(b.conv_batchnorm(b.input("x", {1, 8, 8, 8}), 16, 3));
  const auto t = b.node("DepthToSpace", {x}, {1, 4, 16, 16}, {networks::attr("blocksize", int64_t{2})});
  b.output(b.flatten(b.global_avgpool(t)));
  const ModelPrediction p = predictor.predict_ir(onnx_to_ir(b.model(), "gap"));
  ASSERT_EQ(p.uncovered.size(), 3u);  // DepthToSpace, GlobalAveragePool + Flatten
  EXPECT_EQ(p.uncovered[0].type, "DepthToSpace");
  EXPECT_NE(p.uncovered[0].reason.find("no kernel covers DepthToSpace"), std::string::npos);
  EXPECT_EQ(p.uncovered[1].type, "GlobalAveragePool");
  EXPECT_NE(p.uncovered[1].reason.find("no global-avgpool predictor"), std::string::npos);
  EXPECT_EQ(p.node_count, 6u);
  EXPECT_DOUBLE_EQ(p.latency_ms, p.kernels.at(0).latency_ms);
}

// An exported EfficientNet block (BN folded, SiLU as Sigmoid·Mul): with the swish kernel it is predicted by its
// own regressor; without it by conv-bn-relu's, and the prediction says so.
TEST(Predict, StandInsAreNamedPerModel) {
  LayerBuilder b("silu");
  b.output(b.swish(b.conv(b.input("x", {1, 8, 16, 16}), 16, 3)));
  const Json rules = test::rules_json({"BF_conv_swish"});
  const Folder own({"conv-bn-swish", "conv-bn-relu"}, rules);
  const ModelPrediction p = LatencyPredictor::from_folder(own.path).predict_ir(onnx_to_ir(b.model(), "silu"));
  EXPECT_EQ(with_op(p, "conv-swish").predictor_kernel, "conv-bn-swish");
  EXPECT_FALSE(with_op(p, "conv-swish").stand_in);
  EXPECT_TRUE(p.stand_ins().empty());

  const Folder other({"conv-bn-relu"}, rules);
  const ModelPrediction q = LatencyPredictor::from_folder(other.path).predict_ir(onnx_to_ir(b.model(), "silu"));
  EXPECT_EQ(with_op(q, "conv-swish").predictor_kernel, "conv-bn-relu");
  EXPECT_TRUE(with_op(q, "conv-swish").stand_in);
  EXPECT_EQ(q.stand_ins(), (std::map<std::string, size_t>{{"conv-bn-swish -> conv-bn-relu", 1}}));
  EXPECT_EQ(q.to_json()["stand_ins"], Json({{"conv-bn-swish -> conv-bn-relu", 1}}));
}

// ShuffleNet's unit, with the backend's rule that runs concat → shuffle → split as one kernel: the shuffle is
// still predicted, by the channelshuffle kernel, or without one as the concat of its two halves (the same bytes).
TEST(Predict, AChannelShuffleIsPredictedEvenWhereTheBackendFusesItIntoTheConcat) {
  LayerBuilder b("unit");
  const auto x = b.input("x", {1, 58, 28, 28});
  const auto halves = b.split(x, {29, 29});
  const auto y = b.channel_shuffle(b.concat({halves[0], b.relu(b.conv(halves[1], 29, 1))}), 2);
  const auto parts = b.split(y, {29, 29});
  b.output(b.relu(b.conv(parts[0], 29, 1)));
  b.output(parts[1]);
  const Json rules = test::rules_json({"BF_conv_bn", "BF_conv_relu", "BF_concat_channelshuffle_split"});
  const Folder without({"conv-bn-relu", "concat"}, rules);
  const ModelPrediction p = LatencyPredictor::from_folder(without.path).predict_ir(onnx_to_ir(b.model(), "unit"));
  ASSERT_EQ(p.uncovered.size(), 1u);  // the first split: no split kernel
  EXPECT_EQ(p.uncovered[0].type, "Split");
  const KernelPrediction& shuffle = with_op(p, "channelshuffle");
  EXPECT_EQ(shuffle.predictor_kernel, "concat");
  EXPECT_TRUE(shuffle.stand_in);
  EXPECT_EQ(shuffle.config, (Json{{"HW", 28}, {"CIN1", 29}, {"CIN2", 29}}));
  EXPECT_EQ(with_op(p, "concat-split").config, shuffle.config);
  EXPECT_GT(shuffle.latency_ms, 0);
  EXPECT_DOUBLE_EQ(shuffle.latency_ms, with_op(p, "concat-split").latency_ms);
  EXPECT_EQ(p.stand_ins(), (std::map<std::string, size_t>{{"channelshuffle -> concat", 1}}));

  const Folder own({"conv-bn-relu", "concat", "channelshuffle"}, rules);
  const ModelPrediction q = LatencyPredictor::from_folder(own.path).predict_ir(onnx_to_ir(b.model(), "unit"));
  EXPECT_EQ(with_op(q, "channelshuffle").predictor_kernel, "channelshuffle");
  EXPECT_EQ(with_op(q, "channelshuffle").config, (Json{{"HW", 28}, {"CIN", 58}}));
  EXPECT_TRUE(q.stand_ins().empty());
  EXPECT_EQ(q.kernels.size(), p.kernels.size());
}

// A conv whose BN the exporter folded is conv-relu; on a backend that fuses conv and bn (its rule obeyed)
// conv-bn-relu costs the same, so its regressor is conv-relu's own, not a stand-in. Without the rule it is one.
TEST(Predict, FoldedBnUsesTheBnKernelWhereTheBackendFusesBn) {
  LayerBuilder b("folded");
  b.output(b.relu(b.conv_bn(b.input("x", {1, 8, 16, 16}), 16, 3)));
  const Folder fused({"conv-bn-relu"}, test::rules_json({"BF_conv_bn", "BF_conv_relu"}));
  const ModelPrediction p = LatencyPredictor::from_folder(fused.path).predict_ir(onnx_to_ir(b.model(), "folded"));
  EXPECT_EQ(with_op(p, "conv-relu").kernel, "conv-relu");
  EXPECT_EQ(with_op(p, "conv-relu").predictor_kernel, "conv-bn-relu");
  EXPECT_FALSE(with_op(p, "conv-relu").stand_in);
  EXPECT_NE(with_op(p, "conv-relu").note.find("fuses BN into the conv"), std::string::npos);
  EXPECT_TRUE(p.stand_ins().empty());

  const Folder apart({"conv-bn-relu"}, test::rules_json({"BF_conv_relu"}));
  const ModelPrediction q = LatencyPredictor::from_folder(apart.path).predict_ir(onnx_to_ir(b.model(), "folded"));
  EXPECT_TRUE(with_op(q, "conv-relu").stand_in);
  EXPECT_EQ(q.stand_ins(), (std::map<std::string, size_t>{{"conv-relu -> conv-bn-relu", 1}}));
}

TEST(Predict, PredictorWithoutFusionRulesIsAnError) {
  const Folder folder({"relu"}, nullptr);
  const std::string err = error_of([&] { LatencyPredictor::from_folder(folder.path); });
  EXPECT_NE(err.find("predictor tiny_cpu has no fusion rules"), std::string::npos) << err;
  EXPECT_NE(err.find("nn-meter ruletest"), std::string::npos) << err;
}

TEST(Predict, LoadByNameAndVersionFromTheRegistry) {
  test::TempDir home;
  Registry registry(home.path());
  const Folder f1({"relu"}, test::rules_json({}));
  registry.register_predictor(f1.path / kRegistryMetaFile);
  const std::string err = error_of([&] { LatencyPredictor::load(registry, "nope"); });
  EXPECT_NE(err.find("no registered predictor 'nope'"), std::string::npos) << err;
  EXPECT_NE(err.find("tiny_cpu (version 1.0)"), std::string::npos) << err;
  EXPECT_NE(error_of([&] { LatencyPredictor::load(registry, "tiny_cpu", "2.0"); }).find("version 2.0"), std::string::npos);
  EXPECT_EQ(LatencyPredictor::load(registry, "tiny_cpu").name(), "tiny_cpu");
  EXPECT_EQ(LatencyPredictor::load(registry, "tiny_cpu", "1.0").kernel_predictors().kernels(), std::vector<std::string>{"relu"});
}

}  // namespace
}  // namespace nnmeter
