// The reference networks: real CNN architectures, written as ONNX the way torch.onnx.export writes their
// torchvision counterparts, and the named sets of them that evaluation, calibration and the benches use.
// `nn-meter networks list|export` and `nn_meter.networks` call this.
#pragma once

#include "nnmeter/common.h"

namespace nnmeter {

// One network: an architecture at an input resolution (square, batch 1) and a channel width multiplier.
struct NetworkSpec {
  std::string arch;
  int64_t resolution = 224;
  double width = 1.0;
  // "<arch>_r<resolution>_w<width>.onnx", e.g. mobilenet_v2_r160_w0.5.onnx; the family is the text before "_r".
  std::string file_name() const;
  Json to_json() const;  // {arch, resolution, width, file}
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
// The builtin sets, in a fixed order; no two sets named alike. The evaluation set and the calibration sets
// share no network.
const std::vector<NetworkSet>& network_sets();
// The set named `name`; throws Error naming the sets there are.
const NetworkSet& find_network_set(const std::string& name);
// The serialized ONNX model of one network (deterministic: the same bytes every time).
std::string network_onnx(const NetworkSpec& spec);

struct NetworkExport {
  std::vector<fs::path> files;    // every network's file, in the set's order
  std::vector<fs::path> written;  // files this call wrote
  std::vector<fs::path> kept;     // files already there (same name), left alone
};
// Writes every network of the set into `dir` (created if missing), each file atomically; a file already
// there is kept, so an interrupted export resumes. `progress`: a progress line on a terminal.
NetworkExport export_network_set(const NetworkSet& set, const fs::path& dir, bool progress = false);

}  // namespace nnmeter
