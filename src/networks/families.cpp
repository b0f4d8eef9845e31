// The family table: which architectures are one family when a family is held out. A family is wider than an
// architecture: ResNet-18/34/50 share their layers' configs, so holding out resnet18 while resnet34 trains the
// predictor holds nothing out.
#include <algorithm>
#include <cctype>
#include <regex>

#include "nnmeter/networks.h"

namespace nnmeter {

namespace {

struct FamilyEntry {
  const char* prefix;  // of the name lowercased without '_', '-' and '.', so mobilenet_v2 and mobilenetv2 match alike
  const char* family;
};

// Longest prefix first where one prefix starts another (mobilevit before mobilenet is not needed: they differ at
// "mobile" + 'v'/'n'; preactresnet, wideresnet and resnext each are their own prefix).
constexpr FamilyEntry kFamilies[] = {
    {"resnext", "resnext"},         // grouped 3×3 convs: other kernels than ResNet's
    {"resnet", "resnet"},           // ResNet-18/34/50/101/152
    {"preactresnet", "resnet"},     // the same convs, BN and ReLU before them
    {"wideresnet", "resnet"},       // ResNet-50's bottlenecks, wider
    {"mobilenetv1", "mobilenet_v1"},
    {"mobilenetv2", "mobilenet_v2"},
    {"mobilenetv3", "mobilenet_v3"},
    {"mnasnet", "mnasnet"},
    {"efficientnet", "efficientnet"},
    {"shufflenet", "shufflenet"},   // v1 (grouped convs) and v2
    {"squeezenet", "squeezenet"},
    {"googlenet", "inception"},
    {"inception", "inception"},
    {"densenet", "densenet"},
    {"alexnet", "alexnet"},
    {"vgg", "vgg"},
    {"regnet", "regnet"},
    {"mobilevit", "mobilevit"},
    {"convnext", "convnext"},
    {"swin", "swin"},
    {"deit", "vit"},
    {"vit", "vit"},
    {"bert", "bert"},
    {"proxyless", "proxylessnas"},
    {"ofamobilenetv3", "ofa_mobilenet_v3"},  // Once-for-all's space: other blocks than MobileNetV3's
};

std::string squeezed(const std::string& name) {
  std::string out;
  for (const char c : name)
    if (c != '_' && c != '-' && c != '.') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string network_family(const std::string& stem) {
  // FAMILY__VARIANT names the family outright (nn_meter.torch_networks' depths and widths).
  std::string name = stem;
  if (const size_t cut = stem.find("__"); cut != std::string::npos && cut > 0) name = stem.substr(0, cut);
  const std::string key = squeezed(name);
  const FamilyEntry* best = nullptr;
  for (const FamilyEntry& e : kFamilies)
    if (key.rfind(e.prefix, 0) == 0 && (!best || std::string_view(e.prefix).size() > std::string_view(best->prefix).size()))
      best = &e;
  if (best) return best->family;
  if (name != stem) return name;
  // Any other name: the stem without its resolution and width (<arch>_r<res>_w<width>).
  static const std::regex suffix(R"(^(.+?)(_r\d+)?(_w[0-9.]+)?$)");
  std::smatch m;
  if (std::regex_match(stem, m, suffix) && m[1].length() > 0) return m[1].str();
  return stem;
}

}  // namespace nnmeter
