// nn-meter networks list | export: the reference networks as ONNX files.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>

#include "cli/cli.h"
#include "cli/output.h"
#include "nnmeter/networks.h"

namespace nnmeter::cli {

namespace {

void list(const Context& ctx) {
  if (ctx.json) {
    Json sets = Json::array();
    for (const auto& s : network_sets()) sets.push_back(s.to_json());
    std::cout << json_text(Json{{"architectures", network_architectures()}, {"sets", sets}}) << std::endl;
    return;
  }
  print_line("Network sets (nn-meter networks export --set NAME --out DIR):");
  for (const auto& s : network_sets()) print_line(fmt::format("  {:<18} {:>3} networks: {}", s.name, s.networks.size(), s.description));
  print_line(fmt::format("Architectures: {}", fmt::join(network_architectures(), ", ")));
}

void export_set(const Context& ctx, const std::string& name, const std::string& out) {
  const NetworkSet& set = find_network_set(name);
  const NetworkExport e = export_network_set(set, out, !ctx.json);
  Json files = Json::array();
  for (const auto& f : e.files) files.push_back(f.string());
  report(ctx,
         fmt::format("network set {}: {} networks in {} ({} written, {} already there)", set.name, set.networks.size(),
                     out, e.written.size(), e.kept.size()),
         {{"set", set.name}, {"out", out}, {"files", files}, {"written", e.written.size()}, {"kept", e.kept.size()}});
}

}  // namespace

void add_networks_commands(CLI::App& app, Context& ctx) {
  CLI::App* cmd = app.add_subcommand("networks", "the reference networks (real CNNs as torch.onnx.export writes them) and "
                                                 "their named sets: list, export as ONNX");
  cmd->require_subcommand(1);
  CLI::App* ls = cmd->add_subcommand("list", "list the network sets and architectures");
  ls->callback([&ctx] { list(ctx); });
  auto set = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  CLI::App* ex = cmd->add_subcommand("export", "write every network of a set as ONNX into a folder (files already there "
                                               "are kept)");
  std::vector<std::string> names;
  for (const auto& s : network_sets()) names.push_back(s.name);
  ex->add_option("--set", *set, "the set's name (nn-meter networks list)")->required()->check(CLI::IsMember(names));
  ex->add_option("--out", *out, "the output folder (created if missing)")->required();
  ex->callback([&ctx, set, out] { export_set(ctx, *set, *out); });
}

}  // namespace nnmeter::cli
