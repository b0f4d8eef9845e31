// The one ONNX emitter of the project (float32, NCHW, opset 13 unless asked otherwise): the builtin kernels,
// the rule tester's operators and test cases, the backends' probe models and the test kit's model zoo all
// write their graphs through it. It keeps tensor names unique, stores weights as raw_data initializers drawn
// from a seeded generator (so model bytes depend only on the seed), and records the output shapes the
// caller computed so the serialized model is self-describing.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/rng.h"
#include "nnmeter/common.h"

namespace nnmeter::onnx_io {

inline constexpr int kOpset = 13;

using Attr = onnx::AttributeProto;
Attr attr_int(std::string name, int64_t v);
Attr attr_float(std::string name, float v);
Attr attr_ints(std::string name, std::vector<int64_t> v);
Attr attr_string(std::string name, std::string v);

class GraphBuilder {
 public:
  GraphBuilder(std::string graph_name, uint64_t weight_seed, int64_t opset = kOpset);

  // A graph input of float32 with a fixed shape; returns its name ("input", "input_1", … as nn-Meter's
  // torch export names them, or `name`).
  std::string input(const Shape& shape);
  std::string input(const std::string& name, const Shape& shape);
  // Without weights, random_weight's initializers have their shape and no data: a graph for detecting its
  // layers, not for running, without the hundreds of MB a large classifier's weights take.
  void set_weights(bool on) { weights_ = on; }
  // A float32 initializer filled uniformly in [lo, hi).
  std::string random_weight(const std::string& hint, const Shape& shape, float lo, float hi);
  // He-uniform conv/gemm weights, so activations stay in a sane range through a chain of kernels.
  std::string he_weight(const std::string& hint, const Shape& shape, int64_t fan_in);
  std::string float_const(const std::string& hint, const Shape& shape, const std::vector<float>& values);
  std::string int64_const(const std::string& hint, const std::vector<int64_t>& values);

  // Adds a node with `num_outputs` fresh outputs; returns their names.
  std::vector<std::string> node(const std::string& op, const std::vector<std::string>& inputs,
                                const std::vector<Attr>& attrs = {}, int num_outputs = 1);
  std::string node1(const std::string& op, const std::vector<std::string>& inputs, const std::vector<Attr>& attrs = {}) {
    return node(op, inputs, attrs, 1).front();
  }
  // Declares `name` a graph output of the given shape.
  void output(const std::string& name, const Shape& shape);

  // Moves the graph into a ModelProto (IR of this ONNX, opset 13). The builder is spent afterwards.
  onnx::ModelProto finish();
  std::string finish_serialized();
  // The model so far.
  const onnx::ModelProto& model() const { return model_; }

 private:
  std::string fresh(const std::string& hint);
  onnx::ModelProto model_;
  onnx::GraphProto* graph_;
  SplitMix64 rng_;
  int counter_ = 0;
  int inputs_ = 0;
  bool weights_ = true;
};

// Common layer blocks in NCHW. `x` has `channels` channels.
struct Conv2dSpec {
  int64_t cin, cout, kernel, stride, hw;  // hw: input height = width
  bool depthwise = false;
  int64_t groups = 1;  // a grouped conv's groups (depthwise: ignored, the groups are CIN)
};
// TF "same" padding: output ceil(hw/stride), extra padding at the end, written as explicit pads.
std::vector<int64_t> same_pads(int64_t hw, int64_t kernel, int64_t stride);
int64_t same_out(int64_t hw, int64_t stride);
std::string conv2d(GraphBuilder& g, const std::string& x, const Conv2dSpec& spec);
std::string batch_norm(GraphBuilder& g, const std::string& x, int64_t channels);
std::string relu(GraphBuilder& g, const std::string& x);
std::string relu6(GraphBuilder& g, const std::string& x);
// x * relu6(x + 3) / 6, written as x * HardSigmoid(x; 1/6, 0.5) because HardSwish needs opset 14.
std::string hswish(GraphBuilder& g, const std::string& x);
std::string swish(GraphBuilder& g, const std::string& x);

// Transformer blocks on token tensors [..., C], written as torch.onnx.export writes them at opset 13, so the
// builtin kernels and the rule tester's operators meet the graphs users' exports hold.
// LayerNorm over the last axis: ReduceMean → Sub → Pow 2 → ReduceMean → Add ε → Sqrt → Div → Mul γ → Add β.
std::string layer_norm(GraphBuilder& g, const std::string& x, int64_t channels);
// GELU, erf form: x · (1 + Erf(x / √2)) · 0.5 (Div, Erf, Add, Mul, Mul).
std::string gelu(GraphBuilder& g, const std::string& x);
// nn.Linear on tokens: MatMul by a [cin, cout] weight, then Add of a [cout] bias.
std::string linear(GraphBuilder& g, const std::string& x, int64_t cin, int64_t cout);

}  // namespace nnmeter::onnx_io
