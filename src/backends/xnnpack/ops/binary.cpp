// ADD, SUB and MUL, broadcasting as numpy does (XNNPACK's nd operators).
#include <algorithm>

#include "backends/xnnpack/ops/op.h"

namespace nnmeter::xnnpack {

namespace {

void lower_binary(Lowering& cx, const OpNode& n) {
  const std::string& name = n.name;
  const std::vector<int>& in = n.in;
  const int out = n.out[0];
  const tfl::BuiltinOperator code = n.code;
  cx.need(in.size() == 2 && in[1] >= 0, name, out, "needs two operands");
  auto act = tfl::ActivationFunctionType_NONE;
  if (const auto* o = n.op->builtin_options_as_AddOptions()) act = o->fused_activation_function();
  if (const auto* o = n.op->builtin_options_as_SubOptions()) act = o->fused_activation_function();
  if (const auto* o = n.op->builtin_options_as_MulOptions()) act = o->fused_activation_function();
  const auto [lo, hi] = clamp_of(act);
  std::vector<size_t> a(cx.slot(in[0]).shape.begin(), cx.slot(in[0]).shape.end()), b(cx.slot(in[1]).shape.begin(), cx.slot(in[1]).shape.end());
  cx.need(a.size() <= XNN_MAX_TENSOR_DIMS && b.size() <= XNN_MAX_TENSOR_DIMS, name, out, "operands of more than 6 dimensions");
  xnn_operator_t handle = nullptr;
  const char* kind = code == tfl::BuiltinOperator_ADD ? "add_nd_f32" : code == tfl::BuiltinOperator_SUB ? "subtract_nd_f32" : "multiply_nd_f32";
  if (code == tfl::BuiltinOperator_ADD) cx.check(xnn_create_add_nd_f32(lo, hi, 0, &handle), name, out, "xnn_create_add_nd_f32");
  if (code == tfl::BuiltinOperator_SUB) cx.check(xnn_create_subtract_nd_f32(lo, hi, 0, &handle), name, out, "xnn_create_subtract_nd_f32");
  if (code == tfl::BuiltinOperator_MUL) cx.check(xnn_create_multiply_nd_f32(lo, hi, 0, &handle), name, out, "xnn_create_multiply_nd_f32");
  cx.add(kind, name, out, handle, act);
  // The broadcast result must be the file's output shape.
  Shape result(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < result.size(); ++i) {
    const size_t r = result.size() - 1 - i;
    const int64_t da = i < a.size() ? static_cast<int64_t>(a[a.size() - 1 - i]) : 1, db = i < b.size() ? static_cast<int64_t>(b[b.size() - 1 - i]) : 1;
    cx.need(da == db || da == 1 || db == 1, name, out, "operand shapes do not broadcast");
    result[r] = std::max(da, db);
  }
  cx.need(result == cx.slot(out).shape, name, out, "the broadcast shape is not the output's");
  xnn_status s = xnn_status_success;
  float *x = cx.ptr(in[0]), *y = cx.ptr(in[1]), *z = cx.ptr(out);
  if (code == tfl::BuiltinOperator_ADD) s = xnn_setup_add_nd_f32(handle, a.size(), a.data(), b.size(), b.data(), x, y, z, cx.pool);
  if (code == tfl::BuiltinOperator_SUB) s = xnn_setup_subtract_nd_f32(handle, a.size(), a.data(), b.size(), b.data(), x, y, z, cx.pool);
  if (code == tfl::BuiltinOperator_MUL) s = xnn_setup_multiply_nd_f32(handle, a.size(), a.data(), b.size(), b.data(), x, y, z, cx.pool);
  cx.check(s, name, out, "xnn_setup_*_nd_f32");
}

const OpRegistration binary_ops({
    {tfl::BuiltinOperator_ADD, lower_binary},
    {tfl::BuiltinOperator_SUB, lower_binary},
    {tfl::BuiltinOperator_MUL, lower_binary},
});

}  // namespace

}  // namespace nnmeter::xnnpack
