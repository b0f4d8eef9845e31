// What the backend tests share: the builtin kernels as test parameters, their prior configs shrunk for the
// reference interpreter, and fixed-seed inputs for a model's runtime inputs.
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "nnmeter/backend.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"

namespace nnmeter::test {

inline std::vector<std::string> builtin_kernel_names() {
  std::vector<std::string> names;
  for (const auto& k : builtin_kernels()) names.push_back(k.name);
  return names;
}

// A kernel name as a gtest parameter name (only [A-Za-z0-9_]).
inline std::string gtest_param_name(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// A prior config with HW capped at `max_hw` and channel counts at `max_channels`, so the naive reference
// convolution stays quick.
inline KernelConfig shrunk(KernelConfig config, int64_t max_hw, int64_t max_channels) {
  for (auto& [key, value] : config.items()) {
    if (!value.is_number_integer()) continue;
    const int64_t v = value.get<int64_t>();
    if (key == "HW") value = std::min(v, max_hw);
    if ((key.starts_with("CIN") || key == "COUT") && v > max_channels) value = max_channels;
  }
  return config;
}

// Uniform [-1, 1) values for every graph input that is not an initializer.
inline std::vector<Tensor> model_inputs(const onnx::ModelProto& model, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<Tensor> inputs;
  for (const auto& in : model.graph().input()) {
    const bool init = std::any_of(model.graph().initializer().begin(), model.graph().initializer().end(),
                                  [&](const onnx::TensorProto& t) { return t.name() == in.name(); });
    if (init) continue;
    Tensor t{in.name(), {}, {}};
    for (const auto& d : in.type().tensor_type().shape().dim()) t.shape.push_back(d.dim_value());
    int64_t count = 1;
    for (auto d : t.shape) count *= d;
    t.data.resize(static_cast<size_t>(count));
    for (auto& v : t.data) v = dist(rng);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

}  // namespace nnmeter::test
