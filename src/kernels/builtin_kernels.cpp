// The builtin kernel table: nn-Meter's 30 kernels in its listing order, then ours (sampling/builtin_suites.cpp gives each
// its family's sampler and parser).
#include <functional>

#include "common/hash.h"
#include "kernels/builtin.h"
#include "kernels/config_check.h"

namespace nnmeter::kernels {

namespace {

// The weight seed depends only on the kernel, config and batch, so the same config always gives
// byte-identical model files.
uint64_t weight_seed(const std::string& name, const KernelConfig& config, int64_t batch) {
  return fnv1a(name + "|" + config.dump() + "|" + std::to_string(batch));
}

class BuiltinKernel : public Kernel {
 public:
  explicit BuiltinKernel(BuiltinKernelSpec spec) : spec_(std::move(spec)) {}

  std::vector<Shape> input_tensor_shape(const KernelConfig& config) const override { return spec_.inputs(config); }

  std::string build_onnx(const KernelConfig& config, int batch_size) const override {
    check::check_batch(batch_size);
    std::vector<Shape> shapes = spec_.inputs(config);
    for (const auto& s : shapes) check::check_tensor(spec_.name, "input", batch_size, s);
    onnx_io::GraphBuilder g(spec_.name, weight_seed(spec_.name, config, batch_size));
    std::vector<std::string> inputs;
    for (const auto& s : shapes) inputs.push_back(g.input(with_batch(batch_size, s)));
    spec_.body(g, inputs, config, batch_size);
    return g.finish_serialized();
  }

 private:
  BuiltinKernelSpec spec_;
};

}  // namespace

std::unique_ptr<Kernel> make_kernel(const BuiltinKernelSpec& spec) { return std::make_unique<BuiltinKernel>(spec); }

std::vector<BuiltinKernelSpec> builtin_kernel_specs() {
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
  // Ours, after nn-Meter's 30 so its listing stays as it was.
  auto swish = swish_conv_kernel_specs();  // conv-bn-swish, dwconv-bn-swish
  all.insert(all.end(), swish.begin(), swish.end());
  auto transformer = transformer_kernel_specs();
  all.insert(all.end(), transformer.begin(), transformer.end());
  auto grouped = grouped_conv_kernel_specs();  // gconv-bn-relu
  all.insert(all.end(), grouped.begin(), grouped.end());
  return all;
}

}  // namespace nnmeter::kernels
