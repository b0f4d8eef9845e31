// The reference networks: real CNN architectures, written as ONNX the way torch.onnx.export writes their
// torchvision counterparts, and the named sets of them that evaluation, calibration and the benches use.
// `nn-meter networks list|export` and `nn_meter.networks` call this.
#pragma once

#include <optional>

#include "nnmeter/common.h"

namespace nnmeter {

// A per-layer random variant of an architecture: the seed and index it was sampled with (sample_network_set).
struct NetworkVariant {
  uint32_t seed = 0;
  uint32_t index = 0;
};

// One network: an architecture at an input resolution (square, batch 1) and a channel width multiplier, or one
// of its per-layer random variants.
struct NetworkSpec {
  std::string arch;
  int64_t resolution = 224;
  double width = 1.0;
  std::optional<NetworkVariant> variant;
  // "<arch>_r<resolution>_w<width>.onnx", e.g. mobilenet_v2_r160_w0.5.onnx; a variant is
  // "<arch>__s<seed>n<index>_r<resolution>.onnx", e.g. resnet50__s7n12_r192.onnx.
  std::string file_name() const;
  Json to_json() const;  // {arch, resolution, width, file} and a variant's {family, seed, index}
};

struct NetworkSet {
  std::string name;
  std::string description;
  std::vector<NetworkSpec> networks;
  Json to_json() const;  // {name, description, networks: [...]}
};

// Every architecture's name (mobilenet_v1, mobilenet_v2, ..., vgg11_bn).
std::vector<std::string> network_architectures();
// The family of a network, from its file's stem: what is held out together when a family is held out. The
// architectures are grouped as they share layers (resnet18, resnet34, resnet50 and preact_resnet18 are "resnet";
// shufflenet v1 and v2 "shufflenet"), under torchvision's and timm's spellings alike (mobilenet_v2, mobilenetv2_100);
// "FAMILY__VARIANT" is FAMILY; any other stem is itself without its "_r<resolution>_w<width>".
std::string network_family(const std::string& stem);
// The sealed test split: three per-layer variants of every sample family (network_sample_families), drawn with a
// seed nothing else uses. No default of the project is chosen by looking at it, and no build samples its layers
// (Builder's seal_test_split), so a predictor's figure on it is one on layers and networks it never saw. It cannot
// be a build's SAMPLE_MODELS or CALIBRATION_NETWORKS.
inline constexpr const char* kSealedTestSet = "sealed-test";
inline constexpr uint32_t kSealedTestSeed = 20261207;
// The builtin sets, in a fixed order; no two sets named alike. The evaluation set and the calibration sets
// share no network.
const std::vector<NetworkSet>& network_sets();
// The set named `name`; throws Error naming the sets there are.
const NetworkSet& find_network_set(const std::string& name);
// The families per-layer variants are drawn from: every architecture family of the table above and the NAS
// search spaces (ofa_mobilenet_v3, proxylessnas), sorted.
std::vector<std::string> network_sample_families();
// `count` (1-100000) per-layer random variants of `family`, as nn-Meter's dataset has them: each draws its
// architecture among the family's, its input resolution, every stage's width (x0.5-1.5), depth, kernel sizes,
// expansion ratios and SE on or off within the architecture's space (a NAS space's own choices). Variant i of a
// seed is the same whatever the count, so a larger count extends a smaller one. Family "all": `count` variants
// of each family. Throws Error naming the families for an unknown one, and for a count out of range.
NetworkSet sample_network_set(const std::string& family, int64_t count, uint32_t seed);
// A sample by name, as SAMPLE_MODELS and CALIBRATION_NETWORKS take one: "sample:FAMILY:COUNT:SEED" (e.g.
// "sample:ofa_mobilenet_v3:40:1"); nullopt for any other text. Throws Error for a malformed one, an unknown family,
// a count out of range, and the sealed test split's seed.
std::optional<NetworkSet> parse_network_sample(const std::string& text);
// The serialized ONNX model of one network (deterministic: the same bytes every time). Without `weights`, its
// initializers have their shapes and no data: enough to detect its layers (load_onnx_ir_bytes), not to run it.
std::string network_onnx(const NetworkSpec& spec, bool weights = true);

struct NetworkExport {
  std::vector<fs::path> files;    // every network's file, in the set's order, but those skipped
  std::vector<fs::path> written;  // files this call wrote
  std::vector<fs::path> kept;     // files already there (same name), left alone
  std::vector<std::pair<std::string, std::string>> skipped;  // (file name, why): networks that would not build
};
// Writes every network of the set into `dir` (created if missing), each file atomically; a file already
// there is kept, so an interrupted export resumes. A network that does not build is named in `skipped` and the
// rest written. `progress`: a progress line on a terminal.
NetworkExport export_network_set(const NetworkSet& set, const fs::path& dir, bool progress = false);

}  // namespace nnmeter
