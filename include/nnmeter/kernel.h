// Kernels: the units nn-Meter measures and predicts (conv-bn-relu, dwconv-bn-relu, fc, ...). A kernel
// comes as three parts, as in nn-Meter: the kernel class that builds an ONNX model from a config, the
// config sampler, and the feature parser that turns a config into a training feature vector.
#pragma once

#include <functional>
#include <memory>

#include "nnmeter/common.h"

namespace nnmeter {

// A kernel configuration, e.g. {"HW": 28, "CIN": 32, "COUT": 64, "KERNEL_SIZE": 3, "STRIDES": 1}.
using KernelConfig = Json;

// Builtin kernels build NCHW float32 opset-13 models with one graph input per entry of
// input_tensor_shape and random weights as initializers (src/kernels/). Both methods validate the config
// and throw Error (one line naming the kernel and key) for a missing key, a non-integer, zero, negative
// or absurd value; generate_config_sample calls input_tensor_shape on every config before writing files.
class Kernel {
 public:
  virtual ~Kernel() = default;
  // Shapes of every model input without the batch dimension, NCHW order ([[CIN, HW, HW]]).
  virtual std::vector<Shape> input_tensor_shape(const KernelConfig& config) const = 0;
  // The kernel model as a serialized ONNX ModelProto.
  virtual std::string build_onnx(const KernelConfig& config, int batch_size) const = 0;
};

// Builtin samplers read the prior CSVs compiled into the library, or the folder named by
// predictorbuild_config key PRIOR_CONFIG_LIB (conv.csv, dwconv.csv, fc.csv, pooling.csv) when set.
class ConfigSampler {
 public:
  virtual ~ConfigSampler() = default;
  // Exactly sample_num configs for builtin samplers; the same seed gives the same configs.
  virtual std::vector<KernelConfig> prior_config_sampling(int sample_num, uint64_t seed) = 0;
  // Samples up to `sample_num` configs around each of `configs` (the configs of large-error points).
  virtual std::vector<KernelConfig> finegrained_config_sampling(int sample_num, const std::vector<KernelConfig>& configs,
                                                                uint64_t seed) = 0;
};

class FeatureParser {
 public:
  virtual ~FeatureParser() = default;
  virtual std::vector<std::string> needed_config() const = 0;
  virtual std::vector<double> get_feature_by_config(const KernelConfig& config) const = 0;
  virtual KernelConfig get_config_by_feature(const std::vector<double>& feature) const = 0;
};

// The three parts of one kernel type, constructed for a workspace's predictorbuild_config.
struct KernelSuite {
  std::string name;
  std::unique_ptr<Kernel> kernel;
  std::unique_ptr<ConfigSampler> sampler;
  std::unique_ptr<FeatureParser> parser;
};

struct KernelInfo {
  std::string name;
  bool customized = false;
  std::string implement = "onnx";
  std::function<KernelSuite(const Json& predictorbuild_config)> create;
};


}  // namespace nnmeter
