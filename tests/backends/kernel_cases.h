// What the backend tests share: the builtin kernels as test parameters, their prior configs shrunk for the
// reference interpreter, and fixed-seed inputs for a model's runtime inputs.
#pragma once

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
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

// The builtin kernels the TFLite export (and so xnnpack_cpu and tflite_*) cannot write, with what its one-line
// refusal names: the schema it writes has no POW, GELU or BATCH_MATMUL.
inline const std::map<std::string, std::string>& kernels_without_tflite_export() {
  static const std::map<std::string, std::string> kernels = {{"layernorm", "op 'Pow' has no TFLite export"},
                                                             {"gelu", "op 'Erf' has no TFLite export"},
                                                             {"linear-gelu", "op 'Erf' has no TFLite export"},
                                                             {"matmul", "MatMul node 'MatMul_0'"},
                                                             {"gconv-bn-relu", "grouped convolution"}};
  return kernels;
}

// The reference architectures the TFLite export cannot write, for the same reason as gconv-bn-relu.
inline const std::map<std::string, std::string>& architectures_without_tflite_export() {
  static const std::map<std::string, std::string> archs = {{"shufflenet_v1_g3", "grouped convolution (group=3 of"}};
  return archs;
}

// A transformer kernel's config with at most 256 tokens, matrices of at most 128 and 4 of them, so the naive
// reference matmul stays quick (a prior linear can be 3,136 tokens × 384 → 1,536).
inline KernelConfig shrunk_tokens(KernelConfig config) {
  for (auto& [key, value] : config.items()) {
    if (!value.is_number_integer()) continue;
    const int64_t v = value.get<int64_t>();
    if (key == "T") value = std::min<int64_t>(v, 256);
    if (key == "B") value = std::min<int64_t>(v, 4);
    if (key == "M" || key == "K" || key == "N") value = std::min<int64_t>(v, 128);
  }
  return config;
}

// A prior config with HW capped at `max_hw` and channel counts at `max_channels`, so the naive reference
// convolution stays quick.
inline KernelConfig shrunk(KernelConfig config, int64_t max_hw, int64_t max_channels) {
  config = shrunk_tokens(std::move(config));
  for (auto& [key, value] : config.items()) {
    if (!value.is_number_integer()) continue;
    const int64_t v = value.get<int64_t>();
    if (key == "HW") value = std::min(v, max_hw);
    if ((key.starts_with("CIN") || key == "COUT") && v > max_channels) value = max_channels;
  }
  if (config.contains("GROUPS")) {  // a grouped conv: at most 4 groups, channels in whole groups
    const int64_t g = std::min<int64_t>(config["GROUPS"].get<int64_t>(), 4);
    config["GROUPS"] = g;
    for (const char* key : {"CIN", "COUT"}) config[key] = std::max(g, config[key].get<int64_t>() / g * g);
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
