// The presets of `nn-meter create --preset`: each one a config the builder takes as it is, naming only kernels
// and network sets the library has, and never calibrating or sampling on a network that is scored.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/io.h"
#include "nnmeter/backend_config.h"
#include "nnmeter/networks.h"
#include "nnmeter/registry.h"
#include "nnmeter/workspace.h"
#include "support/test_support.h"
#include "workspace_config/config_schema.h"

namespace nnmeter {
namespace {

std::set<std::string> files_of(const std::string& set) {
  std::set<std::string> out;
  for (const auto& n : find_network_set(set).networks) out.insert(n.file_name());
  return out;
}

TEST(Presets, QuickAccurateAndTransformersAreDeclared) {
  std::vector<std::string> names;
  for (const auto& p : workspace_presets()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"quick", "accurate", "transformers"}));
  EXPECT_EQ(find_workspace_preset("accurate").name, "accurate");
  EXPECT_EQ(test::error_of([] { find_workspace_preset("fast"); }),
            "unknown preset 'fast' (presets: quick, accurate, transformers)");
}

TEST(Presets, KernelsAreKnownAndSetsExistAndAreNeverScored) {
  std::set<std::string> kernels;
  for (const auto& k : builtin_kernels()) kernels.insert(k.name);
  // What the accuracy benches and the main job score predictors on.
  std::set<std::string> scored = files_of("evaluation");
  for (const auto& f : files_of("main-job")) scored.insert(f);
  for (const auto& f : files_of(kSealedTestSet)) scored.insert(f);
  for (const auto& p : workspace_presets()) {
    SCOPED_TRACE(p.name);
    const Json config = io::yaml_to_json(p.predictorbuild_yaml, p.name);
    ASSERT_TRUE(config.contains("KERNELS") && config.at("KERNELS").is_object());
    EXPECT_GE(config.at("KERNELS").size(), 12u);
    for (const auto& [kernel, settings] : config.at("KERNELS").items()) {
      EXPECT_TRUE(kernels.count(kernel)) << kernel << " is not a builtin kernel";
      for (const char* key : {"INIT_SAMPLE_NUM", "FINEGRAINED_SAMPLE_NUM", "ITERATION", "ERROR_THRESHOLD"})
        EXPECT_TRUE(settings.contains(key)) << kernel << " leaves " << key << " to nn-Meter's default";
    }
    ASSERT_TRUE(config.contains("CALIBRATION_NETWORKS")) << "every preset calibrates its build";
    for (const char* key : {"SAMPLE_MODELS", "CALIBRATION_NETWORKS"}) {
      if (!config.contains(key)) continue;
      for (const auto& entry : config.at(key)) {
        const std::string name = entry.get<std::string>();
        if (const auto sample = parse_network_sample(name)) {
          for (const auto& n : sample->networks) EXPECT_FALSE(scored.count(n.file_name())) << name << " holds " << n.file_name();
          continue;
        }
        const auto& sets = network_sets();
        if (std::none_of(sets.begin(), sets.end(), [&](const NetworkSet& s) { return s.name == name; })) {
          // A folder of PyTorch exports: the preset says how to write it (the Python side tests that set).
          EXPECT_NE(p.predictorbuild_yaml.find("nn_meter.torch_networks export transformers-calibration <workspace>/" + name),
                    std::string::npos) << name;
          continue;
        }
        for (const auto& f : files_of(name)) EXPECT_FALSE(scored.count(f)) << name << " holds " << f;
      }
    }
    // The loader's own checks, and its typed reading.
    EXPECT_NO_THROW(check_predictorbuild_config(config, p.name));
    EXPECT_EQ(PredictorBuildConfig::from_json(config).kernels.size(), config.at("KERNELS").size());
  }
}

PredictorBuildConfig typed(const std::string& preset) {
  return PredictorBuildConfig::from_json(io::yaml_to_json(find_workspace_preset(preset).predictorbuild_yaml, preset));
}

TEST(Presets, TheirRecipesAreThoseOfTheBenchmarkedRuns) {
  const PredictorBuildConfig quick = typed("quick");
  EXPECT_EQ(quick.kernels.size(), 13u);
  EXPECT_EQ(quick.kernel("gconv-bn-relu").init_sample_num, 80);
  EXPECT_EQ(quick.kernel("conv-bn-relu").init_sample_num, 240);
  EXPECT_EQ(quick.kernel("conv-bn-relu").iteration, 2);
  EXPECT_EQ(quick.prior_rows, 0.3);
  EXPECT_TRUE(quick.prior_rows_exclude.empty()) << "what to leave out depends on what a user evaluates on";
  EXPECT_EQ(quick.calibration_networks, std::vector<fs::path>{"sample:all:2:4"});
  EXPECT_EQ(quick.regressor, RegressorMode::gbdt);

  const PredictorBuildConfig accurate = typed("accurate");
  EXPECT_EQ(accurate.kernels.size(), 20u);
  EXPECT_EQ(accurate.kernel("conv-bn-swish").init_sample_num, 250);
  EXPECT_EQ(accurate.kernel("gconv-bn-relu").init_sample_num, 200);
  EXPECT_EQ(accurate.kernel("channelshuffle").iteration, 1);
  EXPECT_EQ(accurate.prior_rows, 0);
  EXPECT_EQ(accurate.sample_models, std::vector<fs::path>{"calibration-72"});
  EXPECT_EQ(accurate.calibration_networks, std::vector<fs::path>{"calibration-135"});
  EXPECT_EQ(accurate.regressor, RegressorMode::gbdt);

  const PredictorBuildConfig transformers = typed("transformers");
  EXPECT_EQ(transformers.kernels.size(), 15u);
  for (const char* k : {"layernorm", "gelu", "softmax", "linear", "linear-gelu", "matmul", "conv-bn", "dwconv-bn"})
    EXPECT_EQ(transformers.kernels.count(k), 1u) << k;
  EXPECT_EQ(transformers.kernel("linear").init_sample_num, 100);
  EXPECT_EQ(transformers.prior_rows, 0.3);
  EXPECT_EQ(transformers.sample_models, std::vector<fs::path>{"transformer_calibration"});
  EXPECT_EQ(transformers.calibration_networks, std::vector<fs::path>{"transformer_calibration"});
  EXPECT_EQ(transformers.regressor, RegressorMode::random_forest);
}

TEST(Presets, BackendKeysAreTakenByTheInProcessBackends) {
  test::TempDir tmp;
  Registry registry(tmp / "home");
  for (const auto& p : workspace_presets()) {
    const Json keys = io::yaml_to_json(p.backend_yaml, p.name);
    EXPECT_EQ(keys.at("REPEATS"), 5) << p.name;
    for (const char* backend : {"onednn_cpu", "xnnpack_cpu"}) {
      const Json resolved = resolve_backend_config(find_backend(registry, backend).params, keys, p.name);
      for (const auto& [key, value] : keys.items()) EXPECT_EQ(resolved[key], value) << p.name << " " << backend << " " << key;
    }
  }
}

}  // namespace
}  // namespace nnmeter
