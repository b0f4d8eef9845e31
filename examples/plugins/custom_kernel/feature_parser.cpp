// An example feature parser: the five config values plus FLOPs/2e6 and parameters/1e6, as nn-Meter's
// guide shows.
#include <nnmeter/plugin.h>

namespace {

using nnmeter::plugin::json;

class MyParser : public nnmeter::plugin::Parser {
 public:
  using Parser::Parser;

  std::vector<std::string> needed_config() const override { return {"HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES"}; }

  std::vector<double> get_feature_by_config(const json& config) const override {
    std::vector<double> feature;
    for (const auto& key : needed_config()) feature.push_back(config.at(key).get<double>());
    const double hw = feature[0], cin = feature[1], cout = feature[2], k = feature[3], s = feature[4];
    const double params = cout * (k * k * cin + 1);
    const double flops = 2 * hw / s * hw / s * params;
    feature.push_back(flops / 2e6);
    feature.push_back(params / 1e6);
    return feature;
  }

  json get_config_by_feature(const std::vector<double>& feature) const override {
    const auto keys = needed_config();
    if (feature.size() != keys.size() + 2) throw std::runtime_error("feature vector has the wrong length");
    json config = json::object();
    for (size_t i = 0; i < keys.size(); ++i) config[keys[i]] = static_cast<int64_t>(feature[i]);
    return config;
  }
};

}  // namespace

NNMETER_PLUGIN("custom_kernel_parser", "1.0", MyParser)
