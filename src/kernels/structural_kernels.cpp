// fc, concat, split, channelshuffle and se.
//
// se follows real MobileNetV3 rather than nn-Meter's TF block: GAP -> 1x1 conv to max(1, CIN/4) -> ReLU ->
// 1x1 conv to CIN -> hard-sigmoid gate -> Mul with the input. nn-Meter used hswish as the gate, which is
// not what MobileNetV3 (the network the kernel models) does.
#include <tuple>

#include "kernels/builtin.h"
#include "kernels/config_check.h"

namespace nnmeter::kernels {

namespace {

BuiltinKernelSpec fc_spec() {
  const std::string name = "fc";
  BuiltinKernelSpec spec{name, Family::Fc, {}, {}};
  auto read = [name](const KernelConfig& c) {
    int64_t cin = check::channels(c, name, "CIN"), cout = check::channels(c, name, "COUT");
    check::check_tensor(name, "weight", 1, {cout, cin});
    return std::pair{cin, cout};
  };
  spec.inputs = [read](const KernelConfig& c) { return std::vector<Shape>{{read(c).first}}; };
  spec.body = [read](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c, int64_t batch) {
    auto [cin, cout] = read(c);
    std::string w = g.he_weight("fc_weight", {cout, cin}, cin);
    std::string b = g.random_weight("fc_bias", {cout}, -0.1f, 0.1f);
    std::string y = g.node1("Gemm", {in.at(0), w, b}, {onnx_io::attr_int("transB", 1)});
    g.output(y, {batch, cout});
  };
  return spec;
}

// CIN1 and CIN2 are required; CIN3/CIN4 of 0 (or absent) mean the input does not exist, as in nn-Meter.
std::vector<int64_t> concat_channels(const KernelConfig& c, const std::string& name) {
  int64_t hw = check::hw(c, name);
  std::vector<int64_t> cins = {check::channels(c, name, "CIN1"), check::channels(c, name, "CIN2")};
  bool absent = false;
  for (const char* key : {"CIN3", "CIN4"}) {
    int64_t v = check::get_optional_int(c, name, key, 0, check::kMaxChannels).value_or(0);
    if (v == 0) {
      absent = true;
    } else if (absent) {
      throw Error("kernel 'concat' config: CIN4 is set but CIN3 is 0; fill the inputs in order");
    } else {
      cins.push_back(v);
    }
  }
  int64_t total = 0;
  for (int64_t ci : cins) total += ci;
  check::check_tensor(name, "output", 1, {total, hw, hw});
  return cins;
}

BuiltinKernelSpec concat_spec() {
  const std::string name = "concat";
  BuiltinKernelSpec spec{name, Family::Concat, {}, {}};
  spec.inputs = [name](const KernelConfig& c) {
    int64_t hw = check::hw(c, name);
    std::vector<Shape> shapes;
    for (int64_t ci : concat_channels(c, name)) shapes.push_back({ci, hw, hw});
    return shapes;
  };
  spec.body = [name](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c, int64_t batch) {
    int64_t hw = check::hw(c, name), total = 0;
    for (int64_t ci : concat_channels(c, name)) total += ci;
    std::string y = g.node1("Concat", in, {onnx_io::attr_int("axis", 1)});
    g.output(y, {batch, total, hw, hw});
  };
  return spec;
}

std::pair<int64_t, int64_t> hw_cin(const KernelConfig& c, const std::string& name, bool even) {
  int64_t hw = check::hw(c, name), cin = check::channels(c, name, "CIN");
  if (even && cin % 2 != 0)
    throw Error("kernel '" + name + "' config: CIN must be even (two channel groups), got " + std::to_string(cin));
  check::check_tensor(name, "input", 1, {cin, hw, hw});
  return {hw, cin};
}

BuiltinKernelSpec split_spec() {
  const std::string name = "split";
  BuiltinKernelSpec spec{name, Family::CinEven, {}, {}};
  spec.inputs = [name](const KernelConfig& c) {
    auto [hw, cin] = hw_cin(c, name, true);
    return std::vector<Shape>{{cin, hw, hw}};
  };
  spec.body = [name](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c, int64_t batch) {
    auto [hw, cin] = hw_cin(c, name, true);
    std::string sizes = g.int64_const("split_sizes", {cin / 2, cin / 2});
    auto outs = g.node("Split", {in.at(0), sizes}, {onnx_io::attr_int("axis", 1)}, 2);
    for (const auto& o : outs) g.output(o, {batch, cin / 2, hw, hw});
  };
  return spec;
}

// GROUPS is optional (2, ShuffleNetV2's, when absent; ShuffleNet v1 shuffles 3 or more). The features leave it
// out: a shuffle copies every element once whatever the groups, so predictors built on 2 groups predict any.
BuiltinKernelSpec channelshuffle_spec() {
  const std::string name = "channelshuffle";
  BuiltinKernelSpec spec{name, Family::CinEven, {}, {}};
  auto read = [name](const KernelConfig& c) {
    int64_t hw = check::hw(c, name), cin = check::channels(c, name, "CIN");
    const int64_t groups = check::get_optional_int(c, name, "GROUPS", 2, check::kMaxChannels).value_or(2);
    if (cin % groups != 0)
      throw Error("kernel '" + name + "' config: CIN must be a multiple of GROUPS (" + std::to_string(groups) +
                  " channel groups), got " + std::to_string(cin));
    check::check_tensor(name, "input", 1, {cin, hw, hw});
    return std::tuple{hw, cin, groups};
  };
  spec.inputs = [read](const KernelConfig& c) {
    auto [hw, cin, groups] = read(c);
    return std::vector<Shape>{{cin, hw, hw}};
  };
  spec.body = [read](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c, int64_t batch) {
    auto [hw, cin, groups] = read(c);
    // [N, G, C/G, H, W] -> swap the group axes -> [N, C, H, W], as torchvision's channel_shuffle writes it.
    std::string split_shape = g.int64_const("shuffle_shape", {batch, groups, cin / groups, hw, hw});
    std::string x = g.node1("Reshape", {in.at(0), split_shape});
    x = g.node1("Transpose", {x}, {onnx_io::attr_ints("perm", {0, 2, 1, 3, 4})});
    std::string flat_shape = g.int64_const("unshuffle_shape", {batch, cin, hw, hw});
    std::string y = g.node1("Reshape", {x, flat_shape});
    g.output(y, {batch, cin, hw, hw});
  };
  return spec;
}

BuiltinKernelSpec se_spec() {
  const std::string name = "se";
  BuiltinKernelSpec spec{name, Family::CinEven, {}, {}};
  spec.inputs = [name](const KernelConfig& c) {
    auto [hw, cin] = hw_cin(c, name, false);
    return std::vector<Shape>{{cin, hw, hw}};
  };
  spec.body = [name](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c, int64_t batch) {
    auto [hw, cin] = hw_cin(c, name, false);
    const int64_t mid = std::max<int64_t>(1, cin / 4);
    std::string s = g.node1("GlobalAveragePool", {in.at(0)});
    s = onnx_io::conv2d(g, s, {cin, mid, 1, 1, 1, false});
    s = onnx_io::relu(g, s);
    s = onnx_io::conv2d(g, s, {mid, cin, 1, 1, 1, false});
    s = g.node1("HardSigmoid", {s}, {onnx_io::attr_float("alpha", 1.0f / 6.0f), onnx_io::attr_float("beta", 0.5f)});
    std::string y = g.node1("Mul", {in.at(0), s});
    g.output(y, {batch, cin, hw, hw});
  };
  return spec;
}

}  // namespace

std::vector<BuiltinKernelSpec> structural_kernel_specs() {
  return {fc_spec(), concat_spec(), split_spec(), channelshuffle_spec(), se_spec()};
}

}  // namespace nnmeter::kernels
