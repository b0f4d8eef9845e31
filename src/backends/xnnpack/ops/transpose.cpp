// TRANSPOSE: XNNPACK's channel shuffle when it is the middle of ONNX's channel shuffle, else a
// hand-written gather.
#include "backends/xnnpack/ops/op.h"

namespace nnmeter::xnnpack {

namespace {

// The one op reading tensor `t` (as its first input), or -1.
int sole_reader(Lowering& cx, int t) {
  if (t < 0 || cx.slot(t).consumers != 1) return -1;
  for (size_t o = 0; o < cx.graph->operators()->size(); ++o)
    if (cx.op_at(o)->inputs()->size() >= 1 && cx.op_at(o)->inputs()->Get(0) == t) return static_cast<int>(o);
  return -1;
}

// Op `o` when it is `code` with one output (and, for a TRANSPOSE, the constant permutation `perm`).
bool is_op(Lowering& cx, int o, tfl::BuiltinOperator code, const std::vector<int32_t>& perm = {}) {
  if (o < 0 || cx.code_at(static_cast<size_t>(o)) != code || cx.op_at(static_cast<size_t>(o))->outputs()->size() != 1) return false;
  if (perm.empty()) return true;
  const auto* in = cx.op_at(static_cast<size_t>(o))->inputs();
  if (in->size() != 2 || in->Get(1) < 0 || !cx.slot(in->Get(1)).constant) return false;
  return cx.ints(in->Get(1), "TRANSPOSE", -1) == perm;
}

int output_of(const Lowering& cx, int o) { return cx.op_at(static_cast<size_t>(o))->outputs()->Get(0); }

// ONNX's channel shuffle (Reshape to [N, g, C/g, H, W], Transpose(0, 2, 1, 3, 4), Reshape back) reaches
// the .tflite between the layout transposes NHWC -> NCHW and back: five ops that are XNNPACK's channel
// shuffle operator on the NHWC tensor, the operator XNNPACK has for ShuffleNet.
bool channel_shuffle(Lowering& cx, size_t o) {
  const int first = static_cast<int>(o);
  if (!is_op(cx, first, tfl::BuiltinOperator_TRANSPOSE, {0, 3, 1, 2})) return false;
  const int x = cx.op_at(o)->inputs()->Get(0);
  const int r1 = sole_reader(cx, output_of(cx, first));
  if (!is_op(cx, r1, tfl::BuiltinOperator_RESHAPE)) return false;
  const int t2 = sole_reader(cx, output_of(cx, r1));
  if (!is_op(cx, t2, tfl::BuiltinOperator_TRANSPOSE, {0, 2, 1, 3, 4})) return false;
  const int r3 = sole_reader(cx, output_of(cx, t2));
  if (!is_op(cx, r3, tfl::BuiltinOperator_RESHAPE)) return false;
  const int t4 = sole_reader(cx, output_of(cx, r3));
  if (!is_op(cx, t4, tfl::BuiltinOperator_TRANSPOSE, {0, 2, 3, 1})) return false;
  if (!(first < r1 && r1 < t2 && t2 < r3 && r3 < t4)) return false;
  const int y = output_of(cx, t4);
  const Shape& xs = cx.slot(x).shape;
  const Shape& split = cx.slot(output_of(cx, r1)).shape;
  if (xs.size() != 4 || cx.slot(y).shape != xs || split.size() != 5) return false;
  const int64_t n = xs[0], h = xs[1], w = xs[2], c = xs[3];
  if (split[0] != n || split[1] * split[2] != c || split[3] != h || split[4] != w || cx.slot(output_of(cx, r3)).shape != Shape{n, c, h, w})
    return false;
  const auto groups = static_cast<size_t>(split[1]), per_group = static_cast<size_t>(split[2]);
  if (groups < 2 || per_group < 1) return false;
  xnn_operator_t handle = nullptr;
  cx.check(xnn_create_channel_shuffle_nc_x32(groups, per_group, static_cast<size_t>(c), static_cast<size_t>(c), 0, &handle), "TRANSPOSE",
           y, "xnn_create_channel_shuffle_nc_x32");
  cx.add("channel_shuffle_nc_x32", "TRANSPOSE", y, handle).fused = {"RESHAPE", "TRANSPOSE", "RESHAPE", "TRANSPOSE"};
  cx.check(xnn_setup_channel_shuffle_nc_x32(handle, static_cast<size_t>(n * h * w), cx.ptr(x), cx.ptr(y), cx.pool), "TRANSPOSE", y,
           "xnn_setup_channel_shuffle_nc_x32");
  cx.absorbed.insert({static_cast<size_t>(r1), static_cast<size_t>(t2), static_cast<size_t>(r3), static_cast<size_t>(t4)});
  return true;
}

// Hand-written: this XNNPACK has no transpose operator (neither in its operator nor its subgraph API).
// Our export only emits transposes where ONNX's NCHW element order meets NHWC (flattening a feature map,
// channel shuffles); a strided gather over the output is what the later XNNPACK operator does too.
void transpose(Lowering& cx, const std::string& name, int x, const std::vector<int32_t>& perm, int out) {
  const Shape& xs = cx.slot(x).shape;
  const size_t rank = xs.size();
  cx.need(perm.size() == rank && rank >= 1 && rank <= 6, name, out, "perm does not match the input's rank (1 to 6)");
  Shape ys(rank), in_strides(rank, 1), strides(rank);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * xs[i];
  std::vector<bool> seen(rank, false);
  for (size_t j = 0; j < rank; ++j) {
    cx.need(perm[j] >= 0 && static_cast<size_t>(perm[j]) < rank && !seen[static_cast<size_t>(perm[j])], name, out,
            "perm is not a permutation");
    seen[static_cast<size_t>(perm[j])] = true;
    ys[j] = xs[static_cast<size_t>(perm[j])];
    strides[j] = in_strides[static_cast<size_t>(perm[j])];
  }
  cx.need(ys == cx.slot(out).shape, name, out, "the transposed shape is not the output's");
  const float* src = cx.ptr(x);
  float* dst = cx.ptr(out);
  const auto total = static_cast<size_t>(numel_of(ys));
  Step& s = cx.add("transpose", name, out, nullptr);
  s.run = [src, dst, total, ys, strides, rank] {
    // The innermost output dimension is the loop; the outer ones advance an index counter.
    const auto inner = static_cast<size_t>(ys[rank - 1]);
    const auto inner_stride = static_cast<size_t>(strides[rank - 1]);
    std::array<int64_t, 6> idx{};
    for (size_t o = 0; o < total; o += inner) {
      size_t base = 0;
      for (size_t j = 0; j + 1 < rank; ++j) base += static_cast<size_t>(idx[j] * strides[j]);
      for (size_t i = 0; i < inner; ++i) dst[o + i] = src[base + i * inner_stride];
      for (size_t j = rank - 1; j-- > 0;) {
        if (++idx[j] < ys[j]) break;
        idx[j] = 0;
      }
    }
  };
}

void lower_transpose(Lowering& cx, const OpNode& n) {
  if (channel_shuffle(cx, n.index)) return;
  const std::vector<int32_t> perm = cx.ints(cx.arg(n, 1), n.name, n.out[0]);
  transpose(cx, n.name, cx.arg(n, 0), perm, n.out[0]);
}

const OpRegistration transpose_ops({
    {tfl::BuiltinOperator_TRANSPOSE, lower_transpose},
});

}  // namespace

}  // namespace nnmeter::xnnpack
