// se, fc, reshape, concat, flatten, split, channelshuffle and linear.
//
// fc takes nn-Meter's 1-D input ([N] → [COUT], Gemm) and, after a reshape, any rank (Dense on the last
// axis: MatMul + Add, as PyTorch exports Linear). reshape reinterprets the data without moving it:
// [d0, d1, ..., dk] → [d1, ..., dk, d0] ([C, H, W] → [H, W, C] as nn-Meter's), [N] → [2, N/2]. concat joins
// two inputs on the first (channel) axis; split halves it and returns both halves (the block's op2 reads
// the first, the second stays a model output so nothing is dead code). channelshuffle (not nn-Meter's) is
// ShuffleNet's shuffle of two groups as PyTorch exports it: Reshape to [N, 2, C/2, H, W], Transpose of the
// group axes, Reshape back.
#include <fmt/format.h>

#include "fusion/operators.h"

namespace nnmeter::fusion {

namespace {

using onnx_io::attr_float;
using onnx_io::attr_int;

int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// MobileNetV3's block, as the se kernel: GAP → 1x1 conv to max(1, C/4) → ReLU → 1x1 conv to C → HardSigmoid → Mul.
OpSpec se_spec() {
  OpSpec spec;
  spec.name = "se";
  spec.shape = [](const OpParams&, const Shape& in) {
    require_rank("se", in, 3);
    return in;
  };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams&, const Shape& in, int64_t) {
    const int64_t c = in[0], mid = std::max<int64_t>(1, c / 4);
    std::string s = g.node1("GlobalAveragePool", {x.at(0)});
    s = onnx_io::relu(g, onnx_io::conv2d(g, s, {c, mid, 1, 1, 1, false}));
    s = onnx_io::conv2d(g, s, {mid, c, 1, 1, 1, false});
    s = g.node1("HardSigmoid", {s}, {attr_float("alpha", 1.0f / 6.0f), attr_float("beta", 0.5f)});
    return std::vector<std::string>{g.node1("Mul", {x.at(0), s})};
  };
  return spec;
}

OpSpec fc_spec() {
  OpSpec spec;
  spec.name = "fc";
  spec.shape = [](const OpParams& p, const Shape& in) {
    require_rank("fc", in, 0);
    Shape out = in;
    out.back() = p.cout;
    return out;
  };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams& p, const Shape& in, int64_t) {
    const int64_t k = in.back();
    const std::string b = g.random_weight("fc_bias", {p.cout}, -0.1f, 0.1f);
    if (in.size() == 1) {
      const std::string w = g.he_weight("fc_weight", {p.cout, k}, k);
      return std::vector<std::string>{g.node1("Gemm", {x.at(0), w, b}, {attr_int("transB", 1)})};
    }
    const std::string w = g.he_weight("fc_weight", {k, p.cout}, k);
    return std::vector<std::string>{g.node1("Add", {g.node1("MatMul", {x.at(0), w}), b})};
  };
  return spec;
}

// Ours: nn.Linear on token tensors, any rank of at least 2 (MatMul + Add on the last axis, as exported); the
// detection calls the same layer linear (fc stays nn-Meter's 1-D Gemm).
OpSpec linear_spec() {
  OpSpec spec;
  spec.name = "linear";
  spec.shape = [](const OpParams& p, const Shape& in) {
    if (in.size() < 2)
      throw Error(fmt::format("operator 'linear' needs a token tensor [T, C] or more axes, got rank {}; use fc for a "
                              "1-D input",
                              in.size()));
    Shape out = in;
    out.back() = p.cout;
    return out;
  };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams& p, const Shape& in, int64_t) {
    return std::vector<std::string>{onnx_io::linear(g, x.at(0), in.back(), p.cout)};
  };
  return spec;
}

Shape reshaped(const Shape& in) {
  require_rank("reshape", in, 0);
  if (in.size() == 1) {
    require_even_first("reshape", in);
    return {2, in[0] / 2};
  }
  Shape out(in.begin() + 1, in.end());
  out.push_back(in[0]);
  return out;
}

OpSpec reshape_spec() {
  OpSpec spec;
  spec.name = "reshape";
  spec.shape = [](const OpParams&, const Shape& in) { return reshaped(in); };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams&, const Shape& in,
                 int64_t batch) {
    const std::string target = g.int64_const("reshape_shape", batched(batch, reshaped(in)));
    return std::vector<std::string>{g.node1("Reshape", {x.at(0), target})};
  };
  return spec;
}

OpSpec concat_spec() {
  OpSpec spec;
  spec.name = "concat";
  spec.two_inputs = true;
  spec.shape = [](const OpParams&, const Shape& in) {
    require_rank("concat", in, 0);
    Shape out = in;
    out[0] *= 2;
    return out;
  };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams&, const Shape&, int64_t) {
    return std::vector<std::string>{g.node1("Concat", {x.at(0), x.at(1)}, {attr_int("axis", 1)})};
  };
  return spec;
}

OpSpec flatten_spec() {
  OpSpec spec;
  spec.name = "flatten";
  spec.shape = [](const OpParams&, const Shape& in) {
    require_rank("flatten", in, 0);
    return Shape{product(in)};
  };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams&, const Shape&, int64_t) {
    return std::vector<std::string>{g.node1("Flatten", {x.at(0)}, {attr_int("axis", 1)})};
  };
  return spec;
}

OpSpec split_spec() {
  OpSpec spec;
  spec.name = "split";
  spec.shape = [](const OpParams&, const Shape& in) {
    require_rank("split", in, 0);
    require_even_first("split", in);
    Shape out = in;
    out[0] /= 2;
    return out;
  };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams&, const Shape& in, int64_t) {
    const std::string sizes = g.int64_const("split_sizes", {in[0] / 2, in[0] / 2});
    return g.node("Split", {x.at(0), sizes}, {attr_int("axis", 1)}, 2);
  };
  return spec;
}

OpSpec channelshuffle_spec() {
  OpSpec spec;
  spec.name = "channelshuffle";
  spec.shape = [](const OpParams&, const Shape& in) {
    require_rank("channelshuffle", in, 3);
    require_even_first("channelshuffle", in);
    return in;
  };
  spec.body = [](onnx_io::GraphBuilder& g, const std::vector<std::string>& x, const OpParams&, const Shape& in,
                 int64_t batch) {
    const std::string groups = g.int64_const("shuffle_shape", {batch, 2, in[0] / 2, in[1], in[2]});
    std::string y = g.node1("Reshape", {x.at(0), groups});
    y = g.node1("Transpose", {y}, {onnx_io::attr_ints("perm", {0, 2, 1, 3, 4})});
    const std::string flat = g.int64_const("unshuffle_shape", batched(batch, in));
    return std::vector<std::string>{g.node1("Reshape", {y, flat})};
  };
  return spec;
}

}  // namespace

std::vector<OpSpec> structural_operator_specs() {
  return {se_spec(),   fc_spec(),          reshape_spec(), concat_spec(), flatten_spec(),
          split_spec(), channelshuffle_spec(), linear_spec()};
}

}  // namespace nnmeter::fusion
