// nn-meter networks list | export | sample: the reference networks and their per-layer variants as ONNX files.
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
    std::cout << json_text(Json{{"architectures", network_architectures()}, {"sets", sets},
                                {"sample_families", network_sample_families()}})
              << std::endl;
    return;
  }
  print_line("Network sets (nn-meter networks export --set NAME --out DIR):");
  for (const auto& s : network_sets()) print_line(fmt::format("  {:<18} {:>3} networks: {}", s.name, s.networks.size(), s.description));
  print_line(fmt::format("Architectures: {}", fmt::join(network_architectures(), ", ")));
  print_line(fmt::format("Families to sample variants of (nn-meter networks sample --family F --count N --seed S --out "
                         "DIR): {}",
                         fmt::join(network_sample_families(), ", ")));
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

void sample(const Context& ctx, const std::string& family, int64_t count, uint32_t seed, const std::string& out) {
  const NetworkSet set = sample_network_set(family, count, seed);
  const NetworkExport e = export_network_set(set, out, !ctx.json);
  Json files = Json::array(), skipped = Json::array();
  for (const auto& f : e.files) files.push_back(f.string());
  for (const auto& [file, why] : e.skipped) {
    spdlog::warn("skipped {}: {}", file, why);
    skipped.push_back({{"file", file}, {"error", why}});
  }
  std::string line = fmt::format("{} variants of {} (seed {}) in {} ({} written, {} already there)", e.files.size(),
                                 family, seed, out, e.written.size(), e.kept.size());
  if (!e.skipped.empty()) line += fmt::format("; {} of {} would not build and were skipped", e.skipped.size(), count);
  report(ctx, line,
         {{"family", family}, {"seed", seed}, {"count", count}, {"out", out}, {"files", files}, {"networks", set.to_json()["networks"]},
          {"written", e.written.size()}, {"kept", e.kept.size()}, {"skipped", skipped}});
}

}  // namespace

void add_networks_commands(CLI::App& app, Context& ctx) {
  CLI::App* cmd = app.add_subcommand("networks", "the reference networks (real CNNs as torch.onnx.export writes them), "
                                                 "their named sets and per-layer random variants: list, export, sample");
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

  struct SampleArgs {
    std::string family, out;
    int64_t count = 10;
    uint32_t seed = 0;
  };
  auto args = std::make_shared<SampleArgs>();
  CLI::App* sm = cmd->add_subcommand("sample", "write per-layer random variants of an architecture family or NAS space "
                                               "as ONNX: each stage's width, depth, kernels, expansions and SE drawn "
                                               "within the family's space (files already there are kept)");
  std::vector<std::string> families = network_sample_families();
  families.push_back("all");
  sm->add_option("--family", args->family, "the family (nn-meter networks list), or all: --count of each")
      ->required()
      ->check(CLI::IsMember(families));
  sm->add_option("--count", args->count, "how many variants (variant i of a seed is the same whatever the count)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  sm->add_option("--seed", args->seed, "the seed (0-4294967295)")->capture_default_str();
  sm->add_option("--out", args->out, "the output folder (created if missing)")->required();
  sm->callback([&ctx, args] { sample(ctx, args->family, args->count, args->seed, args->out); });
}

}  // namespace nnmeter::cli
