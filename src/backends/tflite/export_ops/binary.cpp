// Add, Sub, Mul, Div as ADD, SUB, MUL (Div by a constant as MUL by its reciprocal), a following Relu/Clip
// fused; Mul(x, HardSigmoid(x)) as HARD_SWISH (activations.cpp leaves that HardSigmoid to it).
#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

namespace {

using onnx_io::HostTensor;

// Constant `c` (ONNX value `name`) as an operand of an element-wise op with output `out`: broadcast to its
// rank and laid out like it, in a tensor named `as`.
int broadcast_constant(ExportContext& cx, const std::string& name, const HostTensor& c, const Ref& out,
                       const std::string& as) {
  Shape shape = c.dims;
  if (shape.size() > out.shape.size()) cx.fail_value(name, "constant of higher rank than the result");
  shape.insert(shape.begin(), out.shape.size() - shape.size(), 1);
  std::vector<float> data = c.to_floats();
  if (out.nhwc) {
    data = permute(shape, data, kToNhwc);
    shape = {shape[0], shape[2], shape[3], shape[1]};
  }
  return cx.const_f32(as, shape, data);  // `shape` is already in stored order
}

void binary(ExportContext& cx, const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Mul") {
    for (int side = 0; side < 2; ++side)
      if (const int hs = hardswish_partner(cx, n, side); hs >= 0) {
        const Ref in = cx.ref(n.input(1 - side));
        const Ref& r = cx.define(n.output(0));
        cx.add_op(tfl::BuiltinOperator_HARD_SWISH, {in.tensor}, {r.tensor}, tfl::BuiltinOptions_HardSwishOptions,
                  tfl::CreateHardSwishOptions(cx.fbb()).Union());
        return;
      }
  }
  const bool c0 = cx.is_const(n.input(0)), c1 = cx.is_const(n.input(1));
  if (c0 && c1) cx.fail(n, "both operands are constants");
  if (op == "Div" && !c1) cx.fail(n, "only division by a constant is exported (as a multiplication)");
  if (op == "Sub" && c0) cx.fail(n, "only subtraction of a constant from a computed tensor is exported");
  std::string out = n.output(0);
  const bool fuse = op == "Add" || op == "Mul" || op == "Sub";
  const auto act = fuse ? cx.take_activation(out) : tfl::ActivationFunctionType_NONE;
  const Ref& r = cx.define(out, act != tfl::ActivationFunctionType_NONE);
  std::vector<int> operands;
  for (int i = 0; i < 2; ++i) {
    const std::string& name = n.input(i);
    if (cx.is_const(name)) {
      if (op == "Div") {
        HostTensor inv = *cx.value(name).constant;
        for (auto& v : inv.data) v = 1.0 / v;
        operands.push_back(broadcast_constant(cx, name, inv, r, name + "_reciprocal"));
      } else {
        operands.push_back(broadcast_constant(cx, name, *cx.value(name).constant, r, name));
      }
      continue;
    }
    const Ref& in = cx.ref(name);
    if (in.shape.size() != r.shape.size()) cx.fail(n, "operands of different ranks are exported only when one is a constant");
    operands.push_back(in.tensor);
  }
  if (op == "Add")
    cx.add_op(tfl::BuiltinOperator_ADD, operands, {r.tensor}, tfl::BuiltinOptions_AddOptions,
              tfl::CreateAddOptions(cx.fbb(), act).Union());
  else if (op == "Sub")
    cx.add_op(tfl::BuiltinOperator_SUB, operands, {r.tensor}, tfl::BuiltinOptions_SubOptions,
              tfl::CreateSubOptions(cx.fbb(), act).Union());
  else
    cx.add_op(tfl::BuiltinOperator_MUL, operands, {r.tensor}, tfl::BuiltinOptions_MulOptions,
              tfl::CreateMulOptions(cx.fbb(), act).Union());
}

const ExportRegistration binary_ops({{"Add", binary}, {"Sub", binary}, {"Mul", binary}, {"Div", binary}});

}  // namespace

}  // namespace nnmeter::tflite
