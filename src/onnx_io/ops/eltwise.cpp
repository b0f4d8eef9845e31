// Activations and other elementwise unary ops: same shape as their input; a few also fold at load time.
#include <cmath>

#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {

namespace {

std::vector<Shape> same_shape(const ShapeContext& cx) { return {cx.in(0)}; }

template <typename Fn>
bool unary(const FoldContext& cx, std::vector<HostTensor>& out, Fn fn) {
  HostTensor r = cx.c(0);
  for (auto& v : r.data) v = fn(v);
  return emit(out, std::move(r));
}

OpDef activation(std::string name, std::vector<std::string> attributes = {}, FoldRule fold = nullptr) {
  return {.name = std::move(name), .attributes = std::move(attributes), .shape = same_shape, .fold = fold};
}

const OpRegistration eltwise_ops({
    activation("Relu"),
    activation("LeakyRelu", {"alpha"}),
    [] {
      OpDef clip = activation("Clip", {"min", "max"});
      clip.parameters_from = 1;
      return clip;
    }(),
    activation("Sigmoid"),
    activation("Tanh"),
    activation("Elu", {"alpha"}),
    activation("Exp"),
    activation("Abs"),
    activation("Sqrt", {},
               [](const FoldContext& cx, std::vector<HostTensor>& out) {
                 return unary(cx, out, [](double x) { return std::sqrt(x); });
               }),
    activation("Neg", {},
               [](const FoldContext& cx, std::vector<HostTensor>& out) {
                 return unary(cx, out, [](double x) { return -x; });
               }),
    // At inference time only inside GELU's exported chain (the engines fuse it); alone it folds.
    activation("Erf", {},
               [](const FoldContext& cx, std::vector<HostTensor>& out) {
                 return unary(cx, out, [](double x) { return std::erf(x); });
               }),
    activation("HardSwish"),
    activation("HardSigmoid", {"alpha", "beta"}),
    {.name = "Floor",
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return unary(cx, out, [](double x) { return std::floor(x); });
     }},
    {.name = "Ceil",
     .fold = [](const FoldContext& cx, std::vector<HostTensor>& out) {
       return unary(cx, out, [](double x) { return std::ceil(x); });
     }},
});

}  // namespace

}  // namespace nnmeter::onnx_io
