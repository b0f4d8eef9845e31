#include "kernels/config_check.h"

#include <cmath>

namespace nnmeter::kernels::check {

namespace {

std::string prefix(const std::string& kernel) { return "kernel '" + kernel + "' config: "; }

}  // namespace

std::optional<int64_t> get_optional_int(const KernelConfig& config, const std::string& kernel, const std::string& key,
                                        int64_t lo, int64_t hi) {
  if (!config.is_object()) throw Error(prefix(kernel) + "expected a JSON object, got " + config.dump());
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  int64_t v = 0;
  if (it->is_number_integer()) {
    v = it->get<int64_t>();
  } else if (it->is_number_float()) {
    double d = it->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 1e15)
      throw Error(prefix(kernel) + key + " must be an integer, got " + it->dump());
    v = static_cast<int64_t>(d);
  } else {
    throw Error(prefix(kernel) + key + " must be an integer, got " + it->dump());
  }
  if (v < lo || v > hi)
    throw Error(prefix(kernel) + key + " = " + std::to_string(v) + " is out of range [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "]");
  return v;
}

int64_t get_int(const KernelConfig& config, const std::string& kernel, const std::string& key, int64_t lo, int64_t hi) {
  auto v = get_optional_int(config, kernel, key, lo, hi);
  if (!v) throw Error(prefix(kernel) + "missing key " + key + " (got " + config.dump() + ")");
  return *v;
}

int64_t hw(const KernelConfig& c, const std::string& kernel) { return get_int(c, kernel, "HW", 1, kMaxHw); }

int64_t channels(const KernelConfig& c, const std::string& kernel, const std::string& key) {
  return get_int(c, kernel, key, 1, kMaxChannels);
}

int64_t tokens(const KernelConfig& c, const std::string& kernel, const std::string& key) {
  return get_int(c, kernel, key, 1, kMaxTokens);
}

int64_t kernel_size(const KernelConfig& c, const std::string& kernel, int64_t hw_value) {
  int64_t k = get_int(c, kernel, "KERNEL_SIZE", 1, kMaxKernelSize);
  if (k > hw_value + 2 * kMaxSamePadPerSide)
    throw Error(prefix(kernel) + "KERNEL_SIZE = " + std::to_string(k) + " is larger than HW = " +
                std::to_string(hw_value) + " plus SAME padding (at most " + std::to_string(kMaxSamePadPerSide) +
                " per side)");
  return k;
}

int64_t stride(const KernelConfig& c, const std::string& kernel, const std::string& key) {
  return get_int(c, kernel, key, 1, kMaxStride);
}

void check_batch(int64_t batch) {
  if (batch < 1 || batch > kMaxBatch)
    throw Error("BATCH_SIZE = " + std::to_string(batch) + " is out of range [1, " + std::to_string(kMaxBatch) +
                "]; fix predictorbuild_config.yaml");
}

void check_tensor(const std::string& kernel, const std::string& what, int64_t batch, const Shape& shape) {
  // Divide instead of multiplying so the check itself cannot overflow.
  int64_t remaining = kMaxTensorElements / batch;
  for (int64_t d : shape) {
    if (d <= 0 || d > remaining)
      throw Error(prefix(kernel) + "the " + what + " tensor would exceed " + std::to_string(kMaxTensorElements) +
                  " elements (1 GiB); use smaller HW or channels");
    remaining /= d;
  }
}

}  // namespace nnmeter::kernels::check
