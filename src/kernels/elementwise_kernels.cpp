// bnrelu, bn, hswish, swish, relu, addrelu, add on an [CIN, HW, HW] input. add and addrelu take two
// graph inputs (nn-Meter added a single input to itself, which lets a runtime skip one memory read).
#include "kernels/builtin.h"
#include "kernels/config_check.h"

namespace nnmeter::kernels {

namespace {

using Body = std::function<std::string(onnx_io::GraphBuilder&, const std::vector<std::string>&, int64_t cin)>;

BuiltinKernelSpec elementwise_spec(std::string name, int num_inputs, Body body) {
  BuiltinKernelSpec spec{name, Family::HwCin, {}, {}};
  auto read = [name](const KernelConfig& c) {
    int64_t hw = check::hw(c, name), cin = check::channels(c, name, "CIN");
    check::check_tensor(name, "input", 1, {cin, hw, hw});
    return std::pair{hw, cin};
  };
  spec.inputs = [read, num_inputs](const KernelConfig& c) {
    auto [hw, cin] = read(c);
    return std::vector<Shape>(static_cast<size_t>(num_inputs), Shape{cin, hw, hw});
  };
  spec.body = [read, body](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c,
                           int64_t batch) {
    auto [hw, cin] = read(c);
    g.output(body(g, in, cin), {batch, cin, hw, hw});
  };
  return spec;
}

}  // namespace

std::vector<BuiltinKernelSpec> elementwise_kernel_specs() {
  using G = onnx_io::GraphBuilder;
  using In = const std::vector<std::string>&;
  return {
      elementwise_spec("bnrelu", 1, [](G& g, In in, int64_t c) { return onnx_io::relu(g, onnx_io::batch_norm(g, in[0], c)); }),
      elementwise_spec("bn", 1, [](G& g, In in, int64_t c) { return onnx_io::batch_norm(g, in[0], c); }),
      elementwise_spec("hswish", 1, [](G& g, In in, int64_t) { return onnx_io::hswish(g, in[0]); }),
      elementwise_spec("swish", 1, [](G& g, In in, int64_t) { return onnx_io::swish(g, in[0]); }),
      elementwise_spec("relu", 1, [](G& g, In in, int64_t) { return onnx_io::relu(g, in[0]); }),
      elementwise_spec("addrelu", 2, [](G& g, In in, int64_t) { return onnx_io::relu(g, g.node1("Add", {in[0], in[1]})); }),
      elementwise_spec("add", 2, [](G& g, In in, int64_t) { return g.node1("Add", {in[0], in[1]}); }),
  };
}

}  // namespace nnmeter::kernels
