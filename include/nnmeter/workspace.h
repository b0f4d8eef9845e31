// Workspaces: a folder with configs/{backend_config,predictorbuild_config,ruletest_config}.yaml, the
// equivalent of nn-Meter's builder_config.
#pragma once

#include <map>
#include <optional>
#include <set>

#include "nnmeter/common.h"
#include "nnmeter/workspace_config.h"

namespace nnmeter {

class Registry;

struct Workspace {
  fs::path root;
  Json backend_config = Json::object();        // raw keys from backend_config.yaml (empty if absent)
  Json predictorbuild_config = Json::object();  // with nn-Meter's defaults filled in
  Json ruletest_config = Json::object();        // with nn-Meter's defaults filled in

  // The two configs above, typed.
  PredictorBuildConfig build_config() const { return PredictorBuildConfig::from_json(predictorbuild_config); }
  RuleTestConfig ruletest() const { return RuleTestConfig::from_json(ruletest_config); }

  fs::path configs_dir() const { return root / "configs"; }
  fs::path predictor_build_dir() const { return root / "predictor_build"; }
  fs::path shards_dir() const { return predictor_build_dir() / "shards"; }  // a sharded build's plans and journals
  fs::path fusion_rule_test_dir() const { return root / "fusion_rule_test"; }

  // builder_config.init(workspace): reads the three yamls; a missing predictorbuild/ruletest file or a
  // malformed one throws Error naming the file.
  static Workspace load(const fs::path& root);
};

// The default predictorbuild_config.yaml and ruletest_config.yaml texts (IMPLEMENT: onnx).
std::string default_predictorbuild_config_yaml();
std::string default_ruletest_config_yaml();

// A preset of `nn-meter create --preset NAME`: a whole recipe (kernels, sample counts, calibration, the
// measurement's settings) taken from a benchmarked run, so that a workspace starts from numbers measured on
// this project's machines rather than nn-Meter's 10000 samples per kernel.
struct WorkspacePreset {
  std::string name;
  std::string description;          // one line: what it is for and how long its build measures
  std::string backend_yaml;         // backend_config.yaml keys: the protocol's and the in-process backends'
  std::string predictorbuild_yaml;  // a whole predictorbuild_config.yaml, commented
  // A command to run before `build`, "{workspace}" standing for the workspace folder; empty: none. The
  // transformers preset samples PyTorch exports, which nn-meter cannot write without torch.
  std::string before_build;
  // {"name", "description", "backend_config", "predictorbuild_config"[, "before_build"]} with both configs as
  // mappings.
  Json to_json() const;
};

const std::vector<WorkspacePreset>& workspace_presets();
// Throws Error naming the presets when `name` is none of them.
const WorkspacePreset& find_workspace_preset(const std::string& name);

enum class WorkspaceFlavor { Tflite, Openvino, Customized, Builtin };

// `nn-meter create`: writes DIR/configs/ with the three yamls. `backend` names the backend for
// Customized (a registered plugin: its defaultConfigFile is copied) and Builtin flavors. Throws Error if
// DIR is an existing file or the backend is unknown. Returns the absolute workspace path.
// With a `preset`, the preset's files go to configs/presets/NAME/ and the workspace's backend_config.yaml and
// predictorbuild_config.yaml only inherit them (`_base_`): what a user writes there overrides the preset. Of
// the preset's backend keys, those the backend does not declare are left out. Existing files are never
// overwritten.
fs::path create_workspace(const Registry& registry, const fs::path& dir, WorkspaceFlavor flavor,
                          const std::string& backend = "", const std::string& preset = "");

}  // namespace nnmeter
