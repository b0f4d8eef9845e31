// `nn-meter create --preset` through the real binary: the preset's files as `_base_` files, the workspace's own
// configs inheriting them, and what the builder's loader reads from the result.
#include <gtest/gtest.h>

#include "common/io.h"
#include "nnmeter/backend_config.h"
#include "nnmeter/registry.h"
#include "nnmeter/workspace.h"
#include "support/cli_expect.h"
#include "support/test_support.h"

namespace nnmeter::test {
namespace {

Json preset_config(const std::string& name, bool backend) {
  const WorkspacePreset& p = find_workspace_preset(name);
  return io::yaml_to_json(backend ? p.backend_yaml : p.predictorbuild_yaml, name);
}

// `nn-meter create --workspace TMP/ws --backend BACKEND --preset PRESET`; the workspace's path.
fs::path create_with_preset(const TempDir& tmp, const std::string& preset, const std::string& backend = "onednn_cpu") {
  const fs::path ws = tmp / "ws";
  const CliResult r = run_cli({"create", "--workspace", ws.string(), "--backend", backend, "--preset", preset}, tmp / "home");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Its configs inherit the preset " + preset)) << r.out;
  EXPECT_FALSE(contains(r.out + r.err, "does not inherit")) << r.out << r.err;
  return ws;
}

TEST(CreatePresets, EachPresetResolvesThroughBaseToItsValues) {
  for (const std::string preset : {"quick", "accurate", "transformers"}) {
    SCOPED_TRACE(preset);
    TempDir tmp;
    const fs::path ws = create_with_preset(tmp, preset);
    const fs::path configs = ws / "configs";
    EXPECT_TRUE(fs::exists(configs / "presets" / preset / "backend_config.yaml"));
    EXPECT_TRUE(fs::exists(configs / "presets" / preset / "predictorbuild_config.yaml"));
    EXPECT_TRUE(contains(read_text(configs / "predictorbuild_config.yaml"),
                         "_base_: presets/" + preset + "/predictorbuild_config.yaml"));
    EXPECT_TRUE(contains(read_text(configs / "backend_config.yaml"), "_base_: presets/" + preset + "/backend_config.yaml"));

    // What the builder reads: every key of the preset, through _base_.
    Workspace loaded = Workspace::load(ws);
    Json expected = preset_config(preset, false);
    for (const auto& [key, value] : expected.items()) EXPECT_EQ(loaded.predictorbuild_config[key], value) << key;
    EXPECT_EQ(loaded.predictorbuild_config["KERNELS"].size(), expected["KERNELS"].size());
    EXPECT_EQ(loaded.backend_config, preset_config(preset, true));
    Registry registry(tmp / "home");
    EXPECT_NO_THROW(resolve_backend_config(find_backend(registry, "onednn_cpu").params, loaded.backend_config, "ws"));
    EXPECT_EQ(loaded.build_config().regressor, preset == "transformers" ? RegressorMode::random_forest : RegressorMode::gbdt);
    EXPECT_EQ(loaded.ruletest_config["HW"], 112) << "the rule test keeps nn-meter's defaults";
  }
}

// The transformers preset samples PyTorch exports, which nn-meter cannot write: create says how, with the
// workspace's own folder, and the other presets say nothing of the kind.
TEST(CreatePresets, ThePresetsStepBeforeBuildIsPrintedWithTheWorkspaceFolder) {
  TempDir tmp;
  const fs::path ws = tmp / "ws";
  const std::string step =
      "python3 -m nn_meter.torch_networks export transformers-calibration " + (ws / "transformer_calibration").string();
  const CliResult r = run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu", "--preset", "transformers"},
                              tmp / "home");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Before nn-meter build, write the networks it samples: " + step)) << r.out;
  const CliResult j = run_cli({"--json", "create", "--workspace", (tmp / "ws2").string(), "--backend", "onednn_cpu",
                               "--preset", "transformers"},
                              tmp / "home");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(Json::parse(j.out)["before_build"],
            "python3 -m nn_meter.torch_networks export transformers-calibration " +
                (tmp / "ws2" / "transformer_calibration").string());
  const CliResult quick =
      run_cli({"create", "--workspace", (tmp / "ws3").string(), "--backend", "onednn_cpu", "--preset", "quick"}, tmp / "home");
  EXPECT_FALSE(contains(quick.out, "Before nn-meter build")) << quick.out;
}

TEST(CreatePresets, WithoutAPresetTheDefaultsAreWrittenAsBefore) {
  TempDir tmp;
  const fs::path ws = tmp / "ws";
  ASSERT_EQ(run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home").exit_code, 0);
  EXPECT_FALSE(fs::exists(ws / "configs" / "presets"));
  EXPECT_EQ(read_text(ws / "configs" / "predictorbuild_config.yaml"), default_predictorbuild_config_yaml());
  EXPECT_EQ(Workspace::load(ws).predictorbuild_config["KERNELS"]["conv-bn-relu"]["INIT_SAMPLE_NUM"], 10000);
}

TEST(CreatePresets, AnOverrideInTheWorkspaceFileWins) {
  TempDir tmp;
  const fs::path ws = create_with_preset(tmp, "quick");
  const fs::path configs = ws / "configs";
  write_text(configs / "predictorbuild_config.yaml",
             read_text(configs / "predictorbuild_config.yaml") +
                 "PRIOR_ROWS_EXCLUDE: [resnet18]\nKERNELS:\n  conv-bn-relu: {INIT_SAMPLE_NUM: 7}\n");
  write_text(configs / "backend_config.yaml", read_text(configs / "backend_config.yaml") + "REPEATS: 3\n");
  Workspace loaded = Workspace::load(ws);
  Json kernels = loaded.predictorbuild_config["KERNELS"];
  EXPECT_EQ(kernels["conv-bn-relu"]["INIT_SAMPLE_NUM"], 7);
  EXPECT_EQ(kernels["conv-bn-relu"]["FINEGRAINED_SAMPLE_NUM"], 5) << "the rest of the kernel's entry is the preset's";
  EXPECT_EQ(kernels["dwconv-bn-relu"]["INIT_SAMPLE_NUM"], 80);
  EXPECT_EQ(kernels.size(), 13u);
  EXPECT_EQ(loaded.predictorbuild_config["PRIOR_ROWS_EXCLUDE"], Json::array({"resnet18"}));
  EXPECT_EQ(loaded.predictorbuild_config["CALIBRATION_NETWORKS"], Json::array({"sample:all:2:4"}));
  EXPECT_EQ(loaded.backend_config["REPEATS"], 3);
  EXPECT_EQ(loaded.backend_config["NUM_RUNS"], 10);

  // Creating again keeps the edited files.
  const std::string edited = read_text(configs / "predictorbuild_config.yaml");
  create_with_preset(tmp, "quick");
  EXPECT_EQ(read_text(configs / "predictorbuild_config.yaml"), edited);
}

TEST(CreatePresets, APresetOverAWorkspaceWithoutOneKeepsItsFilesAndSaysSo) {
  TempDir tmp;
  const fs::path ws = tmp / "ws";
  ASSERT_EQ(run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home").exit_code, 0);
  const CliResult r =
      run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu", "--preset", "quick"}, tmp / "home");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out + r.err, "predictorbuild_config.yaml, which does not inherit the preset quick")) << r.out << r.err;
  EXPECT_EQ(read_text(ws / "configs" / "predictorbuild_config.yaml"), default_predictorbuild_config_yaml());
  EXPECT_TRUE(fs::exists(ws / "configs" / "presets" / "quick" / "predictorbuild_config.yaml"));
}

TEST(CreatePresets, AnUnknownPresetExits2NamingThePresetsAndWritesNothing) {
  TempDir tmp;
  const fs::path ws = tmp / "ws";
  const CliResult r =
      run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu", "--preset", "fastest"}, tmp / "home");
  expect_one_line_error(r, "fastest");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "quick") && contains(r.err, "accurate")) << r.err;
  EXPECT_FALSE(fs::exists(ws));
  // The library refuses it as well, before writing.
  Registry registry(tmp / "home");
  EXPECT_EQ(error_of([&] { create_workspace(registry, ws, WorkspaceFlavor::Builtin, "onednn_cpu", "fastest"); }),
            "unknown preset 'fastest' (presets: quick, accurate, transformers)");
  EXPECT_FALSE(fs::exists(ws));
}

TEST(CreatePresets, ListPresetsNamesThemAndGivesTheirConfigsAsJson) {
  TempDir tmp;
  const CliResult text = run_cli({"create", "--list-presets"}, tmp / "home");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "  quick ") && contains(text.out, "  accurate ") && contains(text.out, "  transformers "))
      << text.out;
  const CliResult json = run_cli({"--json", "create", "--list-presets"}, tmp / "home");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  Json presets = Json::parse(json.out);
  ASSERT_EQ(presets.size(), 3u);
  EXPECT_EQ(presets[1]["name"], "accurate");
  EXPECT_EQ(presets[1]["predictorbuild_config"], preset_config("accurate", false));
  EXPECT_EQ(presets[1]["backend_config"]["DRIFT_PROBE_EVERY"], 500);
  EXPECT_TRUE(contains(run_cli({"create", "--help"}, tmp / "home").out, "--preset"));
}

TEST(CreatePresets, OtherBackendsGetOnlyThePresetKeysTheyTake) {
  TempDir tmp;
  Registry registry(tmp / "home");
  // xnnpack_cpu measures in process as onednn_cpu does: every key.
  EXPECT_EQ(Workspace::load(create_with_preset(tmp, "accurate", "xnnpack_cpu")).backend_config,
            preset_config("accurate", true));
  // benchmark_model has no rounds or minimum time; both TFLite backends take what is left.
  const fs::path tfl = tmp / "tfl";
  const CliResult r = run_cli({"create", "--tflite-workspace", tfl.string(), "--preset", "quick"}, tmp / "home");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json tflite = Workspace::load(tfl).backend_config;
  EXPECT_FALSE(tflite.contains("NUM_ROUNDS"));
  EXPECT_FALSE(tflite.contains("MIN_TIME_MS"));
  EXPECT_EQ(tflite["REPEATS"], 5);
  EXPECT_EQ(tflite["NUM_RUNS"], 10);
  EXPECT_TRUE(contains(read_text(tfl / "configs" / "presets" / "quick" / "backend_config.yaml"),
                       "# Left out: MIN_TIME_MS, NUM_ROUNDS (tflite does not take them)."));
  for (const char* backend : {"tflite_cpu", "tflite_gpu"})
    EXPECT_NO_THROW(resolve_backend_config(find_backend(registry, backend).params, tflite, "tfl")) << backend;
}

TEST(CreatePresets, ABadRegressorInTheConfigFailsTheBuildBeforeAnyWork) {
  TempDir tmp;
  const fs::path ws = create_with_preset(tmp, "quick");
  write_text(ws / "configs" / "predictorbuild_config.yaml",
             read_text(ws / "configs" / "predictorbuild_config.yaml") + "REGRESSOR: xgboost\n");
  const CliResult r = run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home");
  expect_one_line_error(r, "predictorbuild_config.yaml: REGRESSOR must be rf or gbdt, got \"xgboost\"");
  EXPECT_FALSE(fs::exists(ws / "predictor_build"));
}

}  // namespace
}  // namespace nnmeter::test
