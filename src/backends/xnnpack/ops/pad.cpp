// PAD with zeros: XNNPACK's constant pad operator, or nothing when it folds into the convolution reading
// it (conv.cpp takes it from Lowering::pending_pads).
#include <algorithm>

#include "backends/xnnpack/ops/op.h"

namespace nnmeter::xnnpack {

namespace {

// XNNPACK folds a zero PAD of the spatial dims into the convolution that is its only reader (its
// subgraph's fusion pass); the delegate does the same, so a padded convolution is one operator.
bool pad_folds_into_conv(Lowering& cx, int pad_out) {
  const Slot& s = cx.slot(pad_out);
  if (s.consumers != 1 || s.shape.size() != 4) return false;
  for (size_t o = 0; o < cx.graph->operators()->size(); ++o) {
    const auto* op = cx.op_at(o);
    if (op->inputs()->size() < 1 || op->inputs()->Get(0) != pad_out) continue;
    const auto code = cx.code_at(o);
    if (const auto* c = op->builtin_options_as_Conv2DOptions(); code == tfl::BuiltinOperator_CONV_2D && c)
      return c->padding() == tfl::Padding_VALID;
    if (const auto* d = op->builtin_options_as_DepthwiseConv2DOptions(); code == tfl::BuiltinOperator_DEPTHWISE_CONV_2D && d)
      return d->padding() == tfl::Padding_VALID;
    return false;
  }
  return false;
}

void lower_pad(Lowering& cx, const OpNode& n) {
  const std::string& name = n.name;
  const std::vector<int>& in = n.in;
  const int out = n.out[0];
  cx.arg(n, 1);
  if (in.size() > 2 && in[2] >= 0) cx.need(cx.ints(in[2], name, out).at(0) == 0, name, out, "only zero padding is supported");
  const Shape& xs = cx.slot(in[0]).shape;
  const std::vector<int32_t> p = cx.ints(in[1], name, out);
  cx.need(p.size() == 2 * xs.size() && std::all_of(p.begin(), p.end(), [](int32_t v) { return v >= 0; }), name, out,
          "paddings must be a non-negative [rank, 2] constant");
  cx.need(cx.slot(out).shape.size() == xs.size(), name, out, "input and output ranks differ");
  for (size_t i = 0; i < xs.size(); ++i)
    cx.need(xs[i] + p[2 * i] + p[2 * i + 1] == cx.slot(out).shape[i], name, out, "padded shape differs");
  if (xs.size() == 4 && p[0] == 0 && p[1] == 0 && p[6] == 0 && p[7] == 0 && pad_folds_into_conv(cx, out)) {
    cx.pending_pads[out] = {in[0], {static_cast<uint32_t>(p[2]), static_cast<uint32_t>(p[5]), static_cast<uint32_t>(p[3]),
                                    static_cast<uint32_t>(p[4])}};
    return;
  }
  std::vector<size_t> shape(xs.begin(), xs.end()), pre, post;
  for (size_t i = 0; i < xs.size(); ++i) pre.push_back(static_cast<size_t>(p[2 * i])), post.push_back(static_cast<size_t>(p[2 * i + 1]));
  static const uint32_t zero = 0;
  xnn_operator_t handle = nullptr;
  cx.check(xnn_create_constant_pad_nd_x32(&zero, 0, &handle), name, out, "xnn_create_constant_pad_nd_x32");
  cx.add("constant_pad_nd_x32", name, out, handle);
  cx.check(xnn_setup_constant_pad_nd_x32(handle, shape.size(), shape.data(), pre.data(), post.data(), cx.ptr(in[0]), cx.ptr(out), cx.pool),
           name, out, "xnn_setup_constant_pad_nd_x32");
}

const OpRegistration pad_ops({
    {tfl::BuiltinOperator_PAD, lower_pad},
});

}  // namespace

}  // namespace nnmeter::xnnpack
