// The ops that move whole rows of a tensor, lowered to XNNPACK's strided copy operator: CONCATENATION,
// SPLIT, SPLIT_V, SLICE (of one axis) and RESHAPE.
#include "backends/xnnpack/ops/op.h"

namespace nnmeter::xnnpack {

namespace {

// A strided copy of `rows` rows of `width` floats.
void copy(Lowering& cx, const std::string& name, const float* src, size_t src_stride, float* dst, size_t dst_stride, size_t rows,
          size_t width, int out) {
  xnn_operator_t handle = nullptr;
  cx.check(xnn_create_copy_nc_x32(width, src_stride, dst_stride, 0, &handle), name, out, "xnn_create_copy_nc_x32");
  cx.add("copy_nc_x32", name, out, handle);
  cx.check(xnn_setup_copy_nc_x32(handle, rows, src, dst, cx.pool), name, out, "xnn_setup_copy_nc_x32");
}

// Rows (dims before `axis`) and row widths (dims from `axis` on) of a shape.
std::pair<size_t, size_t> rows_and_width(const Shape& s, size_t axis) {
  size_t rows = 1, width = 1;
  for (size_t i = 0; i < s.size(); ++i) (i < axis ? rows : width) *= static_cast<size_t>(s[i]);
  return {rows, width};
}

size_t axis_of(const Lowering& cx, int32_t axis, size_t rank, const std::string& name, int out) {
  const int32_t a = axis < 0 ? axis + static_cast<int32_t>(rank) : axis;
  cx.need(a >= 0 && static_cast<size_t>(a) < rank, name, out, "axis out of range");
  return static_cast<size_t>(a);
}

void lower_concat(Lowering& cx, const OpNode& n) {
  const std::string& name = n.name;
  const int out = n.out[0];
  const auto* o = n.op->builtin_options_as_ConcatenationOptions();
  cx.need(o != nullptr && !n.in.empty(), name, out, "has no ConcatenationOptions");
  const Shape& ys = cx.slot(out).shape;
  const size_t axis = axis_of(cx, o->axis(), ys.size(), name, out);
  const auto [rows, out_width] = rows_and_width(ys, axis);
  size_t offset = 0;
  for (int x : n.in) {
    cx.need(x >= 0 && cx.slot(x).shape.size() == ys.size(), name, out, "inputs of different ranks");
    const auto [r, width] = rows_and_width(cx.slot(x).shape, axis);
    cx.need(r == rows && offset + width <= out_width, name, out, "input shapes do not concatenate to the output");
    copy(cx, name, cx.ptr(x), width, cx.ptr(out) + offset, out_width, rows, width, out);
    offset += width;
  }
  cx.need(offset == out_width, name, out, "input shapes do not concatenate to the output");
  if (o->fused_activation_function() != tfl::ActivationFunctionType_NONE) clamp(cx, name, out, out, o->fused_activation_function());
}

void split(Lowering& cx, const std::string& name, int x, const std::vector<int32_t>& axis_value, const std::vector<int>& outs) {
  const Shape& xs = cx.slot(x).shape;
  cx.need(axis_value.size() == 1, name, outs[0], "the axis must be one value");
  const size_t axis = axis_of(cx, axis_value[0], xs.size(), name, outs[0]);
  const auto [rows, in_width] = rows_and_width(xs, axis);
  size_t offset = 0;
  for (int y : outs) {
    const auto [r, width] = rows_and_width(cx.slot(y).shape, axis);
    cx.need(r == rows && offset + width <= in_width && cx.slot(y).shape.size() == xs.size(), name, y, "output shapes do not split the input");
    copy(cx, name, cx.ptr(x) + offset, in_width, cx.ptr(y), width, rows, width, y);
    offset += width;
  }
  cx.need(offset == in_width, name, outs[0], "output shapes do not split the input");
}

// Operands are checked last to first (here and in SLICE), as the engine always has: a file with several
// faults keeps its message.
void lower_split(Lowering& cx, const OpNode& n) {
  const std::vector<int32_t> axis = cx.ints(cx.arg(n, 0), n.name, n.out[0]);
  split(cx, n.name, cx.arg(n, 1), axis, n.out);
}

void lower_split_v(Lowering& cx, const OpNode& n) {
  const std::vector<int32_t> axis = cx.ints(cx.arg(n, 2), n.name, n.out[0]);
  split(cx, n.name, cx.arg(n, 0), axis, n.out);
}

// A static reshape is a copy in XNNPACK (its subgraph lowers it to the copy operator).
void reshape(Lowering& cx, const std::string& name, int x, int out) {
  const auto n = static_cast<size_t>(numel_of(cx.slot(out).shape));
  cx.need(static_cast<size_t>(numel_of(cx.slot(x).shape)) == n, name, out, "element counts differ");
  copy(cx, name, cx.ptr(x), n, cx.ptr(out), n, 1, n, out);
}

void lower_reshape(Lowering& cx, const OpNode& n) { reshape(cx, n.name, cx.arg(n, 0), n.out[0]); }

// SLICE of one axis, the others whole (a chunk of channels): a region copy, as split.
void lower_slice(Lowering& cx, const OpNode& n) {
  const std::string& name = n.name;
  const int out = n.out[0];
  const std::vector<int32_t> size = cx.ints(cx.arg(n, 2), name, out);
  const std::vector<int32_t> begin = cx.ints(cx.arg(n, 1), name, out);
  const int x = cx.arg(n, 0);
  const Shape& xs = cx.slot(x).shape;
  cx.need(begin.size() == xs.size() && size.size() == xs.size() && cx.slot(out).shape.size() == xs.size(), name, out,
          "begin and size must have the input's rank");
  size_t axis = xs.size();
  for (size_t i = 0; i < xs.size(); ++i) {
    const int64_t len = size[i] == -1 ? xs[i] - begin[i] : size[i];
    cx.need(begin[i] >= 0 && len >= 0 && begin[i] + len <= xs[i] && len == cx.slot(out).shape[i], name, out,
            "begin and size do not fit the input and output");
    if (len == xs[i]) continue;
    cx.need(axis == xs.size(), name, out, "only a slice of one axis is lowered");
    axis = i;
  }
  if (axis == xs.size()) return reshape(cx, name, x, out);  // the whole tensor: a copy
  const auto [rows, in_width] = rows_and_width(xs, axis);
  const auto [r, width] = rows_and_width(cx.slot(out).shape, axis);
  const size_t inner = in_width / static_cast<size_t>(xs[axis]);
  copy(cx, name, cx.ptr(x) + static_cast<size_t>(begin[axis]) * inner, in_width, cx.ptr(out), width, rows, width, out);
}

const OpRegistration copy_ops({
    {tfl::BuiltinOperator_CONCATENATION, lower_concat},
    {tfl::BuiltinOperator_SPLIT, lower_split},
    {tfl::BuiltinOperator_SPLIT_V, lower_split_v},
    {tfl::BuiltinOperator_SLICE, lower_slice},
    {tfl::BuiltinOperator_RESHAPE, lower_reshape},
});

}  // namespace

}  // namespace nnmeter::xnnpack
