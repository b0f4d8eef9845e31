// The named network sets. Which networks each holds was chosen in the accuracy benches
// (bench/RESULTS-accuracy.md): the evaluation set scores predictors, the calibration sets fit the
// composition term on other widths and resolutions of the same architectures, so that a calibrated predictor
// is scored on networks it never saw.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "common/hash.h"
#include "common/io.h"
#include "common/progress.h"
#include "networks/architectures.h"
#include "nnmeter/networks.h"

namespace nnmeter {

namespace {

using Sizes = std::vector<std::pair<int64_t, double>>;  // (input resolution, width multiplier)
using Archs = std::vector<std::string>;
const Archs kMobile = {"mobilenet_v1", "mobilenet_v2", "mobilenet_v3_large", "mnasnet1_0", "efficientnet_b0",
                       "shufflenet_v2_x1_0"};
const Archs kResNets = {"resnet18", "resnet34", "resnet50"};
const Archs kOthers = {"squeezenet1_1", "googlenet", "densenet121"};

// Every architecture at every size, architecture by architecture: the order a set's files are written in.
void add(std::vector<NetworkSpec>& v, const Archs& archs, const Sizes& sizes) {
  for (const auto& arch : archs)
    for (auto [res, width] : sizes) v.push_back({arch, res, width});
}

// 55: every architecture at its published width and 224, plus width and resolution variants. VGG and
// AlexNet stay at small inputs or once: their classifiers alone hold 60–120 M parameters.
std::vector<NetworkSpec> evaluation() {
  std::vector<NetworkSpec> v;
  add(v, kMobile, {{224, 1.0}, {192, 0.75}, {160, 0.5}, {224, 1.4}, {128, 1.0}});
  add(v, kResNets, {{224, 1.0}, {160, 0.5}, {192, 0.75}, {128, 1.0}});
  add(v, kOthers, {{224, 1.0}, {160, 0.5}, {192, 1.0}});
  add(v, {"alexnet"}, {{224, 1.0}, {224, 0.5}});
  add(v, {"vgg11_bn"}, {{128, 1.0}, {96, 0.5}});
  return v;
}

// 23: the same architectures at other widths and resolutions.
std::vector<NetworkSpec> calibration() {
  std::vector<NetworkSpec> v;
  add(v, kMobile, {{144, 1.0}, {208, 1.25}});
  add(v, kResNets, {{176, 0.75}, {112, 1.0}});
  add(v, kOthers, {{176, 0.75}});
  add(v, {"alexnet"}, {{192, 0.75}});
  add(v, {"vgg11_bn"}, {{112, 0.75}});
  return v;
}

// 49 more: resolutions 112 to 240 and widths 0.5 to 1.25 of every architecture, so that a term with more
// coefficients is fitted on every family and judged on families held out.
std::vector<NetworkSpec> calibration_more() {
  std::vector<NetworkSpec> v;
  add(v, kMobile, {{112, 0.6}, {176, 1.1}, {240, 0.9}, {128, 1.25}});
  add(v, kResNets, {{144, 1.0}, {208, 0.5}, {240, 0.75}, {128, 0.6}});
  add(v, kOthers, {{144, 1.0}, {208, 0.75}, {128, 0.5}});
  add(v, {"alexnet"}, {{160, 1.0}, {128, 0.5}});
  add(v, {"vgg11_bn"}, {{96, 1.0}, {112, 0.5}});
  return v;
}

// 27 more: every architecture at or beyond the top of its range in the evaluation set, so that the largest
// networks scored sit among calibration networks of their own size rather than beyond all of them.
std::vector<NetworkSpec> calibration_span() {
  std::vector<NetworkSpec> v;
  add(v, kMobile, {{240, 1.5}, {256, 1.0}});
  add(v, kResNets, {{240, 1.0}, {208, 1.0}});
  add(v, kOthers, {{240, 1.0}, {208, 1.0}});
  add(v, {"alexnet"}, {{240, 1.0}});
  add(v, {"vgg11_bn"}, {{144, 1.0}, {128, 0.75}});
  return v;
}

// 36 more: every mobile architecture at the narrow, low-resolution end of its range, whose mix of kernels
// (depthwise against 1x1 convs) is its own.
std::vector<NetworkSpec> calibration_small() {
  std::vector<NetworkSpec> v;
  add(v, kMobile, {{96, 1.0}, {112, 1.0}, {144, 0.5}, {176, 0.5}, {160, 0.75}, {208, 0.75}});
  return v;
}

// 12: two families in no other set but the published one, to score a predictor on architectures it never saw
// without PyTorch. Calibrating on them as well did not help the others held out (bench/RESULTS-accuracy.md):
// pre-activation ResNet's BN + ReLU left DenseNet where it was, and ShuffleNet v1's narrow widths run grouped
// convs oneDNN has no fast path for.
std::vector<NetworkSpec> unseen_families() {
  std::vector<NetworkSpec> v;
  add(v, {"preact_resnet18", "shufflenet_v1_g3"}, {{224, 1.0}, {160, 0.5}, {192, 0.75}, {128, 1.0}, {176, 1.25}, {256, 1.0}});
  return v;
}

// The sealed test split (kSealedTestSet): its seed is used by nothing else.
std::vector<NetworkSpec> sealed_test() { return sample_network_set("all", 3, kSealedTestSeed).networks; }

std::vector<NetworkSpec> joined(std::initializer_list<std::vector<NetworkSpec>> parts) {
  std::vector<NetworkSpec> v;
  for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

std::vector<NetworkSet> make_sets() {
  std::vector<NetworkSpec> published;
  for (const auto& arch : networks::architectures()) published.push_back({arch, 224, 1.0});
  return {
      {"published", "every architecture at its published width, 224x224", published},
      {"main-job", "the four CNNs the main job evaluates on (scripts/main-job.sh)",
       {{"mobilenet_v2", 224, 1.0}, {"resnet18", 224, 1.0}, {"mnasnet1_0", 224, 1.0}, {"mobilenet_v3_large", 224, 1.0}}},
      {"evaluation", "every architecture at 224 x 1 with width and resolution variants: what the accuracy benches score",
       evaluation()},
      {"calibration", "other widths and resolutions of every architecture, in no evaluation set", calibration()},
      {"calibration-more", "resolutions 112-240 and widths 0.5-1.25 of every architecture", calibration_more()},
      {"calibration-span", "every architecture at and beyond the largest size the evaluation set has of it",
       calibration_span()},
      {"calibration-small", "the mobile architectures at the narrow, low-resolution end of their range",
       calibration_small()},
      {"calibration-72", "calibration + calibration-more", joined({calibration(), calibration_more()})},
      {"calibration-99", "calibration-72 + calibration-span",
       joined({calibration(), calibration_more(), calibration_span()})},
      {"calibration-135", "calibration-99 + calibration-small",
       joined({calibration(), calibration_more(), calibration_span(), calibration_small()})},
      {"unseen-families", "pre-activation ResNet-18 and ShuffleNet v1 (3 groups) at six sizes: families in no sample or "
       "calibration set", unseen_families()},
      {kSealedTestSet, "the sealed test split: 3 per-layer variants of every family and NAS space; no build samples "
       "its layers", sealed_test()},
  };
}

}  // namespace

std::string NetworkSpec::file_name() const {
  if (variant) return fmt::format("{}__s{}n{}_r{}.onnx", arch, variant->seed, variant->index, resolution);
  return fmt::format("{}_r{}_w{}.onnx", arch, resolution, width);
}

Json NetworkSpec::to_json() const {
  Json j = {{"arch", arch}, {"resolution", resolution}, {"width", width}, {"file", file_name()}};
  if (variant) j.update({{"family", network_family(arch)}, {"seed", variant->seed}, {"index", variant->index}});
  return j;
}

Json NetworkSet::to_json() const {
  Json list = Json::array();
  for (const auto& n : networks) list.push_back(n.to_json());
  return {{"name", name}, {"description", description}, {"networks", list}};
}

std::vector<std::string> network_architectures() { return networks::architectures(); }

const std::vector<NetworkSet>& network_sets() {
  static const std::vector<NetworkSet> sets = make_sets();
  return sets;
}

const NetworkSet& find_network_set(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& s : network_sets()) {
    if (s.name == name) return s;
    names.push_back(s.name);
  }
  throw Error(fmt::format("unknown network set '{}' (known: {})", name, fmt::join(names, ", ")));
}

std::string network_onnx(const NetworkSpec& spec, bool weights) {
  std::optional<uint64_t> variant;
  if (spec.variant) variant = fnv1a(fmt::format("{}/{}/{}", spec.arch, spec.variant->seed, spec.variant->index));
  return networks::build(spec.arch, spec.resolution, spec.width, variant, weights).model.SerializeAsString();
}

NetworkExport export_network_set(const NetworkSet& set, const fs::path& dir, bool progress) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error(fmt::format("cannot create the output folder {}: {}", dir.string(),
                            ec ? ec.message() : "a file of that name is in the way"));
  NetworkExport out;
  Progress bar("exporting " + set.name, set.networks.size(), progress);
  for (size_t i = 0; i < set.networks.size(); ++i) {
    const fs::path file = dir / set.networks[i].file_name();
    if (fs::exists(file)) {
      out.kept.push_back(file);
    } else {
      std::string bytes;
      try {
        bytes = network_onnx(set.networks[i]);
      } catch (const Error& e) {
        out.skipped.emplace_back(file.filename().string(), e.what());
        bar.advance();
        continue;
      }
      io::write_file_atomic(file, bytes);
      out.written.push_back(file);
    }
    out.files.push_back(file);
    bar.advance();
  }
  return out;
}

}  // namespace nnmeter
