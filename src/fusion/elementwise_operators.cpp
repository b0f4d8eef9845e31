// bn ([C, H, W]), relu, relu6 (Clip 0..6), sigmoid, hswish (x · HardSigmoid(x), opset 13), swish (x ·
// Sigmoid(x), SiLU as PyTorch exports it; not one of nn-Meter's), add (two inputs of the same shape), and
// ours for transformers: gelu, layernorm and softmax. All keep the input shape.
#include "fusion/operators.h"

namespace nnmeter::fusion {

namespace {

using Body = std::function<std::string(onnx_io::GraphBuilder&, const std::vector<std::string>&, const Shape&)>;

OpSpec same_shape_spec(const std::string& name, bool two_inputs, Body body, size_t rank = 0) {
  OpSpec spec;
  spec.name = name;
  spec.two_inputs = two_inputs;
  spec.shape = [name, rank](const OpParams&, const Shape& in) {
    if (rank != 0) require_rank(name, in, rank);
    if (in.empty()) require_rank(name, in, 1);
    return in;
  };
  spec.body = [body](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams&, const Shape& in, int64_t) {
    return std::vector<std::string>{body(g, x, in)};
  };
  return spec;
}

}  // namespace

std::vector<OpSpec> elementwise_operator_specs() {
  using G = onnx_io::GraphBuilder;
  using In = const std::vector<std::string>&;
  return {
      same_shape_spec("bn", false, [](G& g, In x, const Shape& in) { return onnx_io::batch_norm(g, x[0], in[0]); }, 3),
      same_shape_spec("relu", false, [](G& g, In x, const Shape&) { return onnx_io::relu(g, x[0]); }),
      same_shape_spec("relu6", false, [](G& g, In x, const Shape&) { return onnx_io::relu6(g, x[0]); }),
      same_shape_spec("sigmoid", false, [](G& g, In x, const Shape&) { return g.node1("Sigmoid", {x[0]}); }),
      same_shape_spec("hswish", false, [](G& g, In x, const Shape&) { return onnx_io::hswish(g, x[0]); }),
      same_shape_spec("swish", false, [](G& g, In x, const Shape&) { return onnx_io::swish(g, x[0]); }),
      same_shape_spec("add", true, [](G& g, In x, const Shape&) { return g.node1("Add", {x[0], x[1]}); }),
      // Ours, over the last axis as transformers apply them to tokens (onnx_io/builder.h).
      same_shape_spec("gelu", false, [](G& g, In x, const Shape&) { return onnx_io::gelu(g, x[0]); }),
      same_shape_spec("layernorm", false,
                      [](G& g, In x, const Shape& in) { return onnx_io::layer_norm(g, x[0], in.back()); }),
      same_shape_spec("softmax", false,
                      [](G& g, In x, const Shape&) { return g.node1("Softmax", {x[0]}, {onnx_io::attr_int("axis", -1)}); }),
  };
}

}  // namespace nnmeter::fusion
