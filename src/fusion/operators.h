// The builtin fusion-rule operators (nn-Meter's 18, then ours: swish, channelshuffle, linear, gelu, layernorm,
// softmax): each is a shape rule and an ONNX body, emitted with the same GraphBuilder idioms as the builtin
// kernels so every backend that runs the kernels runs them.
// Shapes are without batch: [C, H, W] for 3-D operators, [N] (or any rank) for the rest.
#pragma once

#include <functional>

#include "onnx_io/builder.h"
#include "nnmeter/fusion.h"

namespace nnmeter::fusion {

// The ruletest_config keys operators read (nn-Meter: COUT, KERNEL_SIZE, STRIDES, POOL_STRIDES).
struct OpParams {
  int64_t cout, kernel, stride, pool_stride;
  // The operator settings of RuleTestConfig (its defaults for missing keys, its checks).
  static OpParams from_config(const Json& ruletest_config);
};

struct OpSpec {
  std::string name;
  bool two_inputs = false;
  // Output shape for an input shape; throws Error for an input the operator cannot take.
  std::function<Shape(const OpParams&, const Shape&)> shape;
  // Adds the operator's nodes reading `inputs` (batched tensors of `in` = the unbatched input shape);
  // returns its outputs, each of the output shape (split returns both halves).
  std::function<std::vector<std::string>(onnx_io::GraphBuilder&, const std::vector<std::string>& inputs,
                                         const OpParams&, const Shape& in, int64_t batch)>
      body;
};

std::vector<OpSpec> conv_operator_specs();         // conv, dwconv, convtrans
std::vector<OpSpec> pool_operator_specs();         // globalavgpool, maxpool, avgpool
// bn, relu, relu6, sigmoid, hswish, swish, add, gelu, layernorm, softmax
std::vector<OpSpec> elementwise_operator_specs();
std::vector<OpSpec> structural_operator_specs();   // se, fc, reshape, concat, flatten, split, channelshuffle, linear

// A builtin operator configured from ruletest_config; Error for an unknown name.
std::unique_ptr<Operator> create_builtin_operator(const std::string& name, const Json& ruletest_config);

// Input checks shared by the operator files: one actionable line naming the operator.
// rank 0: any rank of at least 1.
void require_rank(const std::string& op, const Shape& in, size_t rank);
void require_even_first(const std::string& op, const Shape& in);

// [batch] + shape.
Shape batched(int64_t batch, const Shape& shape);

}  // namespace nnmeter::fusion
