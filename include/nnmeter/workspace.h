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
  fs::path fusion_rule_test_dir() const { return root / "fusion_rule_test"; }

  // builder_config.init(workspace): reads the three yamls; a missing predictorbuild/ruletest file or a
  // malformed one throws Error naming the file.
  static Workspace load(const fs::path& root);
};

// The default predictorbuild_config.yaml and ruletest_config.yaml texts (IMPLEMENT: onnx).
std::string default_predictorbuild_config_yaml();
std::string default_ruletest_config_yaml();

enum class WorkspaceFlavor { Tflite, Openvino, Customized, Builtin };

// `nn-meter create`: writes DIR/configs/ with the three yamls. `backend` names the backend for
// Customized (a registered plugin: its defaultConfigFile is copied) and Builtin flavors. Throws Error if
// DIR is an existing file or the backend is unknown. Returns the absolute workspace path.
fs::path create_workspace(const Registry& registry, const fs::path& dir, WorkspaceFlavor flavor,
                          const std::string& backend = "");

}  // namespace nnmeter
