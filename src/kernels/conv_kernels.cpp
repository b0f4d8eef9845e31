// conv-* and dwconv-* kernels: one convolution (SAME padding, bias) followed by optional BN and an
// activation. conv-bn-hswish is a regular conv (nn-Meter's TF build made it depthwise by a class-name
// clash) and dwconv-bn-hswish exists (nn-Meter's TF lookup failed); relu6 is Clip(0, 6). conv-bn-swish and
// dwconv-bn-swish are not nn-Meter's: EfficientNet's and most NAS spaces' blocks end in SiLU, which a CPU
// engine runs as a post-op that costs far more than ReLU's, so a ReLU kernel under-predicts them.
// gconv-bn-relu is ours too: a grouped conv (ResNeXt, RegNet) as one kernel with GROUPS in its config. Predicted
// as GROUPS dense convs of one group each, a grouped conv of narrow groups carried a whole conv's fixed cost per
// group, and RegNet came out over-predicted (docs/cli-predict.md).
#include "kernels/builtin.h"
#include "kernels/config_check.h"

namespace nnmeter::kernels {

namespace {

enum class Post { Bn, Relu, Relu6, Hswish, Swish };

struct ConvParams {
  int64_t hw, cin, cout, k, s, groups = 1;
};

ConvParams read_conv(const KernelConfig& c, const std::string& name, Family family) {
  const bool depthwise = family == Family::DwConv;
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
  if (family == Family::GConv) {
    p.groups = check::get_int(c, name, "GROUPS", 2, p.cin);
    if (p.cin % p.groups != 0 || p.cout % p.groups != 0)
      throw Error("kernel '" + name + "' config: CIN and COUT must be multiples of GROUPS, got CIN = " +
                  std::to_string(p.cin) + ", COUT = " + std::to_string(p.cout) + ", GROUPS = " + std::to_string(p.groups));
  }
  p.k = check::kernel_size(c, name, p.hw);
  p.s = check::stride(c, name, "STRIDES");
  const int64_t out = onnx_io::same_out(p.hw, p.s);
  check::check_tensor(name, "weight", 1, {p.cout, depthwise ? 1 : p.cin / p.groups, p.k, p.k});
  check::check_tensor(name, "output", 1, {p.cout, out, out});
  return p;
}

BuiltinKernelSpec conv_spec(std::string name, Family family, std::vector<Post> post) {
  BuiltinKernelSpec spec;
  spec.name = name;
  spec.family = family;
  spec.inputs = [name, family](const KernelConfig& c) {
    ConvParams p = read_conv(c, name, family);
    return std::vector<Shape>{{p.cin, p.hw, p.hw}};
  };
  spec.body = [name, family, post](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c,
                                   int64_t batch) {
    ConvParams p = read_conv(c, name, family);
    std::string x =
        onnx_io::conv2d(g, in.at(0), {p.cin, p.cout, p.k, p.s, p.hw, family == Family::DwConv, p.groups});
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
      conv_spec("conv-bn-relu", Family::Conv, {Bn, Relu}),
      conv_spec("conv-bn-relu6", Family::Conv, {Bn, Relu6}),
      conv_spec("conv-bn", Family::Conv, {Bn}),
      conv_spec("conv-relu", Family::Conv, {Relu}),
      conv_spec("conv-relu6", Family::Conv, {Relu6}),
      conv_spec("conv-hswish", Family::Conv, {Hswish}),
      conv_spec("conv-block", Family::Conv, {}),
      conv_spec("conv-bn-hswish", Family::Conv, {Bn, Hswish}),
      conv_spec("dwconv-bn", Family::DwConv, {Bn}),
      conv_spec("dwconv-relu", Family::DwConv, {Relu}),
      conv_spec("dwconv-relu6", Family::DwConv, {Relu6}),
      conv_spec("dwconv-bn-relu", Family::DwConv, {Bn, Relu}),
      conv_spec("dwconv-bn-relu6", Family::DwConv, {Bn, Relu6}),
      conv_spec("dwconv-block", Family::DwConv, {}),
      conv_spec("dwconv-bn-hswish", Family::DwConv, {Bn, Hswish}),
  };
}

std::vector<BuiltinKernelSpec> swish_conv_kernel_specs() {
  using enum Post;
  return {conv_spec("conv-bn-swish", Family::Conv, {Bn, Swish}), conv_spec("dwconv-bn-swish", Family::DwConv, {Bn, Swish})};
}

std::vector<BuiltinKernelSpec> grouped_conv_kernel_specs() {
  using enum Post;
  return {conv_spec("gconv-bn-relu", Family::GConv, {Bn, Relu})};
}

}  // namespace nnmeter::kernels
