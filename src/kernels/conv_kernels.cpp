// conv-* and dwconv-* kernels: one convolution (SAME padding, bias) followed by optional BN and an
// activation. conv-bn-hswish is a regular conv (nn-Meter's TF build made it depthwise by a class-name
// clash) and dwconv-bn-hswish exists (nn-Meter's TF lookup failed); relu6 is Clip(0, 6). conv-bn-swish and
// dwconv-bn-swish are not nn-Meter's: EfficientNet's and most NAS spaces' blocks end in SiLU, which a CPU
// engine runs as a post-op that costs far more than ReLU's, so a ReLU kernel under-predicts them.
#include "kernels/builtin.h"
#include "kernels/config_check.h"

namespace nnmeter::kernels {

namespace {

enum class Post { Bn, Relu, Relu6, Hswish, Swish };

struct ConvParams {
  int64_t hw, cin, cout, k, s;
};

ConvParams read_conv(const KernelConfig& c, const std::string& name, bool depthwise) {
  ConvParams p{};
  p.hw = check::hw(c, name);
  p.cin = check::channels(c, name, "CIN");
  if (depthwise) {
    // nn-Meter's dwconv configs carry no COUT; when one is given it must agree with the depthwise rule.
    auto cout = check::get_optional_int(c, name, "COUT", 1, check::kMaxChannels);
    if (cout && *cout != p.cin)
      throw Error("kernel '" + name + "' config: COUT must equal CIN for a depthwise conv, got CIN = " +
                  std::to_string(p.cin) + ", COUT = " + std::to_string(*cout));
    p.cout = p.cin;
  } else {
    p.cout = check::channels(c, name, "COUT");
  }
  p.k = check::kernel_size(c, name, p.hw);
  p.s = check::stride(c, name, "STRIDES");
  const int64_t out = onnx_io::same_out(p.hw, p.s);
  check::check_tensor(name, "weight", 1, {p.cout, depthwise ? 1 : p.cin, p.k, p.k});
  check::check_tensor(name, "output", 1, {p.cout, out, out});
  return p;
}

BuiltinKernelSpec conv_spec(std::string name, bool depthwise, std::vector<Post> post) {
  BuiltinKernelSpec spec;
  spec.name = name;
  spec.family = depthwise ? Family::DwConv : Family::Conv;
  spec.inputs = [name, depthwise](const KernelConfig& c) {
    ConvParams p = read_conv(c, name, depthwise);
    return std::vector<Shape>{{p.cin, p.hw, p.hw}};
  };
  spec.body = [name, depthwise, post](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c,
                                      int64_t batch) {
    ConvParams p = read_conv(c, name, depthwise);
    std::string x = onnx_io::conv2d(g, in.at(0), {p.cin, p.cout, p.k, p.s, p.hw, depthwise});
    for (Post op : post) {
      switch (op) {
        case Post::Bn: x = onnx_io::batch_norm(g, x, p.cout); break;
        case Post::Relu: x = onnx_io::relu(g, x); break;
        case Post::Relu6: x = onnx_io::relu6(g, x); break;
        case Post::Hswish: x = onnx_io::hswish(g, x); break;
        case Post::Swish: x = onnx_io::swish(g, x); break;
      }
    }
    const int64_t out = onnx_io::same_out(p.hw, p.s);
    g.output(x, {batch, p.cout, out, out});
  };
  return spec;
}

}  // namespace

std::vector<BuiltinKernelSpec> conv_kernel_specs() {
  using enum Post;
  return {
      conv_spec("conv-bn-relu", false, {Bn, Relu}),
      conv_spec("conv-bn-relu6", false, {Bn, Relu6}),
      conv_spec("conv-bn", false, {Bn}),
      conv_spec("conv-relu", false, {Relu}),
      conv_spec("conv-relu6", false, {Relu6}),
      conv_spec("conv-hswish", false, {Hswish}),
      conv_spec("conv-block", false, {}),
      conv_spec("conv-bn-hswish", false, {Bn, Hswish}),
      conv_spec("dwconv-bn", true, {Bn}),
      conv_spec("dwconv-relu", true, {Relu}),
      conv_spec("dwconv-relu6", true, {Relu6}),
      conv_spec("dwconv-bn-relu", true, {Bn, Relu}),
      conv_spec("dwconv-bn-relu6", true, {Bn, Relu6}),
      conv_spec("dwconv-block", true, {}),
      conv_spec("dwconv-bn-hswish", true, {Bn, Hswish}),
  };
}

std::vector<BuiltinKernelSpec> swish_conv_kernel_specs() {
  using enum Post;
  return {conv_spec("conv-bn-swish", false, {Bn, Swish}), conv_spec("dwconv-bn-swish", true, {Bn, Swish})};
}

}  // namespace nnmeter::kernels
