// nn-meter create / connect: workspaces and the connection test of a backend.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "cli/cli.h"
#include "cli/output.h"
#include "nnmeter/backend.h"
#include "nnmeter/workspace.h"
#include "registry/plugin_probe.h"

namespace nnmeter::cli {

namespace {

struct CreateArgs {
  std::string tflite, openvino, customized, builtin, backend, preset;
  bool list_presets = false;
};

void list_presets(const Context& ctx) {
  if (ctx.json) {
    Json presets = Json::array();
    for (const auto& p : workspace_presets()) presets.push_back(p.to_json());
    std::cout << json_text(presets) << std::endl;
    return;
  }
  print_line("Presets (nn-meter create ... --preset NAME; docs/config.md):");
  for (const auto& p : workspace_presets()) print_line(fmt::format("  {:<12} {}", p.name, p.description));
}

void create(Context& ctx, const CreateArgs& a) {
  if (a.list_presets) {
    list_presets(ctx);
    return;
  }
  WorkspaceFlavor flavor;
  std::string dir, platform;
  if (!a.tflite.empty()) {
    flavor = WorkspaceFlavor::Tflite, dir = a.tflite, platform = "tflite";
  } else if (!a.openvino.empty()) {
    flavor = WorkspaceFlavor::Openvino, dir = a.openvino, platform = "openvino";
  } else if (!a.customized.empty()) {
    flavor = WorkspaceFlavor::Customized, dir = a.customized, platform = "customized";
  } else if (!a.builtin.empty()) {
    flavor = WorkspaceFlavor::Builtin, dir = a.builtin, platform = a.backend;
  } else {
    throw UsageError("give one of --tflite-workspace, --openvino-workspace, --customized-workspace or --workspace "
                "(see nn-meter create --help)");
  }
  const fs::path root = create_workspace(ctx.registry, dir, flavor, a.backend, a.preset);
  std::string line = fmt::format("Workspace {} for {} platform has been created. Users could edit experiment config in {}/.",
                                 root.string(), platform, (root / "configs").string());
  Json json = {{"workspace", root.string()}, {"platform", platform}, {"configs", (root / "configs").string()}};
  if (!a.preset.empty()) {
    line += fmt::format(" Its configs inherit the preset {} (configs/presets/{}/).", a.preset, a.preset);
    json["preset"] = a.preset;
    if (std::string step = find_workspace_preset(a.preset).before_build; !step.empty()) {
      for (size_t at; (at = step.find("{workspace}")) != std::string::npos;) step.replace(at, 11, root.string());
      line += " Before nn-meter build, write the networks it samples: " + step;
      json["before_build"] = step;
    }
  }
  report(ctx, line, json);
}

void connect(Context& ctx, const std::string& backend_name, const std::string& workspace) {
  const Workspace ws = Workspace::load(workspace);
  const std::string message = test_connection_isolated(ctx.registry, backend_name, ws.backend_config,
                                                       (ws.configs_dir() / "backend_config.yaml").string());
  // The backend's own words, unprefixed, as nn-Meter prints them.
  if (ctx.json) {
    std::cout << json_text(Json{{"backend", backend_name}, {"message", message}}) << std::endl;
  } else {
    std::cout << message << std::endl;
  }
}

}  // namespace

void add_workspace_commands(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<CreateArgs>();
  CLI::App* create_cmd = app.add_subcommand("create", "create a workspace for nn-Meter builder");
  std::vector<CLI::Option*> where = {
      create_cmd->add_option("--tflite-workspace", args->tflite, "path to place a tflite workspace for nn-Meter builder"),
      create_cmd->add_option("--openvino-workspace", args->openvino,
                             "path to place a openvino workspace for nn-Meter builder"),
      create_cmd->add_option("--customized-workspace", args->customized,
                             "path to place a customized workspace for nn-Meter builder. A customized backend should "
                             "be register first (refer to `nn-meter register --h` for more help)."),
      create_cmd->add_option("--workspace", args->builtin,
                             "path to place a workspace for a builtin backend named by --backend")};
  for (auto* a : where)
    for (auto* b : where)
      if (a != b) a->excludes(b);
  create_cmd->add_option("--backend", args->backend, "the backend name for registered backend");
  std::vector<std::string> presets;
  for (const auto& p : workspace_presets()) presets.push_back(p.name);
  // An unknown name fails while parsing, before anything is written: one line naming the presets, exit 2.
  create_cmd
      ->add_option("--preset", args->preset,
                   fmt::format("start from a preset's configs, {}; the workspace's own configs then only override "
                               "it (see --list-presets)",
                               fmt::join(presets, " or ")))
      ->check(CLI::IsMember(presets));
  create_cmd->add_flag("--list-presets", args->list_presets, "list the presets (with --json: their configs) and exit");
  create_cmd->callback([&ctx, args] { create(ctx, *args); });

  auto backend = std::make_shared<std::string>();
  auto workspace = std::make_shared<std::string>();
  CLI::App* connect_cmd = app.add_subcommand("connect", "connect to backend");
  connect_cmd->add_option("--backend", *backend, "the backend name to test the connection")->required();
  connect_cmd->add_option("--workspace", *workspace, "path to the workspace whose backend_config.yaml is used")
      ->required();
  connect_cmd->callback([&ctx, backend, workspace] { connect(ctx, *backend, *workspace); });
}

}  // namespace nnmeter::cli
