#include "backends/tflite/tflite_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "backends/onednn/graph.h"
#include "common/io.h"
#include "onnx_io/shape_rules.h"
#include "tflite_schema_generated.h"

namespace nnmeter::tflite {

namespace {

namespace tfl = nnmeter::tflite_schema;
using onednn::Graph;
using onnx_io::HostTensor;

const std::set<std::string> kExportable = {
    "Conv",    "BatchNormalization", "Relu",      "Clip",      "Sigmoid", "HardSigmoid", "HardSwish",
    "Add",     "Sub",                "Mul",       "Div",       "MaxPool", "AveragePool", "GlobalAveragePool",
    "ReduceMean", "Gemm",            "MatMul",    "Flatten",   "Reshape", "Squeeze",     "Unsqueeze",
    "Transpose", "Concat",           "Split",     "Slice",     "Pad",     "Softmax",     "Dropout",   "Identity"};

// Ops that only ever appear in load-time subgraphs (shape arithmetic, constants): folded before export.
const std::set<std::string> kFoldOnly = {"Constant", "Shape", "Size", "Gather", "Slice", "Cast", "Range",
                                         "ConstantOfShape", "Expand", "Equal", "Where", "ReduceProd", "Floor",
                                         "Ceil", "Sqrt", "Neg", "Abs", "Max", "Min", "Exp", "Tanh"};

// NCHW -> NHWC: stored dim j is ONNX dim kToNhwc[j]; ONNX dim i is stored at kFromNhwc[i].
const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kFromNhwc = {0, 3, 1, 2};

// data laid out as `shape`, rearranged so output dim j is input dim perm[j].
std::vector<float> permute(const Shape& shape, const std::vector<float>& data, const std::vector<int64_t>& perm) {
  const size_t rank = shape.size();
  Shape out_shape(rank), in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * shape[i];
  for (size_t j = 0; j < rank; ++j) out_shape[j] = shape[static_cast<size_t>(perm[j])];
  std::vector<float> out(data.size());
  Shape idx(rank, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t src = 0;
    for (size_t j = 0; j < rank; ++j) src += idx[j] * in_strides[static_cast<size_t>(perm[j])];
    out[o] = data[static_cast<size_t>(src)];
    for (size_t j = rank; j-- > 0;) {
      if (++idx[j] < out_shape[j]) break;
      idx[j] = 0;
    }
  }
  return out;
}

// How an ONNX value is held in the TFLite graph.
struct Ref {
  int tensor = -1;
  bool nhwc = false;  // a 4-D value stored NHWC
  Shape shape;        // the ONNX (NCHW) shape
  bool nonnegative = false;
};

struct OpDef {
  tfl::BuiltinOperator op;
  std::vector<int> inputs, outputs;
  tfl::BuiltinOptions options_type = tfl::BuiltinOptions_NONE;
  flatbuffers::Offset<void> options;
};

struct TensorDef {
  std::vector<int32_t> shape;
  tfl::TensorType type;
  uint32_t buffer;
  std::string name;
};

class Exporter {
 public:
  Exporter(const Graph& g, std::string backend) : g_(g), backend_(std::move(backend)) {
    buffers_.push_back(tfl::CreateBuffer(fbb_));  // buffer 0: the empty sentinel of tensors without data
    // From the ONNX nodes themselves: the loader's own fusion rewires its node outputs.
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      for (const auto& out : g_.nodes[i].proto->output()) producer_[out] = static_cast<int>(i);
      for (const auto& in : g_.nodes[i].proto->input()) consumers_[in].push_back(static_cast<int>(i));
    }
  }

  std::string run() {
    std::vector<int> inputs, outputs;
    for (int id : g_.inputs) {
      const auto& v = g_.value(id);
      if (v.shape.empty() || v.shape.size() > 6)
        fail_value(v.name, fmt::format("graph input of rank {} (TFLite tensors have 1 to 6 dimensions)", v.shape.size()));
      Ref r{add_tensor(v.name, v.shape, v.shape.size() == 4), v.shape.size() == 4, v.shape};
      refs_[v.name] = r;
      inputs.push_back(r.tensor);
    }
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (!absorbed_.count(static_cast<int>(i))) emit(static_cast<int>(i));
    for (int id : g_.outputs) outputs.push_back(ref(g_.value(id).name).tensor);
    return finish(inputs, outputs);
  }

 private:
  // ---- errors -------------------------------------------------------------------------------------------
  [[noreturn]] void fail(const onnx::NodeProto& node, const std::string& why) const {
    throw Error(fmt::format("{} cannot convert {} node '{}' in {}: {}", backend_, node.op_type(),
                            node.name().empty() ? node.output(0) : node.name(), g_.origin, why));
  }
  [[noreturn]] void fail_value(const std::string& value, const std::string& why) const {
    throw Error(fmt::format("{} cannot convert '{}' in {}: {}", backend_, value, g_.origin, why));
  }

  // ---- attributes ---------------------------------------------------------------------------------------
  static const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  static int64_t attr_i(const onnx::NodeProto& n, const std::string& name, int64_t fallback) {
    const auto* a = attr(n, name);
    return a ? a->i() : fallback;
  }
  static float attr_f(const onnx::NodeProto& n, const std::string& name, float fallback) {
    const auto* a = attr(n, name);
    return a ? a->f() : fallback;
  }
  static std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> fallback) {
    const auto* a = attr(n, name);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
  }
  static std::string attr_s(const onnx::NodeProto& n, const std::string& name, const std::string& fallback) {
    const auto* a = attr(n, name);
    return a ? a->s() : fallback;
  }

  // ---- graph helpers ------------------------------------------------------------------------------------
  const onednn::Value& value(const std::string& name) const { return g_.value(g_.value_index.at(name)); }
  bool is_const(const std::string& name) const { return !name.empty() && value(name).constant.has_value(); }
  std::vector<float> floats(const std::string& name) const { return value(name).constant->to_floats(); }
  // The single runtime consumer of `name`, or -1 (none, several, or `name` is a graph output).
  int sole_consumer(const std::string& name) const {
    const auto it = consumers_.find(name);
    if (value(name).graph_output || it == consumers_.end() || it->second.size() != 1) return -1;
    return it->second[0];
  }
  const onnx::NodeProto& proto(int node) const { return *g_.nodes[static_cast<size_t>(node)].proto; }

  // The fused activation a Relu or Clip node is, or nullopt.
  std::optional<tfl::ActivationFunctionType> activation_of(int node) const {
    const auto& n = proto(node);
    if (n.op_type() == "Relu") return tfl::ActivationFunctionType_RELU;
    if (n.op_type() != "Clip") return std::nullopt;
    float lo = attr_f(n, "min", -INFINITY), hi = attr_f(n, "max", INFINITY);
    if (n.input_size() > 1 && !n.input(1).empty()) lo = floats(n.input(1)).at(0);
    if (n.input_size() > 2 && !n.input(2).empty()) hi = floats(n.input(2)).at(0);
    if (lo == 0.f && hi == 6.f) return tfl::ActivationFunctionType_RELU6;
    if (lo == 0.f && std::isinf(hi) && hi > 0) return tfl::ActivationFunctionType_RELU;
    return std::nullopt;
  }

  // Fuses a following Relu/Clip into the op producing `out` (TFLite's converter does the same); returns the
  // activation and moves `out` to the activation's output.
  tfl::ActivationFunctionType take_activation(std::string& out) {
    const int next = sole_consumer(out);
    if (next < 0) return tfl::ActivationFunctionType_NONE;
    const auto act = activation_of(next);
    if (!act) return tfl::ActivationFunctionType_NONE;
    absorbed_.insert(next);
    out = proto(next).output(0);
    return *act;
  }

  // ---- tensors ------------------------------------------------------------------------------------------
  int add_tensor(const std::string& name, const Shape& onnx_shape, bool nhwc, tfl::TensorType type = tfl::TensorType_FLOAT32,
                 uint32_t buffer = 0) {
    TensorDef t{{}, type, buffer, name};
    for (size_t j = 0; j < onnx_shape.size(); ++j)
      t.shape.push_back(static_cast<int32_t>(onnx_shape[nhwc ? static_cast<size_t>(kToNhwc[j]) : j]));
    tensors_.push_back(std::move(t));
    return static_cast<int>(tensors_.size()) - 1;
  }
  template <typename T>
  int add_constant(const std::string& name, const Shape& shape, const std::vector<T>& data, tfl::TensorType type) {
    std::vector<uint8_t> bytes(data.size() * sizeof(T));
    if (!data.empty()) std::memcpy(bytes.data(), data.data(), bytes.size());
    buffers_.push_back(tfl::CreateBufferDirect(fbb_, &bytes));
    return add_tensor(fmt::format("{}_{}", name, tensors_.size()), shape, false, type, static_cast<uint32_t>(buffers_.size() - 1));
  }
  int const_f32(const std::string& name, const Shape& shape, const std::vector<float>& data) {
    return add_constant(name, shape, data, tfl::TensorType_FLOAT32);
  }
  int const_i32(const std::string& name, const std::vector<int32_t>& data, Shape shape = {}) {
    if (shape.empty()) shape = {static_cast<int64_t>(data.size())};
    return add_constant(name, shape, data, tfl::TensorType_INT32);
  }
  // A fresh activation tensor for ONNX value `name` (4-D values NHWC), registered as its Ref.
  Ref& define(const std::string& name, bool nonnegative = false) {
    const Shape& shape = value(name).shape;
    const bool nhwc = shape.size() == 4;
    refs_[name] = Ref{add_tensor(name, shape, nhwc), nhwc, shape, nonnegative};
    return refs_[name];
  }
  const Ref& ref(const std::string& name) {
    const auto it = refs_.find(name);
    if (it != refs_.end()) return it->second;
    fail_value(name, "is a load-time constant where the export needs a computed tensor");
  }

  void add_op(tfl::BuiltinOperator op, std::vector<int> inputs, std::vector<int> outputs,
              tfl::BuiltinOptions type = tfl::BuiltinOptions_NONE, flatbuffers::Offset<void> options = 0) {
    ops_.push_back(OpDef{op, std::move(inputs), std::move(outputs), type, options});
  }

  // The tensor of a 4-D NHWC value in ONNX's NCHW order (a TRANSPOSE), for ops that follow ONNX's layout.
  // With H = W = 1 both orders are the same bytes, so ops that only read the flat data (reshapes) skip it.
  int as_nchw(const Ref& r, bool bytes_only) {
    if (!r.nhwc || (bytes_only && r.shape[2] * r.shape[3] == 1)) return r.tensor;
    const int out = add_tensor(fmt::format("{}_nchw", tensors_[static_cast<size_t>(r.tensor)].name), r.shape, false);
    add_op(tfl::BuiltinOperator_TRANSPOSE, {r.tensor, const_i32("perm", {0, 3, 1, 2})}, {out},
           tfl::BuiltinOptions_TransposeOptions, tfl::CreateTransposeOptions(fbb_).Union());
    return out;
  }

  // A constant operand of an element-wise op with output `out`, broadcast to its rank and laid out like it.
  int broadcast_constant(const std::string& name, const Ref& out) {
    const HostTensor& c = *value(name).constant;
    Shape shape = c.dims;
    if (shape.size() > out.shape.size()) fail_value(name, "constant of higher rank than the result");
    shape.insert(shape.begin(), out.shape.size() - shape.size(), 1);
    std::vector<float> data = c.to_floats();
    if (out.nhwc) {
      data = permute(shape, data, kToNhwc);
      shape = {shape[0], shape[2], shape[3], shape[1]};
    }
    return const_f32(name, shape, data);  // `shape` is already in stored order
  }

  // ---- ops ----------------------------------------------------------------------------------------------
  void emit(int index) {
    const onnx::NodeProto& n = proto(index);
    const std::string& op = n.op_type();
    if (!kExportable.count(op))
      fail(n, fmt::format("op '{}' has no TFLite export (supported: {})", op, fmt::join(kExportable, ", ")));
    if (op == "Conv") return conv(n);
    if (op == "BatchNormalization") return batchnorm(n);
    if (op == "Relu" || op == "Clip") return activation(index);
    if (op == "Sigmoid") return unary(n, tfl::BuiltinOperator_LOGISTIC);
    if (op == "HardSwish") return unary(n, tfl::BuiltinOperator_HARD_SWISH);
    if (op == "HardSigmoid") return hardsigmoid(n);
    if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return binary(index);
    if (op == "MaxPool" || op == "AveragePool") return pool(n);
    if (op == "GlobalAveragePool") return mean(n, {2, 3}, true);
    if (op == "ReduceMean") return reduce_mean(n);
    if (op == "Gemm" || op == "MatMul") return fully_connected(n);
    if (op == "Flatten" || op == "Reshape" || op == "Squeeze" || op == "Unsqueeze") return reshape(n);
    if (op == "Transpose") return transpose(n);
    if (op == "Concat") return concat(n);
    if (op == "Split") return split(n);
    if (op == "Slice") return slice(n);
    if (op == "Pad") return pad(n);
    if (op == "Softmax") return softmax(n);
    refs_[n.output(0)] = ref(n.input(0));  // Dropout, Identity: the same tensor
  }

  // Explicit ONNX pads as TFLite's SAME or VALID when they are exactly that; otherwise a PAD op in front
  // (zeros: right for convolutions, and for pooling when the caller allows it) and VALID.
  tfl::Padding padding_for(const onnx::NodeProto& n, int& input, const Ref& in, const Shape& kernel, const Shape& strides,
                           const Shape& dilations, const Shape& out_hw, bool zero_pad_ok, const char* why_not) {
    Shape pads = attr_ints(n, "pads", {0, 0, 0, 0});
    const std::string auto_pad = attr_s(n, "auto_pad", "NOTSET");
    bool same = true, valid = true;
    for (size_t i = 0; i < 2; ++i) {
      const int64_t x = in.shape[i + 2], s = strides[i], ext = (kernel[i] - 1) * dilations[i] + 1;
      // TFLite's SAME is ONNX's SAME_UPPER; the output size was checked before, so the windows exist.
      const auto tf_same = onnx_io::window_axis(x, ext, s, 0, 0, "SAME_UPPER");
      const auto tf_valid = onnx_io::window_axis(x, ext, s, 0, 0, "VALID");
      if (auto_pad != "NOTSET")
        if (const auto w = onnx_io::window_axis(x, ext, s, pads[i], pads[i + 2], auto_pad)) pads[i] = w->pad_begin, pads[i + 2] = w->pad_end;
      same &= tf_same && out_hw[i] == tf_same->out && pads[i] == tf_same->pad_begin && pads[i + 2] == tf_same->pad_end;
      valid &= tf_valid && out_hw[i] == tf_valid->out && pads[i] == 0 && pads[i + 2] == 0;
      // The padding VALID needs for ONNX's output size (ceil_mode adds trailing rows).
      pads[i + 2] = (out_hw[i] - 1) * s + ext - x - pads[i];
    }
    if (same) return tfl::Padding_SAME;
    if (valid) return tfl::Padding_VALID;
    if (!zero_pad_ok) fail(n, fmt::format("pads {} are neither TFLite's SAME nor VALID, and {}", fmt::join(attr_ints(n, "pads", {}), ","), why_not));
    const Shape padded = {in.shape[0], in.shape[1], in.shape[2] + pads[0] + pads[2], in.shape[3] + pads[1] + pads[3]};
    const int out = add_tensor(tensors_[static_cast<size_t>(input)].name + "_padded", padded, true);
    const std::vector<int32_t> paddings = {0, 0, static_cast<int32_t>(pads[0]), static_cast<int32_t>(pads[2]),
                                           static_cast<int32_t>(pads[1]), static_cast<int32_t>(pads[3]), 0, 0};
    add_op(tfl::BuiltinOperator_PAD, {input, const_i32("paddings", paddings, {4, 2})}, {out}, tfl::BuiltinOptions_PadOptions,
           tfl::CreatePadOptions(fbb_).Union());
    input = out;
    return tfl::Padding_VALID;
  }

  void conv(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    const HostTensor& w = *value(n.input(1)).constant;
    if (in.shape.size() != 4 || w.dims.size() != 4) fail(n, "only 2-D convolutions are exported");
    const int64_t cout = w.dims[0], cin_g = w.dims[1], kh = w.dims[2], kw = w.dims[3], cin = in.shape[1];
    const int64_t group = attr_i(n, "group", 1);
    const bool depthwise = group == cin && cin_g == 1 && group > 1;
    if (group != 1 && !depthwise) fail(n, fmt::format("grouped convolution (group={} of {} channels) has no TFLite op", group, cin));
    std::vector<float> weight = w.to_floats();
    std::vector<float> bias(static_cast<size_t>(cout), 0.f);
    if (n.input_size() > 2 && !n.input(2).empty()) bias = floats(n.input(2));
    std::string out = n.output(0);
    // BatchNormalization right after the conv is folded into its weights and bias.
    if (const int next = sole_consumer(out); next >= 0 && proto(next).op_type() == "BatchNormalization") {
      const auto& bn = proto(next);
      const auto [scale, shift] = bn_affine(bn);
      const size_t per_out = weight.size() / static_cast<size_t>(cout);
      for (size_t o = 0; o < static_cast<size_t>(cout); ++o) {
        for (size_t k = 0; k < per_out; ++k) weight[o * per_out + k] *= scale[o];
        bias[o] = bias[o] * scale[o] + shift[o];
      }
      absorbed_.insert(next);
      out = bn.output(0);
    }
    const auto act = take_activation(out);
    const Shape strides = attr_ints(n, "strides", {1, 1}), dilations = attr_ints(n, "dilations", {1, 1});
    const Shape& out_shape = value(n.output(0)).shape;
    int input = in.tensor;
    const auto padding = padding_for(n, input, in, {kh, kw}, strides, dilations, {out_shape[2], out_shape[3]}, true, "");
    const std::string& name = n.name().empty() ? n.output(0) : n.name();
    int filter;
    if (depthwise)  // [C*M, 1, kh, kw] -> [1, kh, kw, C*M]
      filter = const_f32(name + "_filter", {1, kh, kw, cout}, permute({cout, 1, kh, kw}, weight, {1, 2, 3, 0}));
    else  // [O, I, kh, kw] -> [O, kh, kw, I]
      filter = const_f32(name + "_filter", {cout, kh, kw, cin_g}, permute(w.dims, weight, {0, 2, 3, 1}));
    const int b = const_f32(name + "_bias", {cout}, bias);
    const Ref& r = define(out, act != tfl::ActivationFunctionType_NONE);
    const int sh = static_cast<int>(strides[0]), sw = static_cast<int>(strides[1]);
    const int dh = static_cast<int>(dilations[0]), dw = static_cast<int>(dilations[1]);
    if (depthwise)
      add_op(tfl::BuiltinOperator_DEPTHWISE_CONV_2D, {input, filter, b}, {r.tensor}, tfl::BuiltinOptions_DepthwiseConv2DOptions,
             tfl::CreateDepthwiseConv2DOptions(fbb_, padding, sw, sh, static_cast<int>(cout / cin), act, dw, dh).Union());
    else
      add_op(tfl::BuiltinOperator_CONV_2D, {input, filter, b}, {r.tensor}, tfl::BuiltinOptions_Conv2DOptions,
             tfl::CreateConv2DOptions(fbb_, padding, sw, sh, act, dw, dh).Union());
  }

  // BatchNormalization as y = x * scale + shift per channel.
  std::pair<std::vector<float>, std::vector<float>> bn_affine(const onnx::NodeProto& bn) const {
    const auto gamma = floats(bn.input(1)), beta = floats(bn.input(2)), mean = floats(bn.input(3)), var = floats(bn.input(4));
    const float eps = attr_f(bn, "epsilon", 1e-5f);
    std::vector<float> scale(gamma.size()), shift(gamma.size());
    for (size_t c = 0; c < gamma.size(); ++c) {
      scale[c] = gamma[c] / std::sqrt(var[c] + eps);
      shift[c] = beta[c] - mean[c] * scale[c];
    }
    return {scale, shift};
  }

  // Per-channel constant of a 4-D NHWC (or 2-D) value, shaped to broadcast along its last axis.
  int channel_constant(const std::string& name, const Ref& like, const std::vector<float>& data) {
    Shape shape(like.shape.size(), 1);
    shape.back() = static_cast<int64_t>(data.size());
    return const_f32(name, shape, data);
  }

  void batchnorm(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    if (in.shape.size() != 4 && in.shape.size() != 2) fail(n, "only 4-D and 2-D inputs are exported");
    const auto [scale, shift] = bn_affine(n);
    std::string out = n.output(0);
    const auto act = take_activation(out);
    const int scaled = add_tensor(out + "_scaled", in.shape, in.nhwc);
    add_op(tfl::BuiltinOperator_MUL, {in.tensor, channel_constant(out + "_scale", in, scale)}, {scaled},
           tfl::BuiltinOptions_MulOptions, tfl::CreateMulOptions(fbb_).Union());
    const Ref& r = define(out, act != tfl::ActivationFunctionType_NONE);
    add_op(tfl::BuiltinOperator_ADD, {scaled, channel_constant(out + "_shift", in, shift)}, {r.tensor},
           tfl::BuiltinOptions_AddOptions, tfl::CreateAddOptions(fbb_, act).Union());
  }

  void activation(int index) {
    const auto& n = proto(index);
    const auto act = activation_of(index);
    if (!act) fail(n, "only Clip(0, 6) (RELU6) and Clip(0, inf) (RELU) have a TFLite op");
    unary(n, *act == tfl::ActivationFunctionType_RELU6 ? tfl::BuiltinOperator_RELU6 : tfl::BuiltinOperator_RELU, true);
  }

  void unary(const onnx::NodeProto& n, tfl::BuiltinOperator op, bool nonnegative = false) {
    const Ref in = ref(n.input(0));
    const Ref& r = define(n.output(0), nonnegative);
    add_op(op, {in.tensor}, {r.tensor});
  }

  // HardSigmoid(x) = clip(alpha x + beta, 0, 1) = RELU6(6 alpha x + 6 beta) / 6.
  void hardsigmoid(const onnx::NodeProto& n) {
    if (const int mul = sole_consumer(n.output(0)); mul >= 0 && proto(mul).op_type() == "Mul")
      for (int side = 0; side < 2; ++side)
        if (hardswish_partner(proto(mul), side) >= 0) return;  // the Mul writes HARD_SWISH
    const Ref in = ref(n.input(0));
    const float alpha = attr_f(n, "alpha", 0.2f), beta = attr_f(n, "beta", 0.5f);
    const Shape one(in.shape.size(), 1);
    const int a = add_tensor(n.output(0) + "_scaled", in.shape, in.nhwc);
    add_op(tfl::BuiltinOperator_MUL, {in.tensor, const_f32("hs_alpha", one, {6 * alpha})}, {a}, tfl::BuiltinOptions_MulOptions,
           tfl::CreateMulOptions(fbb_).Union());
    const int b = add_tensor(n.output(0) + "_relu6", in.shape, in.nhwc);
    add_op(tfl::BuiltinOperator_ADD, {a, const_f32("hs_beta", one, {6 * beta})}, {b}, tfl::BuiltinOptions_AddOptions,
           tfl::CreateAddOptions(fbb_, tfl::ActivationFunctionType_RELU6).Union());
    const Ref& r = define(n.output(0), true);
    add_op(tfl::BuiltinOperator_MUL, {b, const_f32("hs_sixth", one, {1.f / 6})}, {r.tensor}, tfl::BuiltinOptions_MulOptions,
           tfl::CreateMulOptions(fbb_).Union());
  }

  // The HardSigmoid node computing hardsigmoid(x) (alpha 1/6, beta 1/2) for Mul(x, that), or -1.
  int hardswish_partner(const onnx::NodeProto& mul, int side) const {
    const std::string& other = mul.input(1 - side);
    const auto it = producer_.find(mul.input(side));
    if (it == producer_.end()) return -1;
    const auto& hs = proto(it->second);
    if (hs.op_type() != "HardSigmoid" || hs.input(0) != other || sole_consumer(hs.output(0)) < 0) return -1;
    if (std::fabs(attr_f(hs, "alpha", 0.2f) - 1.f / 6) > 1e-6f || std::fabs(attr_f(hs, "beta", 0.5f) - 0.5f) > 1e-6f) return -1;
    return it->second;
  }

  void binary(int index) {
    const auto& n = proto(index);
    const std::string& op = n.op_type();
    if (op == "Mul") {
      for (int side = 0; side < 2; ++side)
        if (const int hs = hardswish_partner(n, side); hs >= 0) {
          const Ref in = ref(n.input(1 - side));
          const Ref& r = define(n.output(0));
          add_op(tfl::BuiltinOperator_HARD_SWISH, {in.tensor}, {r.tensor}, tfl::BuiltinOptions_HardSwishOptions,
                 tfl::CreateHardSwishOptions(fbb_).Union());
          return;
        }
    }
    const bool c0 = is_const(n.input(0)), c1 = is_const(n.input(1));
    if (c0 && c1) fail(n, "both operands are constants");
    if (op == "Div" && !c1) fail(n, "only division by a constant is exported (as a multiplication)");
    if (op == "Sub" && c0) fail(n, "only subtraction of a constant from a computed tensor is exported");
    std::string out = n.output(0);
    const bool fuse = op == "Add" || op == "Mul" || op == "Sub";
    const auto act = fuse ? take_activation(out) : tfl::ActivationFunctionType_NONE;
    const Ref& r = define(out, act != tfl::ActivationFunctionType_NONE);
    std::vector<int> operands;
    for (int i = 0; i < 2; ++i) {
      const std::string& name = n.input(i);
      if (is_const(name)) {
        if (op == "Div") {
          HostTensor inv = *value(name).constant;
          for (auto& v : inv.data) v = 1.0 / v;
          Ref tmp = r;
          const Shape dims = inv.dims;
          std::vector<float> data = inv.to_floats();
          Shape shape = dims;
          shape.insert(shape.begin(), tmp.shape.size() - shape.size(), 1);
          if (tmp.nhwc) data = permute(shape, data, kToNhwc), shape = {shape[0], shape[2], shape[3], shape[1]};
          operands.push_back(const_f32(name + "_reciprocal", shape, data));
        } else {
          operands.push_back(broadcast_constant(name, r));
        }
        continue;
      }
      const Ref& in = ref(name);
      if (in.shape.size() != r.shape.size()) fail(n, "operands of different ranks are exported only when one is a constant");
      operands.push_back(in.tensor);
    }
    if (op == "Add")
      add_op(tfl::BuiltinOperator_ADD, operands, {r.tensor}, tfl::BuiltinOptions_AddOptions, tfl::CreateAddOptions(fbb_, act).Union());
    else if (op == "Sub")
      add_op(tfl::BuiltinOperator_SUB, operands, {r.tensor}, tfl::BuiltinOptions_SubOptions, tfl::CreateSubOptions(fbb_, act).Union());
    else
      add_op(tfl::BuiltinOperator_MUL, operands, {r.tensor}, tfl::BuiltinOptions_MulOptions, tfl::CreateMulOptions(fbb_, act).Union());
  }

  void pool(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    if (in.shape.size() != 4) fail(n, "only 2-D pooling is exported");
    const bool max = n.op_type() == "MaxPool";
    if (attr_ints(n, "dilations", {1, 1}) != Shape{1, 1}) fail(n, "dilated pooling has no TFLite op");
    const Shape kernel = attr_ints(n, "kernel_shape", {}), strides = attr_ints(n, "strides", {1, 1});
    const Shape& out_shape = value(n.output(0)).shape;
    // Zero padding in front is exact for an average that counts the padding, and for a max over values that
    // cannot be negative; TFLite's SAME already leaves padding out of both.
    const bool zero_ok = max ? in.nonnegative : attr_i(n, "count_include_pad", 0) != 0;
    int input = in.tensor;
    const auto padding = padding_for(n, input, in, kernel, strides, {1, 1}, {out_shape[2], out_shape[3]}, zero_ok,
                                     max ? "the input may be negative (zero padding would change the maximum)"
                                         : "the average leaves the padding out (count_include_pad=0)");
    std::string out = n.output(0);
    const auto act = take_activation(out);
    const Ref& r = define(out, max ? in.nonnegative : act != tfl::ActivationFunctionType_NONE);
    add_op(max ? tfl::BuiltinOperator_MAX_POOL_2D : tfl::BuiltinOperator_AVERAGE_POOL_2D, {input}, {r.tensor},
           tfl::BuiltinOptions_Pool2DOptions,
           tfl::CreatePool2DOptions(fbb_, padding, static_cast<int>(strides[1]), static_cast<int>(strides[0]),
                                    static_cast<int>(kernel[1]), static_cast<int>(kernel[0]), act)
               .Union());
  }

  void mean(const onnx::NodeProto& n, std::vector<int64_t> axes, bool keepdims) {
    const Ref in = ref(n.input(0));
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
      if (kept_onnx != kept_stored) fail(n, "this reduction without keepdims reorders the remaining axes");
    }
    const Ref& r = define(n.output(0));
    if (r.nhwc != (in.nhwc && keepdims)) fail(n, "reduction result layout");
    add_op(tfl::BuiltinOperator_MEAN, {in.tensor, const_i32("axes", stored)}, {r.tensor}, tfl::BuiltinOptions_ReducerOptions,
           tfl::CreateReducerOptions(fbb_, keepdims).Union());
  }

  void reduce_mean(const onnx::NodeProto& n) {
    std::vector<int64_t> axes = attr_ints(n, "axes", {});
    if (n.input_size() > 1 && !n.input(1).empty()) axes = value(n.input(1)).constant->to_ints();
    if (axes.empty())
      for (size_t i = 0; i < value(n.input(0)).shape.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    mean(n, axes, attr_i(n, "keepdims", 1) != 0);
  }

  void fully_connected(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    const bool gemm = n.op_type() == "Gemm";
    // A MatMul over the last axis of a 3-D or 4-D input is FULLY_CONNECTED with keep_num_dims, in ONNX's
    // element order (a 4-D value goes to NCHW and its result back to NHWC).
    const size_t rank = in.shape.size();
    if (rank != 2 && (gemm || rank > 4)) fail(n, "only 2-D inputs (3-D and 4-D for MatMul) are exported as FULLY_CONNECTED");
    if (!is_const(n.input(1))) fail(n, "the weights must be a constant");
    const HostTensor& b = *value(n.input(1)).constant;
    if (b.dims.size() != 2) fail(n, "the weights must be 2-D");
    if (gemm && attr_i(n, "transA", 0) != 0) fail(n, "transA=1 is not exported");
    const bool trans_b = gemm && attr_i(n, "transB", 0) != 0;
    const float alpha = gemm ? attr_f(n, "alpha", 1.f) : 1.f, beta = gemm ? attr_f(n, "beta", 1.f) : 1.f;
    std::vector<float> w = b.to_floats();
    if (!trans_b) w = permute(b.dims, w, {1, 0});  // TFLite wants [out, in]
    const int64_t outs = trans_b ? b.dims[0] : b.dims[1], ins = trans_b ? b.dims[1] : b.dims[0];
    for (auto& v : w) v *= alpha;
    std::vector<float> bias(static_cast<size_t>(outs), 0.f);
    if (gemm && n.input_size() > 2 && !n.input(2).empty()) {
      const HostTensor& c = *value(n.input(2)).constant;
      if (c.numel() != outs && c.numel() != 1) fail(n, "the bias must have one value per output");
      const auto cv = c.to_floats();
      for (size_t o = 0; o < bias.size(); ++o) bias[o] = beta * cv[cv.size() == 1 ? 0 : o];
    }
    std::string out = n.output(0);
    const auto act = take_activation(out);
    const std::string& name = n.name().empty() ? n.output(0) : n.name();
    const int wt = const_f32(name + "_weights", {outs, ins}, w), bt = const_f32(name + "_bias", {outs}, bias);
    if (rank == 2) {
      const Ref& r = define(out, act != tfl::ActivationFunctionType_NONE);
      add_op(tfl::BuiltinOperator_FULLY_CONNECTED, {in.tensor, wt, bt}, {r.tensor}, tfl::BuiltinOptions_FullyConnectedOptions,
             tfl::CreateFullyConnectedOptions(fbb_, act).Union());
      return;
    }
    const int src = as_nchw(in, false);
    const int target = rank == 4 ? add_tensor(out + "_nchw", value(out).shape, false) : define(out, act != tfl::ActivationFunctionType_NONE).tensor;
    add_op(tfl::BuiltinOperator_FULLY_CONNECTED, {src, wt, bt}, {target}, tfl::BuiltinOptions_FullyConnectedOptions,
           tfl::CreateFullyConnectedOptions(fbb_, act, tfl::FullyConnectedOptionsWeightsFormat_DEFAULT, true).Union());
    if (rank != 4) return;
    const Ref& r = define(out, act != tfl::ActivationFunctionType_NONE);
    add_op(tfl::BuiltinOperator_TRANSPOSE, {target, const_i32("perm", {0, 2, 3, 1})}, {r.tensor}, tfl::BuiltinOptions_TransposeOptions,
           tfl::CreateTransposeOptions(fbb_).Union());
  }

  // Reshapes follow ONNX's (NCHW) element order: from NHWC to NCHW first, and back when 4-D again.
  void reshape(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    const Shape& shape = value(n.output(0)).shape;
    const int src = as_nchw(in, true);
    const bool nhwc = shape.size() == 4;
    const bool direct = !nhwc || shape[2] * shape[3] == 1;  // NHWC with H = W = 1 has NCHW's byte order
    const std::string out = n.output(0);
    const int target = direct ? define(out, in.nonnegative).tensor : add_tensor(out + "_nchw", shape, false);
    std::vector<int32_t> dims;
    for (int32_t d : tensors_[static_cast<size_t>(target)].shape) dims.push_back(d);
    add_op(tfl::BuiltinOperator_RESHAPE, {src, const_i32("shape", dims)}, {target}, tfl::BuiltinOptions_ReshapeOptions,
           tfl::CreateReshapeOptionsDirect(fbb_, &dims).Union());
    if (direct) return;
    const Ref& r = define(out, in.nonnegative);
    add_op(tfl::BuiltinOperator_TRANSPOSE, {target, const_i32("perm", {0, 2, 3, 1})}, {r.tensor},
           tfl::BuiltinOptions_TransposeOptions, tfl::CreateTransposeOptions(fbb_).Union());
  }

  // One TRANSPOSE from the stored input layout straight to the stored output layout.
  void transpose(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    const size_t rank = in.shape.size();
    std::vector<int64_t> perm = attr_ints(n, "perm", {});
    if (perm.empty())
      for (size_t i = 0; i < rank; ++i) perm.push_back(static_cast<int64_t>(rank - 1 - i));
    const Ref& r = define(n.output(0), in.nonnegative);
    std::vector<int32_t> q(rank);
    for (size_t j = 0; j < rank; ++j) {
      const int64_t onnx_out_dim = r.nhwc ? kToNhwc[j] : static_cast<int64_t>(j);
      const int64_t onnx_in_dim = perm[static_cast<size_t>(onnx_out_dim)];
      q[j] = static_cast<int32_t>(in.nhwc ? kFromNhwc[static_cast<size_t>(onnx_in_dim)] : onnx_in_dim);
    }
    add_op(tfl::BuiltinOperator_TRANSPOSE, {in.tensor, const_i32("perm", q)}, {r.tensor}, tfl::BuiltinOptions_TransposeOptions,
           tfl::CreateTransposeOptions(fbb_).Union());
  }

  int stored_axis(const onnx::NodeProto& n, const Ref& r, int64_t axis) const {
    const int64_t rank = static_cast<int64_t>(r.shape.size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) fail(n, "axis out of range");
    return static_cast<int>(r.nhwc ? kFromNhwc[static_cast<size_t>(axis)] : axis);
  }

  void concat(const onnx::NodeProto& n) {
    std::vector<int> inputs;
    bool nonneg = true;
    for (const auto& name : n.input()) {
      if (is_const(name)) fail(n, "constant inputs to Concat are not exported");
      const Ref& in = ref(name);
      inputs.push_back(in.tensor);
      nonneg &= in.nonnegative;
    }
    std::string out = n.output(0);
    const auto act = take_activation(out);
    const Ref& r = define(out, nonneg || act != tfl::ActivationFunctionType_NONE);
    add_op(tfl::BuiltinOperator_CONCATENATION, inputs, {r.tensor}, tfl::BuiltinOptions_ConcatenationOptions,
           tfl::CreateConcatenationOptions(fbb_, stored_axis(n, r, attr_i(n, "axis", 0)), act).Union());
  }

  void split(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    const int axis = stored_axis(n, in, attr_i(n, "axis", 0));
    std::vector<int> outs;
    std::vector<int32_t> sizes;
    for (const auto& name : n.output()) {
      const Ref& r = define(name, in.nonnegative);
      outs.push_back(r.tensor);
      sizes.push_back(tensors_[static_cast<size_t>(r.tensor)].shape[static_cast<size_t>(axis)]);
    }
    const int count = static_cast<int>(outs.size());
    if (std::all_of(sizes.begin(), sizes.end(), [&](int32_t s) { return s == sizes[0]; }))
      add_op(tfl::BuiltinOperator_SPLIT, {const_i32("axis", {axis}, {}), in.tensor}, outs, tfl::BuiltinOptions_SplitOptions,
             tfl::CreateSplitOptions(fbb_, count).Union());
    else
      add_op(tfl::BuiltinOperator_SPLIT_V, {in.tensor, const_i32("sizes", sizes), const_i32("axis", {axis}, {})}, outs,
             tfl::BuiltinOptions_SplitVOptions, tfl::CreateSplitVOptions(fbb_, count).Union());
  }

  // A Slice of a computed tensor with constant bounds and step 1 (ShuffleNetV2's chunk as exported): SLICE.
  void slice(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    auto ints = [&](int i) {
      if (n.input_size() <= i || n.input(i).empty()) return std::vector<int64_t>{};
      if (!is_const(n.input(i))) fail(n, "only constant bounds are exported");
      return value(n.input(i)).constant->to_ints();
    };
    if (n.input_size() < 3) fail(n, "a Slice before opset 10 is not exported");
    const auto axes = onnx_io::slice_axes(in.shape, ints(1), ints(2), ints(3), ints(4));
    if (!axes) fail(n, "its starts, ends, axes and steps do not check out");
    if (std::any_of(axes->step.begin(), axes->step.end(), [](int64_t s) { return s != 1; }))
      fail(n, "only step 1 is exported (SLICE)");
    std::vector<int32_t> begin(in.shape.size()), size(in.shape.size());
    for (size_t a = 0; a < in.shape.size(); ++a) {
      const auto s = static_cast<size_t>(stored_axis(n, in, static_cast<int64_t>(a)));
      begin[s] = static_cast<int32_t>(axes->begin[a]);
      size[s] = static_cast<int32_t>(axes->out[a]);
    }
    const Ref& r = define(n.output(0), in.nonnegative);
    add_op(tfl::BuiltinOperator_SLICE, {in.tensor, const_i32("begin", begin), const_i32("size", size)}, {r.tensor},
           tfl::BuiltinOptions_SliceOptions, tfl::CreateSliceOptions(fbb_).Union());
  }

  void pad(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    if (attr_s(n, "mode", "constant") != "constant") fail(n, "only constant padding has a TFLite op (PAD)");
    std::vector<int64_t> pads = attr_ints(n, "pads", {});
    if (n.input_size() > 1 && !n.input(1).empty()) pads = value(n.input(1)).constant->to_ints();
    if (n.input_size() > 2 && !n.input(2).empty() && floats(n.input(2)).at(0) != 0.f) fail(n, "only zero padding is exported");
    const size_t rank = in.shape.size();
    std::vector<int32_t> paddings(2 * rank);
    for (size_t j = 0; j < rank; ++j) {
      const size_t d = in.nhwc ? static_cast<size_t>(kToNhwc[j]) : j;
      paddings[2 * j] = static_cast<int32_t>(pads[d]);
      paddings[2 * j + 1] = static_cast<int32_t>(pads[d + rank]);
    }
    const Ref& r = define(n.output(0), in.nonnegative);
    add_op(tfl::BuiltinOperator_PAD, {in.tensor, const_i32("paddings", paddings, {static_cast<int64_t>(rank), 2})}, {r.tensor},
           tfl::BuiltinOptions_PadOptions, tfl::CreatePadOptions(fbb_).Union());
  }

  void softmax(const onnx::NodeProto& n) {
    const Ref in = ref(n.input(0));
    const int64_t rank = static_cast<int64_t>(in.shape.size());
    const int64_t axis = attr_i(n, "axis", g_.opset >= 13 ? -1 : 1);
    // Before opset 13 a softmax flattens from `axis` on: the same only for 2-D inputs or the last axis.
    if (stored_axis(n, in, axis) != rank - 1 || (g_.opset < 13 && rank != 2 && axis != -1 && axis != rank - 1))
      fail(n, "only a softmax over the innermost (channel) axis has a TFLite op");
    const Ref& r = define(n.output(0), true);
    add_op(tfl::BuiltinOperator_SOFTMAX, {in.tensor}, {r.tensor}, tfl::BuiltinOptions_SoftmaxOptions,
           tfl::CreateSoftmaxOptions(fbb_, 1.f).Union());
  }

  // ---- the flatbuffer -----------------------------------------------------------------------------------
  std::string finish(const std::vector<int>& inputs, const std::vector<int>& outputs) {
    std::vector<flatbuffers::Offset<tfl::OperatorCode>> codes;
    std::map<tfl::BuiltinOperator, uint32_t> code_index;
    std::vector<flatbuffers::Offset<tfl::Operator>> operators;
    for (const auto& op : ops_) {
      if (!code_index.count(op.op)) {
        code_index[op.op] = static_cast<uint32_t>(codes.size());
        // Readers before TF 2.4 only know the byte field; every op written here has a code below 127.
        codes.push_back(tfl::CreateOperatorCode(fbb_, static_cast<int8_t>(op.op), 0, 1, op.op));
      }
      operators.push_back(tfl::CreateOperatorDirect(fbb_, code_index[op.op], &op.inputs, &op.outputs, op.options_type, op.options));
    }
    std::vector<flatbuffers::Offset<tfl::Tensor>> tensors;
    for (const auto& t : tensors_) tensors.push_back(tfl::CreateTensorDirect(fbb_, &t.shape, t.type, t.buffer, t.name.c_str()));
    const auto subgraph = tfl::CreateSubGraphDirect(fbb_, &tensors, &inputs, &outputs, &operators, "main");
    std::vector<flatbuffers::Offset<tfl::SubGraph>> subgraphs = {subgraph};
    const auto model = tfl::CreateModelDirect(fbb_, 3, &codes, &subgraphs, "nn-meter ONNX export", &buffers_);
    tfl::FinishModelBuffer(fbb_, model);
    return std::string(reinterpret_cast<const char*>(fbb_.GetBufferPointer()), fbb_.GetSize());
  }

  const Graph& g_;
  std::string backend_;
  flatbuffers::FlatBufferBuilder fbb_{1 << 16};
  std::vector<flatbuffers::Offset<tfl::Buffer>> buffers_;
  std::vector<TensorDef> tensors_;
  std::vector<OpDef> ops_;
  std::map<std::string, Ref> refs_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<int> absorbed_;
};

}  // namespace

const std::vector<std::string>& exportable_ops() {
  static const std::vector<std::string> ops(kExportable.begin(), kExportable.end());
  return ops;
}

std::string export_tflite(onnx::ModelProto model, const std::string& origin, const std::string& backend) {
  // Ops neither exported nor foldable are named here, before the loader's own (onednn_cpu) wording.
  for (const auto& node : model.graph().node())
    if (!kExportable.count(node.op_type()) && !kFoldOnly.count(node.op_type()))
      throw Error(fmt::format("{} cannot convert {} node '{}' in {}: op '{}' has no TFLite export (supported: {})", backend,
                              node.op_type(), node.name().empty() ? node.output(0) : node.name(), origin, node.op_type(),
                              fmt::join(kExportable, ", ")));
  const auto load = [&] {
    try {
      return onednn::load_graph(std::move(model), origin);
    } catch (const Error& e) {
      throw Error(fmt::format("{} cannot load {}: {}", backend, origin, e.what()));
    }
  };
  const Graph graph = load();
  return Exporter(graph, backend).run();
}

std::string export_tflite(const fs::path& onnx_path, const std::string& backend) {
  onnx::ModelProto model;
  if (!model.ParseFromString(io::read_file(onnx_path)))
    throw Error(fmt::format("{}: {} is not an ONNX model (it does not parse as one)", backend, onnx_path.string()));
  return export_tflite(std::move(model), onnx_path.filename().string(), backend);
}

}  // namespace nnmeter::tflite
