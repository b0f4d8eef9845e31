// Per-layer random variants (nn-meter networks sample): which architectures and input sizes a family's variants
// are drawn from. What varies inside a network is each architecture's own (architectures.cpp, LayerBuilder's draws).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <regex>
#include <set>

#include "common/hash.h"
#include "common/rng.h"
#include "networks/architectures.h"
#include "nnmeter/networks.h"

namespace nnmeter {

namespace {

std::vector<std::string> buildable() {
  std::vector<std::string> names = networks::architectures();
  for (auto& s : networks::spaces()) names.push_back(std::move(s));
  return names;
}

std::vector<int64_t> resolutions(const std::string& family) {
  // VGG's and AlexNet's classifiers grow with the input's area; AlexNet's stride-4 stem needs a large input.
  if (family == "vgg") return {96, 112, 128, 144};
  if (family == "alexnet") return {160, 176, 192, 208, 224};
  return {128, 144, 160, 176, 192, 208, 224};
}

}  // namespace

std::vector<std::string> network_sample_families() {
  std::set<std::string> families;
  for (const auto& name : buildable()) families.insert(network_family(name));
  return {families.begin(), families.end()};
}

NetworkSet sample_network_set(const std::string& family, int64_t count, uint32_t seed) {
  const auto families = network_sample_families();
  if (family != "all" && std::find(families.begin(), families.end(), family) == families.end())
    throw Error(fmt::format("unknown network family '{}' (known: all, {})", family, fmt::join(families, ", ")));
  if (count < 1 || count > 100000) throw Error(fmt::format("a sample's count must be in [1, 100000], got {}", count));
  if (family == "all") {
    NetworkSet set{fmt::format("all-s{}", seed),
                   fmt::format("{} per-layer random variants of each family (seed {})", count, seed), {}};
    for (const auto& f : families) {
      NetworkSet one = sample_network_set(f, count, seed);
      set.networks.insert(set.networks.end(), one.networks.begin(), one.networks.end());
    }
    return set;
  }
  std::vector<std::string> members;
  for (const auto& name : buildable())
    if (network_family(name) == family) members.push_back(name);
  const std::vector<int64_t> sizes = resolutions(family);
  NetworkSet set{fmt::format("{}-s{}", family, seed),
                 fmt::format("{} per-layer random variants of {} (seed {})", count, family, seed), {}};
  for (int64_t i = 0; i < count; ++i) {
    // Variant i's draws depend on (family, seed, i) alone, so a larger count extends a smaller one.
    Rng rng(fnv1a(fmt::format("{}/{}/{}", family, seed, i)));
    const std::string& arch = members[rng.below(members.size())];
    const int64_t resolution = sizes[rng.below(sizes.size())];
    set.networks.push_back({arch, resolution, 1.0, NetworkVariant{seed, static_cast<uint32_t>(i)}});
  }
  return set;
}

std::optional<NetworkSet> parse_network_sample(const std::string& text) {
  static const std::regex form(R"(^sample:([A-Za-z0-9_]+):(\d{1,6}):(\d{1,10})$)");
  if (text.rfind("sample:", 0) != 0) return std::nullopt;
  std::smatch m;
  if (!std::regex_match(text, m, form) || std::stoull(m[3].str()) > UINT32_MAX)
    throw Error(fmt::format("'{}' is not a sample: write sample:FAMILY:COUNT:SEED, e.g. sample:resnet:20:1 (seed 0-{})",
                            text, UINT32_MAX));
  const auto seed = static_cast<uint32_t>(std::stoull(m[3].str()));
  if (seed == kSealedTestSeed)
    throw Error(fmt::format("'{}': seed {} draws the sealed test split ({}), which no build may train on; use another "
                            "seed", text, seed, kSealedTestSet));
  return sample_network_set(m[1].str(), std::stoll(m[2].str()), seed);
}

}  // namespace nnmeter
