// An example config sampler: prior configs drawn from the value sets of common CNN layers; fine-grained
// configs resample CIN and COUT in [0.4 C, 1.2 C] around each large-error config.
#include <nnmeter/plugin.h>

#include <random>

namespace {

using nnmeter::plugin::json;

template <class T>
T pick(const std::vector<T>& values, std::mt19937_64& rng) {
  return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)];
}

int around(int c, std::mt19937_64& rng) {
  const int lo = std::max(1, static_cast<int>(0.4 * c));
  const int hi = std::max(lo, static_cast<int>(1.2 * c));
  return std::uniform_int_distribution<int>(lo, hi)(rng);
}

class MySampler : public nnmeter::plugin::Sampler {
 public:
  using Sampler::Sampler;

  json prior_config_sampling(int sample_num, uint64_t seed) override {
    std::mt19937_64 rng(seed);
    const std::vector<int> hws = {7, 14, 28, 56, 112}, channels = {16, 24, 32, 64, 96, 128, 160, 256, 320, 512};
    json configs = json::array();
    for (int i = 0; i < sample_num; ++i) {
      configs.push_back({{"HW", pick(hws, rng)},
                         {"CIN", pick(channels, rng)},
                         {"COUT", pick(channels, rng)},
                         {"KERNEL_SIZE", pick(std::vector<int>{1, 3, 5}, rng)},
                         {"STRIDES", pick(std::vector<int>{1, 2}, rng)}});
    }
    return configs;
  }

  json finegrained_config_sampling(int sample_num, const json& configs, uint64_t seed) override {
    std::mt19937_64 rng(seed);
    json out = json::array();
    for (const auto& cfg : configs) {
      for (int i = 0; i < sample_num; ++i) {
        json c = cfg;
        c["CIN"] = around(cfg.at("CIN").get<int>(), rng);
        c["COUT"] = around(cfg.at("COUT").get<int>(), rng);
        out.push_back(c);
      }
    }
    return out;
  }
};

}  // namespace

NNMETER_PLUGIN("custom_kernel_sampler", "1.0", MySampler)
