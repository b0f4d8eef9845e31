// GlobalAveragePool and ReduceMean as MEAN over the stored axes.
#include <algorithm>

#include "backends/tflite/export_ops/op.h"

namespace nnmeter::tflite {

namespace {

void mean(ExportContext& cx, const onnx::NodeProto& n, std::vector<int64_t> axes, bool keepdims) {
  const Ref in = cx.ref(n.input(0));
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<int32_t> stored;
  for (auto& a : axes) {
    if (a < 0) a += rank;
    stored.push_back(static_cast<int32_t>(in.nhwc ? kFromNhwc[static_cast<size_t>(a)] : a));
  }
  std::sort(stored.begin(), stored.end());
  if (!keepdims && in.nhwc) {
    // The dims that remain must keep ONNX's order for the result to need no layout of its own.
    std::vector<int64_t> kept_onnx, kept_stored;
    for (int64_t i = 0; i < rank; ++i) {
      if (std::find(axes.begin(), axes.end(), i) == axes.end()) kept_onnx.push_back(i);
      if (std::find(stored.begin(), stored.end(), i) == stored.end()) kept_stored.push_back(kToNhwc[static_cast<size_t>(i)]);
    }
    if (kept_onnx != kept_stored) cx.fail(n, "this reduction without keepdims reorders the remaining axes");
  }
  const Ref& r = cx.define(n.output(0));
  if (r.nhwc != (in.nhwc && keepdims)) cx.fail(n, "reduction result layout");
  cx.add_op(tfl::BuiltinOperator_MEAN, {in.tensor, cx.const_i32("axes", stored)}, {r.tensor}, tfl::BuiltinOptions_ReducerOptions,
            tfl::CreateReducerOptions(cx.fbb(), keepdims).Union());
}

void global_average_pool(ExportContext& cx, const onnx::NodeProto& n) { mean(cx, n, {2, 3}, true); }

void reduce_mean(ExportContext& cx, const onnx::NodeProto& n) {
  std::vector<int64_t> axes = cx.attr_ints(n, "axes", {});
  if (n.input_size() > 1 && !n.input(1).empty()) axes = cx.value(n.input(1)).constant->to_ints();
  if (axes.empty())
    for (size_t i = 0; i < cx.value(n.input(0)).shape.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  mean(cx, n, axes, cx.attr_i(n, "keepdims", 1) != 0);
}

const ExportRegistration reduce_ops({{"GlobalAveragePool", global_average_pool}, {"ReduceMean", reduce_mean}});

}  // namespace

}  // namespace nnmeter::tflite
