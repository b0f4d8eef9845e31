// Transformer kernels on token tensors, written as torch.onnx.export writes ViT, DeiT, Swin, MobileViT,
// ConvNeXt and BERT blocks at opset 13 (onnx_io/builder.h):
//   layernorm, gelu, softmax  [T, CIN]: over the last axis (CIN); T counts every other axis but the batch
//   linear, linear-gelu       [T, CIN] → [T, COUT]: nn.Linear (MatMul + Add), with its GELU where the backend
//                             runs both as one kernel (rule BF_linear_gelu)
//   matmul                    [B, M, K] × [B, K, N]: two activations, as attention's Q·Kᵀ and A·V; B counts
//                             the heads (and Swin's windows)
#include <array>
#include <tuple>

#include "kernels/builtin.h"
#include "kernels/config_check.h"

namespace nnmeter::kernels {

namespace {

std::pair<int64_t, int64_t> tokens_cin(const KernelConfig& c, const std::string& name) {
  const int64_t t = check::tokens(c, name, "T"), cin = check::channels(c, name, "CIN");
  check::check_tensor(name, "input", 1, {t, cin});
  return {t, cin};
}

using TokenBody = std::function<std::string(onnx_io::GraphBuilder&, const std::string& x, int64_t cin)>;

BuiltinKernelSpec tokens_spec(const std::string& name, TokenBody body) {
  BuiltinKernelSpec spec{name, Family::Tokens, {}, {}};
  spec.inputs = [name](const KernelConfig& c) {
    auto [t, cin] = tokens_cin(c, name);
    return std::vector<Shape>{{t, cin}};
  };
  spec.body = [name, body](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c,
                           int64_t batch) {
    auto [t, cin] = tokens_cin(c, name);
    g.output(body(g, in.at(0), cin), {batch, t, cin});
  };
  return spec;
}

BuiltinKernelSpec linear_spec(const std::string& name, bool with_gelu) {
  BuiltinKernelSpec spec{name, Family::Linear, {}, {}};
  auto read = [name](const KernelConfig& c) {
    auto [t, cin] = tokens_cin(c, name);
    const int64_t cout = check::channels(c, name, "COUT");
    check::check_tensor(name, "weight", 1, {cin, cout});
    check::check_tensor(name, "output", 1, {t, cout});
    return std::tuple{t, cin, cout};
  };
  spec.inputs = [read](const KernelConfig& c) {
    auto [t, cin, cout] = read(c);
    return std::vector<Shape>{{t, cin}};
  };
  spec.body = [read, with_gelu](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c,
                                int64_t batch) {
    auto [t, cin, cout] = read(c);
    std::string y = onnx_io::linear(g, in.at(0), cin, cout);
    if (with_gelu) y = onnx_io::gelu(g, y);
    g.output(y, {batch, t, cout});
  };
  return spec;
}

BuiltinKernelSpec matmul_spec() {
  const std::string name = "matmul";
  BuiltinKernelSpec spec{name, Family::MatMul, {}, {}};
  auto read = [name](const KernelConfig& c) {
    const int64_t b = check::tokens(c, name, "B"), m = check::tokens(c, name, "M"), k = check::tokens(c, name, "K"),
                  n = check::tokens(c, name, "N");
    for (const auto& [what, shape] : {std::pair{"left", Shape{b, m, k}}, {"right", {b, k, n}}, {"output", {b, m, n}}})
      check::check_tensor(name, what, 1, shape);
    return std::array<int64_t, 4>{b, m, k, n};
  };
  spec.inputs = [read](const KernelConfig& c) {
    auto [b, m, k, n] = read(c);
    return std::vector<Shape>{{b, m, k}, {b, k, n}};
  };
  spec.body = [read](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c, int64_t batch) {
    auto [b, m, k, n] = read(c);
    g.output(g.node1("MatMul", {in.at(0), in.at(1)}), {batch, b, m, n});
  };
  return spec;
}

}  // namespace

std::vector<BuiltinKernelSpec> transformer_kernel_specs() {
  using G = onnx_io::GraphBuilder;
  return {
      tokens_spec("layernorm", [](G& g, const std::string& x, int64_t cin) { return onnx_io::layer_norm(g, x, cin); }),
      tokens_spec("gelu", [](G& g, const std::string& x, int64_t) { return onnx_io::gelu(g, x); }),
      tokens_spec("softmax", [](G& g, const std::string& x, int64_t) {
        return g.node1("Softmax", {x}, {onnx_io::attr_int("axis", -1)});
      }),
      linear_spec("linear", false),
      linear_spec("linear-gelu", true),
      matmul_spec(),
  };
}

}  // namespace nnmeter::kernels
