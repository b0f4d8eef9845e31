// The project's random generators, both reproducible bit for bit with any standard library (std::mt19937_64
// is specified by the standard, the std distributions and std::shuffle are not, so draws and shuffles are
// written here):
// - Rng: config sampling, data splits, the shuffled measurement order — the same seed gives the same configs
//   and the same order everywhere;
// - SplitMix64: model weights and profiling inputs, where speed matters and only the seed must fix the bytes.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace nnmeter {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), n > 0, without modulo bias.
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = engine_();
    while (x >= limit) x = engine_();
    return x % n;
  }
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[below(i)]);
  }
  uint64_t next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

// splitmix64: tiny and fast; its stream is fixed by the seed alone.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>((next() >> 40) * 0x1.0p-24); }

 private:
  uint64_t state_;
};

}  // namespace nnmeter
