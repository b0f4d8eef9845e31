#include "kernels/feature_parsers.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "kernels/config_check.h"

namespace nnmeter::kernels {

namespace {

enum class Extra { None, Conv, DwConv, GConv, Fc, Tokens, Linear, MatMul, Concat, Se };

// How many values the extra features add after the needed configs.
size_t extra_count(Extra e) {
  switch (e) {
    case Extra::None: return 0;
    case Extra::Tokens:
    case Extra::Concat:
    case Extra::Se: return 1;
    case Extra::GConv: return 3;
    case Extra::Conv:
    case Extra::DwConv:
    case Extra::Fc:
    case Extra::Linear:
    case Extra::MatMul: return 2;
  }
  return 0;
}

class BuiltinParser : public FeatureParser {
 public:
  BuiltinParser(std::string kernel, std::vector<std::string> needed, Extra extra)
      : kernel_(std::move(kernel)), needed_(std::move(needed)), extra_(extra) {}

  std::vector<std::string> needed_config() const override { return needed_; }

  std::vector<double> get_feature_by_config(const KernelConfig& config) const override {
    // A config with every needed key (what kernel detection writes) is read as it is: filling in implied
    // keys takes a copy, and copying every kernel's config was a visible part of a model-level prediction.
    std::optional<KernelConfig> filled;
    if (!has_needed_keys(config)) filled = with_implied_keys(config);
    const KernelConfig& c = filled ? *filled : config;
    std::vector<double> feature;
    feature.reserve(needed_.size() + 2);
    for (const auto& key : needed_) {
      // Concat's absent inputs are 0; every other value is a positive integer.
      int64_t lo = kernel_ == "concat" && (key == "CIN3" || key == "CIN4") ? 0 : 1;
      if (lo == 0 && !c.contains(key)) (*filled)[key] = 0;  // a missing key means `filled` is in use
      feature.push_back(static_cast<double>(check::get_int(c, kernel_, key, lo, std::numeric_limits<int64_t>::max())));
    }
    if (extra_ == Extra::None) return feature;
    // Ours: the token kernels' size, and the work and bytes of a matmul of two activations.
    if (extra_ == Extra::Tokens) {
      feature.push_back(feature[0] * feature[1] / 1e6);
      return feature;
    }
    // Ours: the elements a concat copies. Its time follows HW² · ΣCIN (the same per element on onednn_cpu at every
    // size), a sum the power law cannot build from the inputs' channels read apart. With it, real networks' concats
    // came down to the other kernels' level (docs/accuracy.md).
    if (extra_ == Extra::Concat) {
      feature.push_back(feature[0] * feature[0] * (feature[1] + feature[2] + feature[3] + feature[4]) / 1e6);
      return feature;
    }
    // Ours: the elements an SE block touches, HW² · CIN read by the pool and written by the multiply plus its two
    // FCs' CIN²/2 weights (kernels/structural_kernels.cpp). The sampler draws HW and CIN apart, so a real block at
    // HW 7 with 960-1920 channels lies beyond every sample in (HW, CIN); retrained on the same samples with this
    // feature, real SE blocks were predicted much closer (docs/accuracy.md).
    // The two parts as separate features did nothing: the power law multiplies its terms, it cannot add them.
    if (extra_ == Extra::Se) {
      feature.push_back((feature[0] * feature[0] * feature[1] + feature[1] * feature[1] / 2) / 1e6);
      return feature;
    }
    if (extra_ == Extra::MatMul) {
      const double b = feature[0], m = feature[1], k = feature[2], n = feature[3];
      feature.push_back(2 * b * m * k * n / 2e6);
      feature.push_back(b * (m * k + k * n + m * n) / 1e6);
      return feature;
    }
    double flops = 0, params = 0;
    if (extra_ == Extra::Linear) {
      const double t = feature[0], cin = feature[1], cout = feature[2];
      params = (cin + 1) * cout;
      flops = 2 * t * cin * cout;
    } else if (extra_ == Extra::Fc) {
      const double cin = feature[0], cout = feature[1];
      params = flops = (2 * cin + 1) * cout;
    } else {
      // Real-valued HW/S as nn-Meter's evaluation.py computes it (no flooring).
      const double hw = feature[0], cin = feature[1], cout = feature[2], k = feature[3], s = feature[4];
      // A grouped conv's output channel reads CIN / GROUPS inputs (GROUPS follows STRIDES in its features).
      const double per_group_in = extra_ == Extra::GConv ? cin / feature[5] : cin;
      params = extra_ == Extra::DwConv ? cin * (k * k + 1) : cout * (k * k * per_group_in + 1);
      flops = 2 * (hw / s) * (hw / s) * params;
    }
    feature.push_back(flops / 2e6);
    feature.push_back(params / 1e6);
    // A group's width sets how well the engine vectorizes it: on onednn_cpu narrow groups ran far slower than wide
    // ones for the same FLOPs (docs/accuracy.md).
    if (extra_ == Extra::GConv) feature.push_back(feature[1] / feature[5]);
    return feature;
  }

  KernelConfig get_config_by_feature(const std::vector<double>& feature) const override {
    const size_t extra = extra_count(extra_);
    if (feature.size() != needed_.size() + extra)
      throw Error("kernel '" + kernel_ + "' feature vector has " + std::to_string(feature.size()) + " values, expected " +
                  std::to_string(needed_.size() + extra));
    KernelConfig config = Json::object();
    for (size_t i = 0; i < needed_.size(); ++i) {
      double v = feature[i];
      if (v == std::floor(v) && std::fabs(v) < 9e15)
        config[needed_[i]] = static_cast<int64_t>(v);
      else
        config[needed_[i]] = v;
    }
    return config;
  }

 private:
  bool has_needed_keys(const KernelConfig& config) const {
    return config.is_object() &&
           std::all_of(needed_.begin(), needed_.end(), [&](const std::string& key) { return config.contains(key); });
  }

  // Keys nn-Meter fills in before extracting features: COUT of depthwise convs and pooling is CIN, and
  // pooling configs written with STRIDES mean POOL_STRIDES.
  KernelConfig with_implied_keys(const KernelConfig& config) const {
    if (!config.is_object()) throw Error("kernel '" + kernel_ + "' config must be a JSON object, got " + config.dump());
    KernelConfig c = config;
    bool wants_cout = std::find(needed_.begin(), needed_.end(), "COUT") != needed_.end();
    const bool own_cout = extra_ == Extra::Fc || extra_ == Extra::Linear || extra_ == Extra::Conv || extra_ == Extra::GConv;
    if (wants_cout && !own_cout && !c.contains("COUT") && c.contains("CIN")) c["COUT"] = c["CIN"];
    bool wants_pool_strides = std::find(needed_.begin(), needed_.end(), "POOL_STRIDES") != needed_.end();
    if (wants_pool_strides && !c.contains("POOL_STRIDES") && c.contains("STRIDES")) c["POOL_STRIDES"] = c["STRIDES"];
    return c;
  }

  std::string kernel_;
  std::vector<std::string> needed_;
  Extra extra_;
};

}  // namespace

std::unique_ptr<FeatureParser> make_parser(const std::string& kernel_name, Family family) {
  const std::vector<std::string> conv = {"HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES"};
  switch (family) {
    case Family::Conv: return std::make_unique<BuiltinParser>(kernel_name, conv, Extra::Conv);
    case Family::DwConv: return std::make_unique<BuiltinParser>(kernel_name, conv, Extra::DwConv);
    case Family::GConv: {
      std::vector<std::string> grouped = conv;
      grouped.push_back("GROUPS");
      return std::make_unique<BuiltinParser>(kernel_name, grouped, Extra::GConv);
    }
    case Family::Pooling:
      return std::make_unique<BuiltinParser>(kernel_name,
                                             std::vector<std::string>{"HW", "CIN", "COUT", "KERNEL_SIZE", "POOL_STRIDES"},
                                             Extra::None);
    case Family::Fc: return std::make_unique<BuiltinParser>(kernel_name, std::vector<std::string>{"CIN", "COUT"}, Extra::Fc);
    case Family::Concat:
      return std::make_unique<BuiltinParser>(kernel_name, std::vector<std::string>{"HW", "CIN1", "CIN2", "CIN3", "CIN4"},
                                             Extra::Concat);
    case Family::Tokens:
      return std::make_unique<BuiltinParser>(kernel_name, std::vector<std::string>{"T", "CIN"}, Extra::Tokens);
    case Family::Linear:
      return std::make_unique<BuiltinParser>(kernel_name, std::vector<std::string>{"T", "CIN", "COUT"}, Extra::Linear);
    case Family::MatMul:
      return std::make_unique<BuiltinParser>(kernel_name, std::vector<std::string>{"B", "M", "K", "N"}, Extra::MatMul);
    case Family::CinEven:
    case Family::GlobalAvgPool:
    case Family::HwCin:
      break;
  }
  // nn-Meter feeds CIN twice for the two-input element-wise kernels.
  if (kernel_name == "se") return std::make_unique<BuiltinParser>(kernel_name, std::vector<std::string>{"HW", "CIN"}, Extra::Se);
  if (kernel_name == "add" || kernel_name == "addrelu")
    return std::make_unique<BuiltinParser>(kernel_name, std::vector<std::string>{"HW", "CIN", "CIN"}, Extra::None);
  return std::make_unique<BuiltinParser>(kernel_name, std::vector<std::string>{"HW", "CIN"}, Extra::None);
}

}  // namespace nnmeter::kernels
