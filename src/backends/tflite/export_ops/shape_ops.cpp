// Ops that only rearrange their input: Flatten, Reshape, Squeeze, Unsqueeze as RESHAPE, Transpose as one
// TRANSPOSE, and Dropout and Identity as the input tensor itself.
#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

namespace {

// Reshapes follow ONNX's (NCHW) element order: from NHWC to NCHW first, and back when 4-D again.
void reshape(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  const Shape& shape = cx.value(n.output(0)).shape;
  const int src = cx.as_nchw(in, true);
  const bool nhwc = shape.size() == 4;
  const bool direct = !nhwc || shape[2] * shape[3] == 1;  // NHWC with H = W = 1 has NCHW's byte order
  const std::string out = n.output(0);
  const int target = direct ? cx.define(out, in.nonnegative).tensor : cx.add_tensor(out + "_nchw", shape, false);
  std::vector<int32_t> dims = cx.stored_shape(target);
  cx.add_op(tfl::BuiltinOperator_RESHAPE, {src, cx.const_i32("shape", dims)}, {target}, tfl::BuiltinOptions_ReshapeOptions,
            tfl::CreateReshapeOptionsDirect(cx.fbb(), &dims).Union());
  if (direct) return;
  const Ref& r = cx.define(out, in.nonnegative);
  cx.add_op(tfl::BuiltinOperator_TRANSPOSE, {target, cx.const_i32("perm", {0, 2, 3, 1})}, {r.tensor},
            tfl::BuiltinOptions_TransposeOptions, tfl::CreateTransposeOptions(cx.fbb()).Union());
}

// One TRANSPOSE from the stored input layout straight to the stored output layout.
void transpose(ExportContext& cx, const onnx::NodeProto& n) {
  const Ref in = cx.ref(n.input(0));
  const size_t rank = in.shape.size();
  std::vector<int64_t> perm = cx.attr_ints(n, "perm", {});
  if (perm.empty())
    for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
  const Ref& r = cx.define(n.output(0), in.nonnegative);
  std::vector<int32_t> q(rank);
  for (size_t j = 0; j < rank; ++j) {
    const int64_t onnx_out_dim = r.nhwc ? kToNhwc[j] : static_cast<int64_t>(j);
    const int64_t onnx_in_dim = perm[static_cast<size_t>(onnx_out_dim)];
    q[j] = static_cast<int32_t>(in.nhwc ? kFromNhwc[static_cast<size_t>(onnx_in_dim)] : onnx_in_dim);
  }
  cx.add_op(tfl::BuiltinOperator_TRANSPOSE, {in.tensor, cx.const_i32("perm", q)}, {r.tensor}, tfl::BuiltinOptions_TransposeOptions,
            tfl::CreateTransposeOptions(cx.fbb()).Union());
}

void same_tensor(ExportContext& cx, const onnx::NodeProto& n) { cx.bind(n.output(0), cx.ref(n.input(0))); }

const ExportRegistration shape_ops({{"Flatten", reshape},
                                    {"Reshape", reshape},
                                    {"Squeeze", reshape},
                                    {"Unsqueeze", reshape},
                                    {"Transpose", transpose},
                                    {"Dropout", same_tensor},
                                    {"Identity", same_tensor}});

}  // namespace

}  // namespace nnmeter::tflite
