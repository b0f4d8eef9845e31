#include <gtest/gtest.h>

#include "common/io.h"
#include "nnmeter/backend.h"
#include "nnmeter/registry.h"
#include "nnmeter/workspace.h"
#include "support/test_support.h"
#include "workspace_config/config_schema.h"

namespace nnmeter {
namespace {

using test::TempDir;

TEST(Workspace, TfliteWorkspaceHasNnMeterDefaults) {
  TempDir tmp;
  Registry registry(tmp / "home");
  const fs::path root = create_workspace(registry, tmp / "ws", WorkspaceFlavor::Tflite);
  const Workspace ws = Workspace::load(root);
  EXPECT_EQ(ws.backend_config["REMOTE_MODEL_DIR"], "/mnt/sdcard/tflite_bench");
  EXPECT_EQ(ws.backend_config["BENCHMARK_MODEL_PATH"], "/data/local/tmp/benchmark_model");
  EXPECT_EQ(ws.predictorbuild_config["IMPLEMENT"], "onnx");
  EXPECT_EQ(ws.predictorbuild_config["BATCH_SIZE"], 1);
  EXPECT_EQ(ws.predictorbuild_config["DETAIL"], false);
  EXPECT_EQ(ws.predictorbuild_config["KERNELS"].size(), 16u);
  EXPECT_EQ(ws.predictorbuild_config["KERNELS"]["conv-bn-relu"]["INIT_SAMPLE_NUM"], 10000);
  EXPECT_EQ(ws.predictorbuild_config["KERNELS"]["dwconv-bn-relu"]["INIT_SAMPLE_NUM"], 5000);
  EXPECT_EQ(ws.predictorbuild_config["KERNELS"]["add"]["ERROR_THRESHOLD"], 0.1);
  EXPECT_EQ(ws.ruletest_config["EMP_ALPHA"], 0.5);
  // Not nn-Meter's 28/64/128/3x3: sizes at which both ops of a pair take comparable time on a CPU.
  EXPECT_EQ(ws.ruletest_config["HW"], 112);
  EXPECT_EQ(ws.ruletest_config["CIN"], 4);
  EXPECT_EQ(ws.ruletest_config["COUT"], 32);
  EXPECT_EQ(ws.ruletest_config["KERNEL_SIZE"], 1);
  // nn-Meter's 79 pairs, then ours: SiLU after convs, ShuffleNet's concat → shuffle → split chain and a
  // transformer MLP's Linear → GELU.
  const Json& cases = ws.ruletest_config["BASIC_TESTCASES"];
  ASSERT_EQ(cases.size(), 83u);
  EXPECT_EQ(cases[78], "se_relu");
  EXPECT_EQ(Json(std::vector<Json>(cases.begin() + 79, cases.end())),
            Json::array({"conv_swish", "dwconv_swish", "concat_channelshuffle_split", "linear_gelu"}));
  EXPECT_EQ(ws.ruletest_config["OTHER_TESTCASES"], Json::array({"MON"}));
  EXPECT_EQ(ws.ruletest_config["LAYERS_1D"], Json::array({"fc"}));
  EXPECT_EQ(ws.predictor_build_dir(), root / "predictor_build");
  EXPECT_EQ(ws.fusion_rule_test_dir(), root / "fusion_rule_test");
}

TEST(Workspace, OpenvinoWorkspaceIsOpenvinoVpusConfig) {
  TempDir tmp;
  Registry registry(tmp / "home");
  const Workspace ws = Workspace::load(create_workspace(registry, tmp / "ws", WorkspaceFlavor::Openvino));
  EXPECT_EQ(ws.backend_config["DEVICE"], "MYRIAD");
  EXPECT_EQ(ws.backend_config["BENCHMARK_APP"], "benchmark_app");
  // Accepted as written by the backends it is for.
  for (const char* backend : {"openvino_vpu", "openvino_cpu"})
    EXPECT_NO_THROW(resolve_backend_config(find_backend(registry, backend).params, ws.backend_config, "backend_config.yaml"));
}

TEST(Workspace, TfliteWorkspaceIsAcceptedByBothTfliteBackends) {
  TempDir tmp;
  Registry registry(tmp / "home");
  const Workspace ws = Workspace::load(create_workspace(registry, tmp / "ws", WorkspaceFlavor::Tflite));
  EXPECT_EQ(ws.backend_config["DEVICE_SERIAL"], "");
  EXPECT_EQ(ws.backend_config["KERNEL_PATH"], "");
  for (const char* backend : {"tflite_cpu", "tflite_gpu"})
    EXPECT_NO_THROW(resolve_backend_config(find_backend(registry, backend).params, ws.backend_config, "backend_config.yaml"));
}

TEST(Workspace, PartialKernelSettingsAreCompletedFromDefaults) {
  TempDir tmp;
  Registry registry(tmp / "home");
  const fs::path root = create_workspace(registry, tmp / "ws", WorkspaceFlavor::Tflite);
  io::write_file_atomic(root / "configs" / "predictorbuild_config.yaml",
                        "BATCH_SIZE: 2\nKERNELS:\n  conv-bn-relu:\n    INIT_SAMPLE_NUM: 50\n  mykernel:\n");
  const Workspace ws = Workspace::load(root);
  EXPECT_EQ(ws.predictorbuild_config["BATCH_SIZE"], 2);
  EXPECT_EQ(ws.predictorbuild_config["KERNELS"].size(), 2u);
  EXPECT_EQ(ws.predictorbuild_config["KERNELS"]["conv-bn-relu"]["INIT_SAMPLE_NUM"], 50);
  EXPECT_EQ(ws.predictorbuild_config["KERNELS"]["conv-bn-relu"]["ITERATION"], 3);
  EXPECT_EQ(ws.predictorbuild_config["KERNELS"]["mykernel"]["INIT_SAMPLE_NUM"], 1000);
}

TEST(Workspace, ExistingConfigsAreNeverOverwritten) {
  TempDir tmp;
  Registry registry(tmp / "home");
  const fs::path root = create_workspace(registry, tmp / "ws", WorkspaceFlavor::Tflite);
  io::write_file_atomic(root / "configs" / "ruletest_config.yaml", "HW: 14\n");
  create_workspace(registry, tmp / "ws", WorkspaceFlavor::Tflite);
  EXPECT_EQ(test::read_text(root / "configs" / "ruletest_config.yaml"), "HW: 14\n");
}

TEST(Workspace, MalformedOrMissingFilesAreNamed) {
  TempDir tmp;
  Registry registry(tmp / "home");
  const fs::path root = create_workspace(registry, tmp / "ws", WorkspaceFlavor::Tflite);
  io::write_file_atomic(root / "configs" / "ruletest_config.yaml", "HW: [1, 2\n");
  try {
    Workspace::load(root);
    FAIL() << "malformed yaml accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ruletest_config.yaml is not valid YAML"), std::string::npos) << e.what();
  }
  fs::remove(root / "configs" / "ruletest_config.yaml");
  try {
    Workspace::load(root);
    FAIL() << "missing file accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no configs/ruletest_config.yaml"), std::string::npos) << e.what();
  }
  io::write_file_atomic(root / "configs" / "ruletest_config.yaml", "- just\n- a list\n");
  EXPECT_THROW(Workspace::load(root), Error);
  EXPECT_THROW(Workspace::load(tmp / "nowhere"), Error);
}

TEST(YamlBridge, ScalarsKeepTheirTypes) {
  const Json j = io::yaml_to_json("a: 1\nb: 0.5\nc: TRUE\nd: false\ne:\nf: text\ng: '12'\nh: [1, x]\n", "test");
  EXPECT_TRUE(j["a"].is_number_integer());
  EXPECT_DOUBLE_EQ(j["b"].get<double>(), 0.5);
  EXPECT_EQ(j["c"], true);
  EXPECT_EQ(j["d"], false);
  EXPECT_TRUE(j["e"].is_null());
  EXPECT_EQ(j["f"], "text");
  EXPECT_EQ(j["g"], "12");
  EXPECT_EQ(j["h"], Json::array({1, "x"}));
  EXPECT_EQ(io::yaml_to_json(io::json_to_yaml(j), "round trip"), j);
}

TEST(AtomicWrite, ReplacesContentAndLeavesNoTempFile) {
  TempDir tmp;
  io::write_file_atomic(tmp / "sub" / "f.txt", "one");
  io::write_file_atomic(tmp / "sub" / "f.txt", "two");
  EXPECT_EQ(io::read_file(tmp / "sub" / "f.txt"), "two");
  int files = 0;
  for (const auto& e : fs::directory_iterator(tmp / "sub")) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
  EXPECT_THROW(io::write_file_atomic("/proc/nnmeter-cannot-write/x", "y"), Error);
  EXPECT_THROW(io::read_file(tmp / "missing"), Error);
}

}  // namespace
}  // namespace nnmeter

namespace nnmeter {
namespace {

// The typed configs are what nn-meter reads; the file's Json stays for plugins. Absent keys keep nn-Meter's
// values, bad ones are one line naming the file and the key.
TEST(TypedConfigs, PredictorBuildConfigReadsTheFileOnce) {
  const Json c = Json::parse(R"({"DETAIL": true, "BATCH_SIZE": 4, "PRIOR_ROWS": 0.3, "PRIOR_ROWS_EXCLUDE": ["resnet18"],
      "PRIOR_CONFIG_LIB": "/lib", "INPUT_RESOLUTIONS": [160, 224], "WIDTH_MULTIPLIERS": [0.5, 1], "KERNELS": {"conv-bn-relu": {"INIT_SAMPLE_NUM": 50, "ERROR_THRESHOLD": 0.2},
      "relu": null}})");
  const PredictorBuildConfig p = PredictorBuildConfig::from_json(c);
  EXPECT_TRUE(p.detail);
  EXPECT_EQ(p.batch_size, 4);
  EXPECT_EQ(p.prior_rows, 0.3);
  EXPECT_EQ(p.prior_rows_exclude, (std::set<std::string>{"resnet18"}));
  EXPECT_EQ(p.prior_config_lib, fs::path("/lib"));
  EXPECT_EQ(p.aligned_channels, 0);
  EXPECT_EQ(p.input_resolutions, (std::vector<int64_t>{160, 224}));
  EXPECT_EQ(p.width_multipliers, (std::vector<double>{0.5, 1.0}));
  EXPECT_TRUE(PredictorBuildConfig::from_json(Json::object()).input_resolutions.empty());
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernel("conv-bn-relu").init_sample_num, 50);
  EXPECT_EQ(p.kernel("conv-bn-relu").finegrained_sample_num, 20);
  EXPECT_EQ(p.kernel("conv-bn-relu").error_threshold, 0.2);
  EXPECT_EQ(p.kernel("relu").iteration, 3);
  EXPECT_EQ(p.kernel("not-listed").init_sample_num, 1000);
  EXPECT_EQ(PredictorBuildConfig::from_json(Json::object()).batch_size, 1);

  const std::string bad = test::error_of([] {
    PredictorBuildConfig::from_json(Json::parse(R"({"KERNELS": {"fc": {"ITERATION": 0}}})"), "p.yaml");
  });
  EXPECT_EQ(bad, "p.yaml: KERNELS.fc.ITERATION must be an integer in [1, 100], got 0");
  EXPECT_NE(test::error_of([] { PredictorBuildConfig::from_json(Json{{"KERNELS", 3}}); }).find("KERNELS must be a mapping"),
            std::string::npos);
}

TEST(TypedConfigs, RegressorIsRfOrGbdt) {
  EXPECT_EQ(PredictorBuildConfig::from_json(Json::object()).regressor, RegressorMode::random_forest);
  EXPECT_EQ(PredictorBuildConfig::from_json(Json{{"REGRESSOR", "gbdt"}}).regressor, RegressorMode::gbdt);
  EXPECT_EQ(test::error_of([] { PredictorBuildConfig::from_json(Json{{"REGRESSOR", "xgb"}}, "p.yaml"); }),
            "p.yaml: REGRESSOR must be rf or gbdt, got \"xgb\"");
  EXPECT_EQ(test::error_of([] { check_predictorbuild_config(Json{{"REGRESSOR", 3}, {"KERNELS", Json::object()}}, "p.yaml"); }),
            "p.yaml: REGRESSOR must be a text value, got 3");
}

TEST(TypedConfigs, RuleTestConfigReadsTheFileOnce) {
  const RuleTestConfig r = RuleTestConfig::from_json(
      Json::parse(R"({"HW": 112, "CIN": 4, "COUT": 32, "EMP_ALPHA": 0.25, "BASIC_TESTCASES": ["conv_relu"]})"));
  EXPECT_EQ(r.hw, 112);
  EXPECT_EQ(r.cin, 4);
  EXPECT_EQ(r.cout, 32);
  EXPECT_EQ(r.kernel_size, 3);  // nn-Meter's value where the key is absent
  EXPECT_EQ(r.alpha, 0.25);
  EXPECT_EQ(r.basic, std::vector<std::string>{"conv_relu"});
  EXPECT_TRUE(r.other.empty());
  EXPECT_NE(test::error_of([] { RuleTestConfig::from_json(Json{{"IMPLEMENT", "tensorflow"}}); }).find("set IMPLEMENT: onnx"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { RuleTestConfig::from_json(Json{{"LAYERS_1D", "fc"}}); })
                .find("ruletest_config.yaml: LAYERS_1D must be a list of names"),
            std::string::npos);
}

}  // namespace
}  // namespace nnmeter
