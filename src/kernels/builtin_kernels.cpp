// The builtin kernel table: 30 kernels in nn-Meter's listing order, each with its family's sampler and
// parser.
#include <functional>

#include "kernels/builtin.h"
#include "kernels/config_check.h"
#include "kernels/feature_parsers.h"
#include "sampling/builtin_samplers.h"

namespace nnmeter {

namespace kernels {

namespace {

// FNV-1a: the weight seed depends only on the kernel, config and batch, so the same config always gives
// byte-identical model files.
uint64_t weight_seed(const std::string& name, const KernelConfig& config, int64_t batch) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : name + "|" + config.dump() + "|" + std::to_string(batch)) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return h;
}

class BuiltinKernel : public Kernel {
 public:
  explicit BuiltinKernel(BuiltinKernelSpec spec) : spec_(std::move(spec)) {}

  std::vector<Shape> input_tensor_shape(const KernelConfig& config) const override { return spec_.inputs(config); }

  std::string build_onnx(const KernelConfig& config, int batch_size) const override {
    kcheck::check_batch(batch_size);
    std::vector<Shape> shapes = spec_.inputs(config);
    for (const auto& s : shapes) kcheck::check_tensor(spec_.name, "input", batch_size, s);
    onnxb::GraphBuilder g(spec_.name, weight_seed(spec_.name, config, batch_size));
    std::vector<std::string> inputs;
    for (const auto& s : shapes) inputs.push_back(g.input(with_batch(batch_size, s)));
    spec_.body(g, inputs, config, batch_size);
    return g.finish_serialized();
  }

 private:
  BuiltinKernelSpec spec_;
};

std::vector<BuiltinKernelSpec> all_specs() {
  std::vector<BuiltinKernelSpec> all = conv_kernel_specs();
  auto pools = pool_kernel_specs();           // maxpool, avgpool, global-avgpool
  auto structural = structural_kernel_specs();  // fc, concat, split, channelshuffle, se
  auto elementwise = elementwise_kernel_specs();  // bnrelu, bn, hswish, swish, relu, addrelu, add
  // nn-Meter's listing order: maxpool, avgpool, fc, concat, split, channelshuffle, se, global-avgpool, ...
  all.push_back(pools[0]);
  all.push_back(pools[1]);
  all.insert(all.end(), structural.begin(), structural.end());
  all.push_back(pools[2]);
  all.insert(all.end(), elementwise.begin(), elementwise.end());
  return all;
}

}  // namespace

std::unique_ptr<Kernel> make_kernel(const BuiltinKernelSpec& spec) { return std::make_unique<BuiltinKernel>(spec); }

}  // namespace kernels

std::vector<KernelInfo> builtin_kernels() {
  std::vector<KernelInfo> out;
  for (auto& spec : kernels::all_specs()) {
    KernelInfo info;
    info.name = spec.name;
    info.customized = false;
    info.implement = "onnx";
    info.create = [spec](const Json& predictorbuild_config) {
      KernelSuite suite;
      suite.name = spec.name;
      suite.kernel = kernels::make_kernel(spec);
      suite.sampler = sampling::make_sampler(spec.family, spec.name, predictorbuild_config);
      suite.parser = kernels::make_parser(spec.name, spec.family);
      return suite;
    };
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace nnmeter
