// nn-meter predict / get_ir through the real binary: nn-Meter's result lines, the breakdown, --json, the IR
// round trip, and every bad input a user tried (one line on stderr, non-zero exit, no partial files).
#include <fmt/format.h>

#include "networks/architectures.h"
#include "prediction/prediction_fixtures.h"

namespace nnmeter::test {
namespace {

class PredictCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new TempDir();
    const fs::path meta = make_predictor_folder(*root_ / "tiny_cpu", {"conv-bn-relu", "dwconv-bn-relu", "fc",
                                                                      "global-avgpool", "add", "relu"},
                                                rules_json({"BF_conv_bn", "BF_conv_relu", "BF_dwconv_bn", "BF_dwconv_relu"}));
    make_predictor_folder(*root_ / "no_rules", {"relu"}, nullptr, "no_rules");
    const CliResult r = run_cli({"register", "--predictor", meta.string()}, home());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(run_cli({"register", "--predictor", (*root_ / "no_rules" / "meta.yaml").string()}, home()).exit_code, 0);
    write_text(models() / "a_mbv2.onnx", networks::build("mobilenet_v2", 64).model.SerializeAsString());
    write_text(models() / "b_resnet18.onnx", networks::build("resnet18", 64).model.SerializeAsString());
  }
  static void TearDownTestSuite() { delete root_; }
  static fs::path home() { return *root_ / "home"; }
  static fs::path models() {
    fs::create_directories(*root_ / "models");
    return *root_ / "models";
  }

  // Non-zero exit, exactly one "(nn-Meter) " line on stderr containing `expected`.
  static void expect_refused(const std::vector<std::string>& args, const std::string& expected) {
    const CliResult r = run_cli(args, home());
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_TRUE(contains(r.err, expected)) << "stderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("(nn-Meter) ", 0), 0u) << r.err;
  }

  static double latency_in(const std::string& out, const std::string& model) {
    const std::string key = "[RESULT] predict latency for " + model + ": ";
    const size_t at = out.find(key);
    if (at == std::string::npos) throw std::runtime_error("no result line for " + model + " in: " + out);
    return std::stod(out.substr(at + key.size()));
  }

  static TempDir* root_;
  TempDir work;
};
TempDir* PredictCli::root_ = nullptr;

TEST_F(PredictCli, PrintsNnMeterResultLinesForAFolder) {
  const CliResult r = run_cli({"predict", "--predictor", "tiny_cpu", "--onnx", models().string()}, home());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("(nn-Meter) [RESULT]"), r.out.find("(nn-Meter) [RESULT] predict latency for a_mbv2.onnx: ")) << r.out;
  // The tiny predictor has no relu6 conv: MobileNetV2's (BN folded, as exported) are predicted by conv-bn-relu,
  // and predict says so.
  EXPECT_TRUE(contains(r.out, "kernels are predicted by another kernel's regressor")) << r.out;
  EXPECT_TRUE(contains(r.out, "conv-relu6 -> conv-bn-relu x")) << r.out;
  EXPECT_LT(r.out.find("a_mbv2.onnx"), r.out.find("b_resnet18.onnx"));  // sorted
  EXPECT_GT(latency_in(r.out, "b_resnet18.onnx"), 0);
  // No held-out errors in the folder: no interval, and predict says why instead of making one up.
  EXPECT_TRUE(contains(r.out, "no 90 % interval on these predictions: predictor tiny_cpu has no errors on held-out "
                              "families")) << r.out;
  EXPECT_FALSE(contains(r.out, "90 % interval:")) << r.out;
  const CliResult alias = run_cli({"lat_pred", "--predictor", "tiny_cpu", "--onnx", (models() / "a_mbv2.onnx").string()}, home());
  ASSERT_EQ(alias.exit_code, 0) << alias.err;
  EXPECT_EQ(latency_in(alias.out, "a_mbv2.onnx"), latency_in(r.out, "a_mbv2.onnx"));
}

// generalization.json's interval comes with every prediction: on the result's own line below it and in --json; a
// malformed one is a one-line error naming the file.
TEST_F(PredictCli, HeldOutErrorsGiveEveryPredictionAnInterval) {
  const fs::path folder = work / "with_interval";
  make_predictor_folder(folder, {"conv-bn-relu", "add", "relu", "fc", "global-avgpool"}, rules_json({"BF_conv_bn"}),
                        "with_interval");
  const fs::path home = work / "home";
  ASSERT_EQ(run_cli({"register", "--predictor", (folder / "meta.yaml").string()}, home).exit_code, 0);
  const std::string model = (models() / "b_resnet18.onnx").string();
  write_text(folder / kGeneralizationFile,
             R"({"interval": {"coverage": 0.9, "low": 0.8, "high": 1.25, "networks": 23, "level_spread": 0.01}})");
  const CliResult r = run_cli({"predict", "--predictor", "with_interval", "--onnx", model}, home);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double ms = latency_in(r.out, "b_resnet18.onnx");
  EXPECT_TRUE(contains(r.out, fmt::format("90 % interval: {:.4g} to {:.4g} ms (the predictor's errors on 23 networks",
                                          ms * 0.8, ms * 1.25))) << r.out;
  EXPECT_FALSE(contains(r.out, "no 90 % interval")) << r.out;
  const CliResult j = run_cli({"predict", "--predictor", "with_interval", "--onnx", model, "--json"}, home);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const Json p = Json::parse(j.out).begin().value();
  ASSERT_TRUE(p["interval_ms"].is_array()) << j.out;
  EXPECT_DOUBLE_EQ(p["interval_ms"][0].get<double>(), p["latency_ms"].get<double>() * 0.8);
  EXPECT_DOUBLE_EQ(p["interval_ms"][1].get<double>(), p["latency_ms"].get<double>() * 1.25);
  EXPECT_EQ(p["interval"]["networks"], 23);
  write_text(folder / kGeneralizationFile, R"({"interval": {"low": 1.3, "high": 1.1, "networks": 23, "level_spread": 0}})");
  const CliResult bad = run_cli({"predict", "--predictor", "with_interval", "--onnx", model}, home);
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(contains(bad.err, "generalization.json: interval [1.3, 1.1] is not 0 < low <= high")) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST_F(PredictCli, VerboseShowsTheBreakdownAndJsonIsOneDocument) {
  const std::string model = (models() / "b_resnet18.onnx").string();
  const CliResult v = run_cli({"predict", "--predictor", "tiny_cpu", "--onnx", model, "-v"}, home());
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_TRUE(contains(v.out, "conv-relu#0")) << v.out;
  EXPECT_TRUE(contains(v.out, "features [")) << v.out;
  const CliResult j = run_cli({"predict", "--predictor", "tiny_cpu", "--onnx", model, "--json"}, home());
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const Json doc = Json::parse(j.out);
  const Json& m = doc.at("b_resnet18.onnx");
  double sum = 0;
  for (const auto& k : m["kernels"]) sum += k["latency_ms"].get<double>();
  EXPECT_NEAR(m["latency_ms"].get<double>(), sum, 1e-9 * sum);
  EXPECT_NEAR(m["latency_ms"].get<double>(), latency_in(v.out, "b_resnet18.onnx"), 1e-6 * sum);
}

TEST_F(PredictCli, GetIrRoundTripGivesTheSamePrediction) {
  const fs::path model = work / "m.onnx";
  fs::copy_file(models() / "a_mbv2.onnx", model);
  const CliResult g = run_cli({"get_ir", "--onnx", model.string()}, home());
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const fs::path ir = work / "m_onnx_ir.json";
  EXPECT_TRUE(contains(g.out, fs::absolute(ir).string())) << g.out;
  const std::string text = read_text(ir);
  EXPECT_TRUE(contains(text, "\n    \"")) << "indent 4";
  EXPECT_TRUE(contains(text, "[\n                    1,\n                    64,\n                    64,\n                    3\n"))
      << "the input placeholder in NHWC";
  const CliResult named = run_cli({"get_ir", "--onnx", model.string(), "-o", (work / "named").string()}, home());
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(read_text(work / "named.json"), text);

  const CliResult a = run_cli({"predict", "--predictor", "tiny_cpu", "--onnx", model.string()}, home());
  const CliResult b = run_cli({"predict", "--predictor", "tiny_cpu", "--nn-meter-ir", ir.string()}, home());
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(latency_in(a.out, "m.onnx"), latency_in(b.out, "m_onnx_ir.json"));
}

TEST_F(PredictCli, DynamicShapesNeedInputShape) {
  auto m = networks::build("resnet18", 64).model;
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  const fs::path file = work / "dyn.onnx";
  write_text(file, m.SerializeAsString());
  expect_refused({"predict", "--predictor", "tiny_cpu", "--onnx", file.string()}, "--input-shape input:");
  expect_refused({"get_ir", "--onnx", file.string()}, "--input-shape input:");
  EXPECT_FALSE(fs::exists(work / "dyn_onnx_ir.json"));
  const CliResult ok = run_cli({"predict", "--predictor", "tiny_cpu", "--onnx", file.string(), "--input-shape",
                                "input:1x3x64x64"}, home());
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const CliResult ref = run_cli({"predict", "--predictor", "tiny_cpu", "--onnx", (models() / "b_resnet18.onnx").string()}, home());
  EXPECT_EQ(latency_in(ok.out, "dyn.onnx"), latency_in(ref.out, "b_resnet18.onnx"));
  expect_refused({"predict", "--predictor", "tiny_cpu", "--onnx", file.string(), "--input-shape", "input:1x3"},
                 "has a 2-D window but its input 'input' has rank 2 (expected 4)");
}

TEST_F(PredictCli, BadInputsAreOneLineErrors) {
  write_text(work / "junk.onnx", "not a model at all");
  expect_refused({"predict", "--predictor", "tiny_cpu", "--onnx", (work / "junk.onnx").string()}, "is not an ONNX model");
  expect_refused({"get_ir", "--onnx", (work / "junk.onnx").string(), "-o", (work / "out.json").string()},
                 "is not an ONNX model");
  EXPECT_FALSE(fs::exists(work / "out.json"));
  const std::string model = (models() / "a_mbv2.onnx").string();
  expect_refused({"predict", "--predictor", "ghost", "--onnx", model}, "available: ");
  expect_refused({"predict", "--predictor", "tiny_cpu", "--predictor-version", "9.9", "--onnx", model},
                 "no registered predictor 'tiny_cpu' version 9.9");
  expect_refused({"predict", "--predictor", "no_rules", "--onnx", model}, "predictor no_rules has no fusion rules");
  expect_refused({"predict", "--predictor", "tiny_cpu", "--tensorflow", "m.pb"}, "export the model to ONNX first");
  expect_refused({"predict", "--predictor", "tiny_cpu", "--torchvision", "resnet18"}, "export the model to ONNX first");
  expect_refused({"get_ir", "--tensorflow", "m.pb"}, "export the model to ONNX first");
  expect_refused({"predict", "--predictor", "tiny_cpu", "--onnx", (work / "none.onnx").string()}, "no such file");
  fs::create_directories(work / "empty");
  expect_refused({"predict", "--predictor", "tiny_cpu", "--onnx", (work / "empty").string()}, "has no *.onnx files");
  expect_refused({"predict", "--predictor", "tiny_cpu"}, "exactly one of --onnx");
  write_text(work / "bad.json", "{\"n\": 3}");
  expect_refused({"predict", "--predictor", "tiny_cpu", "--nn-meter-ir", (work / "bad.json").string()}, "not an nn-Meter IR");
}

// Issue 15: a zero stride killed get_ir/predict with SIGFPE inside ONNX's shape inference, and an empty
// graph was predicted as 0 ms. tests/prediction/onnx_hardening_test.cpp has every class; these go through
// the real binary, whose exit shows there was no signal.
TEST_F(PredictCli, HostileModelsAreOneLineErrors) {
  networks::LayerBuilder b("hostile");
  b.output(b.maxpool(b.relu(b.conv(b.input("x", {1, 8, 16, 16}), 8, 3)), 2, 2));
  onnx::ModelProto zero_stride = b.model(), future = b.model(), empty = b.model();
  for (auto& n : *zero_stride.mutable_graph()->mutable_node())
    for (auto& a : *n.mutable_attribute())
      if (a.name() == "strides") a.set_ints(0, 0);
  future.mutable_opset_import(0)->set_version(99);
  empty.mutable_graph()->clear_node();
  const std::vector<std::pair<onnx::ModelProto, std::string>> cases = {
      {zero_stride, "has strides [0,1]; each must be from 1 to 2147483647"},
      {future, "uses ONNX opset 99; nn-meter reads opsets 1 to 17"},
      {empty, "has an empty graph"}};
  for (const auto& [model, expected] : cases) {
    const fs::path file = work / "hostile.onnx";
    write_text(file, model.SerializeAsString());
    expect_refused({"predict", "--predictor", "tiny_cpu", "--onnx", file.string()}, expected);
    expect_refused({"get_ir", "--onnx", file.string(), "-o", (work / "ir.json").string()}, expected);
    EXPECT_FALSE(fs::exists(work / "ir.json"));
  }
}

// A model's names are bytes nn-meter may not trust: text that is not UTF-8 (JSON cannot hold it) is refused with one
// line naming what and where, in every form of predict and get_ir; a file name of such bytes is only a name.
TEST_F(PredictCli, NamesThatAreNotUtf8AreOneLineErrorsOrReplaced) {
  const std::string bad = std::string("relu") + static_cast<char>(0xff);
  networks::LayerBuilder b("names");
  b.output(b.relu(b.conv(b.input("x", {1, 8, 16, 16}), 8, 3)));
  onnx::ModelProto node = b.model(), op_attr = b.model(), input = b.model();
  node.mutable_graph()->mutable_node(1)->set_name(bad);
  op_attr.mutable_graph()->mutable_node(0)->mutable_attribute(0)->set_name(bad);
  input.mutable_graph()->mutable_input(0)->set_name(bad);
  input.mutable_graph()->mutable_node(0)->set_input(0, bad);
  const std::vector<std::pair<onnx::ModelProto, std::string>> cases = {
      {node, "node name \"relu\ufffd\" is not UTF-8 text"},
      {op_attr, "attribute name \"relu\ufffd\" is not UTF-8 text"},
      {input, "tensor name \"relu\ufffd\" is not UTF-8 text"}};
  for (const auto& [model, expected] : cases) {
    const fs::path file = work / "names.onnx";
    write_text(file, model.SerializeAsString());
    for (const auto& form : std::vector<std::vector<std::string>>{{}, {"-v"}, {"--json"}}) {
      std::vector<std::string> args = form;
      for (const std::string a : {"predict", "--predictor", "tiny_cpu", "--onnx"}) args.push_back(a);
      args.push_back(file.string());
      expect_refused(args, expected);
    }
    expect_refused({"get_ir", "--onnx", file.string(), "-o", (work / "ir.json").string()}, expected);
    EXPECT_FALSE(fs::exists(work / "ir.json"));
  }
  const fs::path odd_file = work / (bad + ".onnx");
  write_text(odd_file, b.model().SerializeAsString());
  const CliResult text = run_cli({"predict", "--predictor", "tiny_cpu", "--onnx", odd_file.string()}, home());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_GT(latency_in(text.out, bad + ".onnx"), 0);
  const CliResult json = run_cli({"--json", "predict", "--predictor", "tiny_cpu", "--onnx", odd_file.string()}, home());
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(contains(Json::parse(json.out).dump(), "relu\ufffd.onnx")) << json.out;
}

TEST_F(PredictCli, UncoveredOpsWarnButStillAnswer) {
  networks::LayerBuilder b("odd");
  const auto x = b.relu(b.input("x", {1, 8, 4, 4}));
  b.output(b.node("DepthToSpace", {x}, {1, 2, 8, 8}, {networks::attr("blocksize", int64_t{2})}));
  write_text(work / "odd.onnx", b.model().SerializeAsString());
  const CliResult r = run_cli({"predict", "--predictor", "tiny_cpu", "--onnx", (work / "odd.onnx").string()}, home());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(latency_in(r.out, "odd.onnx"), 0);
  EXPECT_TRUE(contains(r.out + r.err, "1 of 2 ops (50.0%) have no predictor")) << r.out << r.err;
  EXPECT_TRUE(contains(r.out + r.err, "DepthToSpace x1")) << r.out << r.err;
}

}  // namespace
}  // namespace nnmeter::test
