// Elementwise binary and n-ary ops with numpy broadcasting, and the broadcasting ops folded at load time
// only.
#include <cmath>

#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

using DType = HostTensor::DType;

std::vector<Shape> nary_shape(const ShapeContext& cx) {
  if (cx.n.inputs.empty()) cx.attrs.fail("inputs", "are missing");
  Shape out = cx.in(0);
  for (size_t i = 1; i < cx.n.inputs.size(); ++i) {
    const auto s = broadcast_shapes(out, cx.in(i));
    if (!s) cx.attrs.fail("inputs", fmt::format("shapes {} and {} do not broadcast", shape_str(out), shape_str(cx.in(i))));
    out = *s;
  }
  cx.require_rank(out, 0, 12, "output");
  return {out};
}

template <typename Fn>
bool fold_binary(const FoldContext& cx, std::vector<HostTensor>& out, Fn fn, std::optional<DType> dtype = std::nullopt) {
  const auto shape = broadcast_shapes(cx.c(0).dims, cx.c(1).dims);
  if (!shape)
    cx.attrs.fail("inputs", fmt::format("shapes {} and {} do not broadcast", shape_str(cx.c(0).dims), shape_str(cx.c(1).dims)));
  HostTensor r = broadcast_binary(cx.c(0), cx.c(1), *shape, fn);
  if (dtype) r.dtype = *dtype;
  if (r.dtype == DType::F32)
    for (auto& v : r.data) v = static_cast<float>(v);
  return emit(out, std::move(r));
}

bool fold_div(const FoldContext& cx, std::vector<HostTensor>& out) {
  const bool integer = cx.c(0).dtype == DType::I64 && cx.c(1).dtype == DType::I64;
  return fold_binary(cx, out, [integer](double a, double b) {
    if (!integer) return a / b;
    return b == 0 ? 0.0 : std::trunc(a / b);
  });
}

bool fold_where(const FoldContext& cx, std::vector<HostTensor>& out) {
  auto s = broadcast_shapes(cx.c(0).dims, cx.c(1).dims);
  if (s) s = broadcast_shapes(*s, cx.c(2).dims);
  if (!s) cx.attrs.fail("inputs", "do not broadcast");
  const HostTensor a = broadcast_binary(cx.c(1), cx.c(0), *s, [](double x, double cond) { return cond != 0 ? x : NAN; });
  HostTensor r = broadcast_binary(a, cx.c(2), *s, [](double x, double y) { return std::isnan(x) ? y : x; });
  r.dtype = cx.c(1).dtype;
  return emit(out, std::move(r));
}

bool fold_expand(const FoldContext& cx, std::vector<HostTensor>& out) {
  const auto target = broadcast_shapes(cx.c(0).dims, cx.c(1).to_ints());
  if (!target) cx.attrs.fail("shape", "does not broadcast with the input");
  HostTensor zero{cx.c(0).dtype, {}, {0.0}};
  return emit(out, broadcast_binary(cx.c(0), zero, *target, [](double a, double) { return a; }));
}

OpDef nary(std::string name, FoldRule fold = nullptr) {
  return {.name = std::move(name), .shape = nary_shape, .fold = fold};
}

const OpRegistration binary_ops({
    nary("Add", [](const FoldContext& cx, std::vector<HostTensor>& out) { return fold_binary(cx, out, std::plus<>()); }),
    nary("Sub", [](const FoldContext& cx, std::vector<HostTensor>& out) { return fold_binary(cx, out, std::minus<>()); }),
    nary("Mul",
         [](const FoldContext& cx, std::vector<HostTensor>& out) { return fold_binary(cx, out, std::multiplies<>()); }),
    nary("Div", fold_div),
    // LayerNorm's square and GELU's cube as exported: a runtime base, a constant exponent.
    {.name = "Pow",
     .shape = nary_shape,
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return fold_binary(cx, out, [](double a, double b) { return std::pow(a, b); }, cx.c(0).dtype);
     },
     .parameters_from = 1},
    nary("Sum"),
    nary("Max"),
    nary("Min"),
    {.name = "Equal",
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return fold_binary(cx, out, [](double a, double b) { return a == b ? 1.0 : 0.0; }, DType::I64);
     }},
    {.name = "Where", .fold = fold_where},
    {.name = "Expand", .fold = fold_expand},
});

}  // namespace

}  // namespace nnmeter::onnx_io
