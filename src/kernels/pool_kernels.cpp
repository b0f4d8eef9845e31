// maxpool, avgpool (SAME padding, output ceil(HW/POOL_STRIDES)) and global-avgpool (output [CIN]).
#include "kernels/builtin.h"
#include "kernels/config_check.h"

namespace nnmeter::kernels {

namespace {

struct PoolParams {
  int64_t hw, cin, k, s;
};

PoolParams read_pool(const KernelConfig& c, const std::string& name) {
  PoolParams p{};
  p.hw = check::hw(c, name);
  p.cin = check::channels(c, name, "CIN");
  auto cout = check::get_optional_int(c, name, "COUT", 1, check::kMaxChannels);
  if (cout && *cout != p.cin)
    throw Error("kernel '" + name + "' config: COUT must equal CIN for pooling, got CIN = " + std::to_string(p.cin) +
                ", COUT = " + std::to_string(*cout));
  p.k = check::kernel_size(c, name, p.hw);
  // nn-Meter's pooling blocks read POOL_STRIDES and fall back to STRIDES.
  p.s = c.contains("POOL_STRIDES") || !c.contains("STRIDES") ? check::stride(c, name, "POOL_STRIDES")
                                                             : check::stride(c, name, "STRIDES");
  check::check_tensor(name, "input", 1, {p.cin, p.hw, p.hw});
  return p;
}

BuiltinKernelSpec pool_spec(std::string name, std::string op) {
  BuiltinKernelSpec spec;
  spec.name = name;
  spec.family = Family::Pooling;
  spec.inputs = [name](const KernelConfig& c) {
    PoolParams p = read_pool(c, name);
    return std::vector<Shape>{{p.cin, p.hw, p.hw}};
  };
  spec.body = [name, op](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c,
                         int64_t batch) {
    PoolParams p = read_pool(c, name);
    std::vector<onnx_io::Attr> attrs = {onnx_io::attr_ints("kernel_shape", {p.k, p.k}),
                                      onnx_io::attr_ints("strides", {p.s, p.s}),
                                      onnx_io::attr_ints("pads", onnx_io::same_pads(p.hw, p.k, p.s))};
    // TF's SAME average pooling divides by the number of real pixels in the window.
    if (op == "AveragePool") attrs.push_back(onnx_io::attr_int("count_include_pad", 0));
    std::string y = g.node1(op, {in.at(0)}, attrs);
    const int64_t out = onnx_io::same_out(p.hw, p.s);
    g.output(y, {batch, p.cin, out, out});
  };
  return spec;
}

BuiltinKernelSpec global_avgpool_spec() {
  const std::string name = "global-avgpool";
  BuiltinKernelSpec spec;
  spec.name = name;
  spec.family = Family::GlobalAvgPool;
  spec.inputs = [name](const KernelConfig& c) {
    int64_t hw = check::hw(c, name), cin = check::channels(c, name, "CIN");
    check::check_tensor(name, "input", 1, {cin, hw, hw});
    return std::vector<Shape>{{cin, hw, hw}};
  };
  spec.body = [name](onnx_io::GraphBuilder& g, const std::vector<std::string>& in, const KernelConfig& c, int64_t batch) {
    int64_t cin = check::channels(c, name, "CIN");
    // Keras' GlobalAveragePooling2D yields [N, C]; Flatten drops the 1x1 spatial dims.
    std::string pooled = g.node1("GlobalAveragePool", {in.at(0)});
    std::string y = g.node1("Flatten", {pooled}, {onnx_io::attr_int("axis", 1)});
    g.output(y, {batch, cin});
  };
  return spec;
}

}  // namespace

std::vector<BuiltinKernelSpec> pool_kernel_specs() {
  return {pool_spec("maxpool", "MaxPool"), pool_spec("avgpool", "AveragePool"), global_avgpool_spec()};
}

}  // namespace nnmeter::kernels
