#include "backends/xnnpack/engine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xnnpack.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "backends/measure.h"
#include "common/text.h"
#include "tflite_schema_generated.h"

#ifndef NNMETER_XNNPACK_VERSION
#define NNMETER_XNNPACK_VERSION "unknown"
#endif

namespace nnmeter::xnnpack {

namespace {

namespace tfl = nnmeter::tflite_schema;

// ---- XNNPACK's allocations ----------------------------------------------------------------------------
// XNNPACK keeps packed weights and per-operator buffers in memory it allocates itself. Routing its
// allocator through here lets an engine know those blocks, so a cold run can evict them as it evicts
// the activations. The blocks an engine's operators allocate are recorded while that engine is built
// (creation and setup happen in the constructing thread).
thread_local std::map<const void*, size_t>* t_collect = nullptr;

void note_alloc(const void* p, size_t size) {
  if (p && t_collect) (*t_collect)[p] = size;
}
void note_free(const void* p) {
  if (p && t_collect) t_collect->erase(p);
}
void* xa_allocate(void*, size_t size) {
  void* p = std::malloc(size);
  note_alloc(p, size);
  return p;
}
void* xa_reallocate(void*, void* old, size_t size) {
  // Forget the old block before realloc frees it; a failed realloc keeps it, and it is noted again.
  size_t old_size = 0;
  if (old && t_collect) {
    const auto it = t_collect->find(old);
    if (it != t_collect->end()) old_size = it->second, t_collect->erase(it);
  }
  void* p = std::realloc(old, size);
  if (p) note_alloc(p, size);
  else if (old_size) note_alloc(old, old_size);
  return p;
}
void xa_deallocate(void*, void* p) {
  note_free(p);
  std::free(p);
}
void* xa_aligned_allocate(void*, size_t alignment, size_t size) {
  void* p = nullptr;
  if (posix_memalign(&p, std::max(alignment, sizeof(void*)), size) != 0) return nullptr;
  note_alloc(p, size);
  return p;
}

void initialize_once() {
  static std::once_flag once;
  static xnn_status status = xnn_status_success;
  std::call_once(once, [] {
    static const xnn_allocator allocator = {nullptr, xa_allocate, xa_reallocate, xa_deallocate, xa_aligned_allocate,
                                            xa_deallocate};
    status = xnn_initialize(&allocator);
  });
  if (status != xnn_status_success)
    throw Error(fmt::format("xnnpack_cpu: XNNPACK does not initialize on this CPU (status {})", static_cast<int>(status)));
}

const char* status_name(xnn_status s) {
  switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "uninitialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
  }
  return "unknown status";
}

const float kInf = std::numeric_limits<float>::infinity();

// ---- the plan -----------------------------------------------------------------------------------------
struct Slot {
  std::string name;
  Shape shape;               // as stored (NHWC for 4-D activations)
  std::vector<float> data;   // activations, and constants read at run time; XNNPACK may read 16 bytes past the end
  bool constant = false;
  int producer = -1;         // op index
  int consumers = 0;         // op inputs reading it, plus one if it is a graph output
};

struct OperatorDeleter {
  void operator()(xnn_operator_t op) const { xnn_delete_operator(op); }
};
using OperatorPtr = std::unique_ptr<xnn_operator, OperatorDeleter>;

struct Step {
  std::string kind;  // the XNNPACK operator (or "transpose" for the one step XNNPACK has no operator for)
  std::string from;  // the TFLite op
  std::vector<std::string> fused;
  std::string activation;
  int output = -1;
  OperatorPtr op;
  std::function<void()> run;  // steps without an XNNPACK operator
};

// Saturates: a damaged file's dimensions must not overflow (the bounds checked against it are far lower).
int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) {
    if (d > 0 && n > std::numeric_limits<int64_t>::max() / d) return std::numeric_limits<int64_t>::max();
    n *= d;
  }
  return n;
}

}  // namespace

struct Engine::Impl {
  std::string origin;
  EngineOptions opt;
  pthreadpool_t pool = nullptr;
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<int> inputs, outputs;
  std::map<const void*, size_t> xnn_blocks;  // XNNPACK's own allocations for this engine's operators

  // The file being compiled: valid inside the constructor only (the bytes are the caller's).
  const tfl::Model* model = nullptr;
  const tfl::SubGraph* graph = nullptr;
  std::map<int, std::pair<int, std::array<uint32_t, 4>>> pending_pads;  // pad output -> (pad input, t/r/b/l)
  std::set<size_t> absorbed;  // ops merged into an earlier step

  ~Impl() {
    steps.clear();  // operators before the pool they ran on
    if (pool) pthreadpool_destroy(pool);
  }

  // ---- errors -------------------------------------------------------------------------------------------
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(fmt::format("xnnpack_cpu cannot run {}: {}", origin, why));
  }
  [[noreturn]] void fail_op(const std::string& op, int out, const std::string& why) const {
    const std::string name = out >= 0 ? slots[static_cast<size_t>(out)].name : "?";
    throw Error(fmt::format("xnnpack_cpu cannot run {} '{}' in {}: {}", op, name, origin, why));
  }
  void check(xnn_status s, const std::string& op, int out, const char* call) const {
    if (s != xnn_status_success) fail_op(op, out, fmt::format("{} failed ({})", call, status_name(s)));
  }

  // ---- reading the file ---------------------------------------------------------------------------------
  void read(const std::string& bytes) {
    flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    if (!tfl::VerifyModelBuffer(verifier)) fail("the file is not a valid .tflite model (convert the model again)");
    model = tfl::GetModel(bytes.data());
    if (!model->subgraphs() || model->subgraphs()->size() != 1) fail("the model must have exactly one subgraph");
    graph = model->subgraphs()->Get(0);
    if (!graph->tensors() || !graph->operators() || !graph->inputs() || !graph->outputs())
      fail("the subgraph lacks tensors, operators, inputs or outputs");
    for (const auto* t : *graph->tensors()) {
      Slot s;
      s.name = t->name() ? t->name()->str() : fmt::format("tensor{}", slots.size());
      if (!valid_utf8(s.name)) fail(fmt::format("tensor {} has a name that is not UTF-8", slots.size()));
      if (t->shape())
        for (int32_t d : *t->shape()) {
          if (d < 1 || d > (1 << 24)) fail(fmt::format("tensor '{}' has dimension {}", s.name, d));
          s.shape.push_back(d);
        }
      if (s.shape.size() > XNN_MAX_TENSOR_DIMS) fail(fmt::format("tensor '{}' has more than {} dimensions", s.name, XNN_MAX_TENSOR_DIMS));
      if (numel_of(s.shape) > (int64_t{1} << 30)) fail(fmt::format("tensor '{}' has over 2^30 elements", s.name));
      const auto* buffer = t->buffer() && model->buffers() && t->buffer() < model->buffers()->size()
                               ? model->buffers()->Get(t->buffer())
                               : nullptr;
      if (buffer && buffer->data() && buffer->data()->size() > 0) {
        s.constant = true;
        const size_t elem = t->type() == tfl::TensorType_INT32 || t->type() == tfl::TensorType_FLOAT32 ? 4 : 0;
        if (elem == 0) fail(fmt::format("constant '{}' is neither float32 nor int32", s.name));
        if (buffer->data()->size() != static_cast<size_t>(numel_of(s.shape)) * 4)
          fail(fmt::format("constant '{}' holds {} bytes for shape [{}]", s.name, buffer->data()->size(), fmt::join(s.shape, ",")));
        s.data.resize(static_cast<size_t>(numel_of(s.shape)) + 4);
        std::memcpy(s.data.data(), buffer->data()->data(), buffer->data()->size());  // int32 constants keep their bits
      } else if (t->type() != tfl::TensorType_FLOAT32) {
        fail(fmt::format("tensor '{}' is not float32 (the engine runs float32 models)", s.name));
      }
      slots.push_back(std::move(s));
    }
    const auto index = [&](int32_t i, bool optional) {
      if (optional && i == -1) return -1;
      if (i < 0 || static_cast<size_t>(i) >= slots.size()) fail(fmt::format("tensor index {} out of range", i));
      return static_cast<int>(i);
    };
    for (int32_t i : *graph->inputs()) inputs.push_back(index(i, false));
    for (int32_t i : *graph->outputs()) outputs.push_back(index(i, false)), ++slots[static_cast<size_t>(outputs.back())].consumers;
    for (size_t o = 0; o < graph->operators()->size(); ++o) {
      const auto* op = graph->operators()->Get(static_cast<flatbuffers::uoffset_t>(o));
      if (!op->inputs() || !op->outputs() || op->outputs()->size() == 0) fail(fmt::format("operator {} has no inputs or outputs", o));
      if (!model->operator_codes() || op->opcode_index() >= model->operator_codes()->size())
        fail(fmt::format("operator {} has no operator code", o));
      for (int32_t i : *op->inputs())
        if (const int s = index(i, true); s >= 0) ++slots[static_cast<size_t>(s)].consumers;
      for (int32_t i : *op->outputs()) {
        Slot& s = slots[static_cast<size_t>(index(i, false))];
        if (s.constant || s.producer >= 0) fail(fmt::format("tensor '{}' is written twice", s.name));
        s.producer = static_cast<int>(o);
      }
    }
    // A file declares its activations' shapes; a bound keeps a hostile one from claiming all memory. 2^27
    // floats (512 MiB) is far above any single-image CNN at 224x224 (VGG-16 needs 15 M).
    int64_t activations = 0;
    for (const auto& s : slots)
      if (!s.constant) activations += numel_of(s.shape);
    if (activations > (int64_t{1} << 27))
      fail(fmt::format("its activations need {} floats, more than the 2^27 this engine allocates", activations));
    for (auto& s : slots)
      if (!s.constant) s.data.assign(static_cast<size_t>(numel_of(s.shape)) + 4, 0.f);  // + XNN_EXTRA_BYTES
    for (int i : inputs)
      if (slots[static_cast<size_t>(i)].constant) fail(fmt::format("input '{}' is a constant", slots[static_cast<size_t>(i)].name));
  }

  // ---- helpers ------------------------------------------------------------------------------------------
  Slot& slot(int i) { return slots[static_cast<size_t>(i)]; }
  float* ptr(int i) { return slot(i).data.data(); }
  static std::pair<float, float> clamp_of(tfl::ActivationFunctionType a) {
    switch (a) {
      case tfl::ActivationFunctionType_RELU: return {0.f, kInf};
      case tfl::ActivationFunctionType_RELU6: return {0.f, 6.f};
      case tfl::ActivationFunctionType_RELU_N1_TO_1: return {-1.f, 1.f};
      default: return {-kInf, kInf};
    }
  }
  static std::string activation_name(tfl::ActivationFunctionType a) {
    return a == tfl::ActivationFunctionType_NONE ? "" : tfl::EnumNameActivationFunctionType(a);
  }
  std::vector<int32_t> ints(int i, const std::string& op, int out) {
    const Slot& s = slot(i);
    if (!s.constant) fail_op(op, out, fmt::format("'{}' must be a constant", s.name));
    std::vector<int32_t> v(static_cast<size_t>(numel_of(s.shape)));
    std::memcpy(v.data(), s.data.data(), v.size() * 4);
    return v;
  }
  Step& add(std::string kind, std::string from, int out, xnn_operator_t op, tfl::ActivationFunctionType act = tfl::ActivationFunctionType_NONE) {
    Step s;
    s.kind = std::move(kind);
    s.from = std::move(from);
    s.output = out;
    s.op.reset(op);
    s.activation = activation_name(act);
    steps.push_back(std::move(s));
    return steps.back();
  }
  void need(bool ok, const std::string& op, int out, const std::string& why) const {
    if (!ok) fail_op(op, out, why);
  }

  // ---- lowering -----------------------------------------------------------------------------------------
  void lower() {
    for (size_t o = 0; o < graph->operators()->size(); ++o) {
      if (absorbed.count(o)) continue;
      const auto* op = graph->operators()->Get(static_cast<flatbuffers::uoffset_t>(o));
      const auto code = model->operator_codes()->Get(op->opcode_index())->builtin_code();
      const std::string name = tfl::EnumNameBuiltinOperator(code);
      std::vector<int> in, out;
      for (int32_t i : *op->inputs()) in.push_back(i);
      for (int32_t i : *op->outputs()) out.push_back(i);
      for (int i : in) {
        if (i < 0 || slot(i).constant) continue;
        if (slot(i).producer >= static_cast<int>(o)) fail_op(name, out[0], fmt::format("reads '{}' before it is computed", slot(i).name));
        if (slot(i).producer < 0 && std::find(inputs.begin(), inputs.end(), i) == inputs.end())
          fail_op(name, out[0], fmt::format("reads '{}', which nothing computes", slot(i).name));
      }
      // The operands each op reads by position must be there.
      const auto arg = [&](size_t k) {
        if (k >= in.size() || in[k] < 0) fail_op(name, out[0], fmt::format("has no operand {}", k));
        return in[k];
      };
      if (in.empty() || in[0] < 0) arg(0);
      switch (code) {
        case tfl::BuiltinOperator_CONV_2D:
        case tfl::BuiltinOperator_DEPTHWISE_CONV_2D: conv(op, name, in, out[0], code == tfl::BuiltinOperator_DEPTHWISE_CONV_2D); break;
        case tfl::BuiltinOperator_FULLY_CONNECTED: fully_connected(op, name, in, out[0]); break;
        case tfl::BuiltinOperator_ADD:
        case tfl::BuiltinOperator_SUB:
        case tfl::BuiltinOperator_MUL: binary(op, code, name, in, out[0]); break;
        case tfl::BuiltinOperator_LOGISTIC:
        case tfl::BuiltinOperator_HARD_SWISH:
        case tfl::BuiltinOperator_RELU:
        case tfl::BuiltinOperator_RELU6:
        case tfl::BuiltinOperator_SOFTMAX: unary(op, code, name, in, out[0]); break;
        case tfl::BuiltinOperator_MAX_POOL_2D:
        case tfl::BuiltinOperator_AVERAGE_POOL_2D: pooling(op, code == tfl::BuiltinOperator_MAX_POOL_2D, name, in, out[0]); break;
        case tfl::BuiltinOperator_MEAN: mean(name, {arg(0), arg(1)}, out[0]); break;
        case tfl::BuiltinOperator_PAD: arg(1), pad(name, in, out[0]); break;
        case tfl::BuiltinOperator_CONCATENATION: concat(op, name, in, out[0]); break;
        case tfl::BuiltinOperator_SPLIT: split(name, arg(1), ints(arg(0), name, out[0]), out); break;
        case tfl::BuiltinOperator_SPLIT_V: split(name, arg(0), ints(arg(2), name, out[0]), out); break;
        case tfl::BuiltinOperator_SLICE: slice(name, arg(0), ints(arg(1), name, out[0]), ints(arg(2), name, out[0]), out[0]); break;
        case tfl::BuiltinOperator_RESHAPE: reshape(name, arg(0), out[0]); break;
        case tfl::BuiltinOperator_TRANSPOSE:
          if (!channel_shuffle(o)) transpose(name, arg(0), ints(arg(1), name, out[0]), out[0]);
          break;
        default:
          fail_op(name, out[0], "op has no XNNPACK lowering (supported: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD, SUB, "
                                "MUL, LOGISTIC, HARD_SWISH, RELU, RELU6, SOFTMAX, MAX_POOL_2D, AVERAGE_POOL_2D, MEAN, PAD, "
                                "CONCATENATION, SPLIT, SPLIT_V, SLICE, RESHAPE, TRANSPOSE)");
      }
    }
    if (!pending_pads.empty()) fail("a PAD folded into a convolution has no convolution reading it");
  }

  const tfl::Operator* op_at(size_t o) const { return graph->operators()->Get(static_cast<flatbuffers::uoffset_t>(o)); }
  tfl::BuiltinOperator code_at(size_t o) const { return model->operator_codes()->Get(op_at(o)->opcode_index())->builtin_code(); }
  // The one op reading tensor `t` (as its first input), or -1.
  int sole_reader(int t) const {
    if (t < 0 || slots[static_cast<size_t>(t)].consumers != 1) return -1;
    for (size_t o = 0; o < graph->operators()->size(); ++o)
      if (op_at(o)->inputs()->size() >= 1 && op_at(o)->inputs()->Get(0) == t) return static_cast<int>(o);
    return -1;
  }
  // Op `o` when it is `code` with one output (and, for a TRANSPOSE, the constant permutation `perm`).
  bool is_op(int o, tfl::BuiltinOperator code, const std::vector<int32_t>& perm = {}) {
    if (o < 0 || code_at(static_cast<size_t>(o)) != code || op_at(static_cast<size_t>(o))->outputs()->size() != 1) return false;
    if (perm.empty()) return true;
    const auto* in = op_at(static_cast<size_t>(o))->inputs();
    if (in->size() != 2 || in->Get(1) < 0 || !slot(in->Get(1)).constant) return false;
    return ints(in->Get(1), "TRANSPOSE", -1) == perm;
  }
  int output_of(int o) const { return op_at(static_cast<size_t>(o))->outputs()->Get(0); }

  // ONNX's channel shuffle (Reshape to [N, g, C/g, H, W], Transpose(0, 2, 1, 3, 4), Reshape back) reaches
  // the .tflite between the layout transposes NHWC -> NCHW and back: five ops that are XNNPACK's channel
  // shuffle operator on the NHWC tensor, the operator XNNPACK has for ShuffleNet.
  bool channel_shuffle(size_t o) {
    const int first = static_cast<int>(o);
    if (!is_op(first, tfl::BuiltinOperator_TRANSPOSE, {0, 3, 1, 2})) return false;
    const int x = op_at(o)->inputs()->Get(0);
    const int r1 = sole_reader(output_of(first));
    if (!is_op(r1, tfl::BuiltinOperator_RESHAPE)) return false;
    const int t2 = sole_reader(output_of(r1));
    if (!is_op(t2, tfl::BuiltinOperator_TRANSPOSE, {0, 2, 1, 3, 4})) return false;
    const int r3 = sole_reader(output_of(t2));
    if (!is_op(r3, tfl::BuiltinOperator_RESHAPE)) return false;
    const int t4 = sole_reader(output_of(r3));
    if (!is_op(t4, tfl::BuiltinOperator_TRANSPOSE, {0, 2, 3, 1})) return false;
    if (!(first < r1 && r1 < t2 && t2 < r3 && r3 < t4)) return false;
    const int y = output_of(t4);
    const Shape& xs = slot(x).shape;
    const Shape& split = slot(output_of(r1)).shape;
    if (xs.size() != 4 || slot(y).shape != xs || split.size() != 5) return false;
    const int64_t n = xs[0], h = xs[1], w = xs[2], c = xs[3];
    if (split[0] != n || split[1] * split[2] != c || split[3] != h || split[4] != w || slot(output_of(r3)).shape != Shape{n, c, h, w})
      return false;
    const auto groups = static_cast<size_t>(split[1]), per_group = static_cast<size_t>(split[2]);
    if (groups < 2 || per_group < 1) return false;
    xnn_operator_t handle = nullptr;
    check(xnn_create_channel_shuffle_nc_x32(groups, per_group, static_cast<size_t>(c), static_cast<size_t>(c), 0, &handle), "TRANSPOSE",
          y, "xnn_create_channel_shuffle_nc_x32");
    add("channel_shuffle_nc_x32", "TRANSPOSE", y, handle).fused = {"RESHAPE", "TRANSPOSE", "RESHAPE", "TRANSPOSE"};
    check(xnn_setup_channel_shuffle_nc_x32(handle, static_cast<size_t>(n * h * w), ptr(x), ptr(y), pool), "TRANSPOSE", y,
          "xnn_setup_channel_shuffle_nc_x32");
    absorbed.insert({static_cast<size_t>(r1), static_cast<size_t>(t2), static_cast<size_t>(r3), static_cast<size_t>(t4)});
    return true;
  }

  // XNNPACK folds a zero PAD of the spatial dims into the convolution that is its only reader (its
  // subgraph's fusion pass); the delegate does the same, so a padded convolution is one operator.
  bool pad_folds_into_conv(int pad_out) {
    const Slot& s = slot(pad_out);
    if (s.consumers != 1 || s.shape.size() != 4) return false;
    for (size_t o = 0; o < graph->operators()->size(); ++o) {
      const auto* op = graph->operators()->Get(static_cast<flatbuffers::uoffset_t>(o));
      if (op->inputs()->size() < 1 || op->inputs()->Get(0) != pad_out) continue;
      const auto code = model->operator_codes()->Get(op->opcode_index())->builtin_code();
      if (const auto* c = op->builtin_options_as_Conv2DOptions(); code == tfl::BuiltinOperator_CONV_2D && c)
        return c->padding() == tfl::Padding_VALID;
      if (const auto* d = op->builtin_options_as_DepthwiseConv2DOptions(); code == tfl::BuiltinOperator_DEPTHWISE_CONV_2D && d)
        return d->padding() == tfl::Padding_VALID;
      return false;
    }
    return false;
  }

  void conv(const tfl::Operator* op, const std::string& name, const std::vector<int>& in, int out, bool depthwise) {
    need(in.size() >= 2 && in[1] >= 0 && slot(in[1]).constant && slot(in[1]).shape.size() == 4, name, out, "needs a constant 4-D filter");
    int x = in[0];
    const Slot& filter = slot(in[1]);
    const float* bias = in.size() > 2 && in[2] >= 0 ? ptr(in[2]) : nullptr;
    if (bias) need(slot(in[2]).constant, name, out, "the bias must be a constant");
    tfl::Padding padding;
    int sh, sw, dh, dw;
    tfl::ActivationFunctionType act;
    if (depthwise) {
      const auto* o = op->builtin_options_as_DepthwiseConv2DOptions();
      need(o != nullptr, name, out, "has no DepthwiseConv2DOptions");
      padding = o->padding(), sh = o->stride_h(), sw = o->stride_w(), dh = o->dilation_h_factor(), dw = o->dilation_w_factor();
      act = o->fused_activation_function();
    } else {
      const auto* o = op->builtin_options_as_Conv2DOptions();
      need(o != nullptr, name, out, "has no Conv2DOptions");
      padding = o->padding(), sh = o->stride_h(), sw = o->stride_w(), dh = o->dilation_h_factor(), dw = o->dilation_w_factor();
      act = o->fused_activation_function();
    }
    need(sh >= 1 && sw >= 1 && dh >= 1 && dw >= 1, name, out, "strides and dilations must be at least 1");
    std::array<uint32_t, 4> pads{0, 0, 0, 0};
    std::vector<std::string> fused;
    if (const auto it = pending_pads.find(x); it != pending_pads.end()) {
      pads = it->second.second;
      x = it->second.first;
      pending_pads.erase(it);
      fused.push_back("PAD");
    }
    const Shape& xs = slot(x).shape;
    const Shape& ys = slot(out).shape;
    need(xs.size() == 4 && ys.size() == 4, name, out, "input and output must be 4-D (NHWC)");
    const auto kh = static_cast<uint32_t>(filter.shape[1]), kw = static_cast<uint32_t>(filter.shape[2]);
    const int64_t cin = xs[3], cout = ys[3];
    uint32_t groups = 1;
    size_t group_in = 0, group_out = 0;
    uint32_t flags = padding == tfl::Padding_SAME ? XNN_FLAG_TENSORFLOW_SAME_PADDING : 0;
    if (depthwise) {
      need(filter.shape[0] == 1 && filter.shape[3] == cout && cout % cin == 0, name, out, "filter shape does not match");
      groups = static_cast<uint32_t>(cin), group_in = 1, group_out = static_cast<size_t>(cout / cin);
      flags |= XNN_FLAG_DEPTHWISE_CONVOLUTION;
    } else {
      need(filter.shape[0] == cout && filter.shape[3] >= 1 && cin % filter.shape[3] == 0, name, out, "filter shape does not match");
      groups = static_cast<uint32_t>(cin / filter.shape[3]);
      group_in = static_cast<size_t>(filter.shape[3]);
      need(cout % groups == 0, name, out, "output channels do not split into the groups");
      group_out = static_cast<size_t>(cout) / groups;
    }
    if (bias) need(numel_of(slot(in[2]).shape) == cout, name, out, "the bias must have one value per output channel");
    expect_window_output(name, out, xs, ys, {filter.shape[1], filter.shape[2]}, {sh, sw}, {dh, dw}, pads, padding == tfl::Padding_SAME);
    const auto [lo, hi] = clamp_of(act);
    xnn_operator_t handle = nullptr;
    check(xnn_create_convolution2d_nhwc_f32(pads[0], pads[1], pads[2], pads[3], kh, kw, static_cast<uint32_t>(sh),
                                            static_cast<uint32_t>(sw), static_cast<uint32_t>(dh), static_cast<uint32_t>(dw), groups,
                                            group_in, group_out, static_cast<size_t>(cin), static_cast<size_t>(cout),
                                            filter.data.data(), bias, lo, hi, flags, &handle),
          name, out, "xnn_create_convolution2d_nhwc_f32");
    Step& s = add("convolution2d_nhwc_f32", name, out, handle, act);
    s.fused = fused;
    check(xnn_setup_convolution2d_nhwc_f32(handle, static_cast<size_t>(xs[0]), static_cast<size_t>(xs[1]),
                                           static_cast<size_t>(xs[2]), ptr(x), ptr(out), pool),
          name, out, "xnn_setup_convolution2d_nhwc_f32");
  }

  // XNNPACK computes a window op's output size from its parameters and writes that many pixels: the
  // file's output shape must be exactly that, or the operator would write past the buffer.
  void expect_window_output(const std::string& name, int out, const Shape& xs, const Shape& ys, std::array<int64_t, 2> kernel,
                            std::array<int64_t, 2> stride, std::array<int64_t, 2> dilation, const std::array<uint32_t, 4>& pads,
                            bool same) const {
    for (size_t i = 0; i < 2; ++i) {
      const int64_t x = xs[i + 1], ext = (kernel[i] - 1) * dilation[i] + 1;
      const int64_t padded = x + pads[i == 0 ? 0 : 3] + pads[i == 0 ? 2 : 1];
      // XNNPACK sizes its indirection buffers by window and output: windows far beyond the padded input
      // (possible under SAME padding) and huge strides only come from damaged files.
      need(ext <= 2 * padded + 1 && stride[i] <= (1 << 16), name, out, "the window is larger than the padded input, or the stride huge");
      const int64_t expect = same ? (x + stride[i] - 1) / stride[i] : padded < ext ? 0 : (padded - ext) / stride[i] + 1;
      need(expect == ys[i + 1] && expect >= 1, name, out,
           fmt::format("output {} is {} where the window gives {}", i == 0 ? "height" : "width", ys[i + 1], expect));
    }
    need(xs[0] == ys[0], name, out, "input and output batch differ");
    // XNNPACK keeps one input pointer per window element and output pixel (its indirection buffer).
    need(numel_of({kernel[0], kernel[1], ys[0], ys[1], ys[2]}) <= (int64_t{1} << 25), name, out,
         "window elements times output pixels exceed 2^25 (the engine's bound for one operator)");
  }

  void fully_connected(const tfl::Operator* op, const std::string& name, const std::vector<int>& in, int out) {
    need(in.size() >= 2 && in[1] >= 0 && slot(in[1]).constant && slot(in[1]).shape.size() == 2, name, out, "needs constant 2-D weights");
    const auto* o = op->builtin_options_as_FullyConnectedOptions();
    const auto act = o ? o->fused_activation_function() : tfl::ActivationFunctionType_NONE;
    const Slot& w = slot(in[1]);
    const int64_t outs = w.shape[0], ins = w.shape[1];
    const int64_t total = numel_of(slot(in[0]).shape);
    need(ins > 0 && total % ins == 0 && numel_of(slot(out).shape) == total / ins * outs, name, out, "shapes do not match the weights");
    const float* bias = in.size() > 2 && in[2] >= 0 ? ptr(in[2]) : nullptr;
    if (bias) need(slot(in[2]).constant && numel_of(slot(in[2]).shape) == outs, name, out, "the bias must be a constant per output");
    const auto [lo, hi] = clamp_of(act);
    xnn_operator_t handle = nullptr;
    check(xnn_create_fully_connected_nc_f32(static_cast<size_t>(ins), static_cast<size_t>(outs), static_cast<size_t>(ins),
                                            static_cast<size_t>(outs), w.data.data(), bias, lo, hi, 0, &handle),
          name, out, "xnn_create_fully_connected_nc_f32");
    add("fully_connected_nc_f32", name, out, handle, act);
    check(xnn_setup_fully_connected_nc_f32(handle, static_cast<size_t>(total / ins), ptr(in[0]), ptr(out), pool), name, out,
          "xnn_setup_fully_connected_nc_f32");
  }

  void binary(const tfl::Operator* op, tfl::BuiltinOperator code, const std::string& name, const std::vector<int>& in, int out) {
    need(in.size() == 2 && in[1] >= 0, name, out, "needs two operands");
    auto act = tfl::ActivationFunctionType_NONE;
    if (const auto* o = op->builtin_options_as_AddOptions()) act = o->fused_activation_function();
    if (const auto* o = op->builtin_options_as_SubOptions()) act = o->fused_activation_function();
    if (const auto* o = op->builtin_options_as_MulOptions()) act = o->fused_activation_function();
    const auto [lo, hi] = clamp_of(act);
    std::vector<size_t> a(slot(in[0]).shape.begin(), slot(in[0]).shape.end()), b(slot(in[1]).shape.begin(), slot(in[1]).shape.end());
    need(a.size() <= XNN_MAX_TENSOR_DIMS && b.size() <= XNN_MAX_TENSOR_DIMS, name, out, "operands of more than 6 dimensions");
    xnn_operator_t handle = nullptr;
    const char* kind = code == tfl::BuiltinOperator_ADD ? "add_nd_f32" : code == tfl::BuiltinOperator_SUB ? "subtract_nd_f32" : "multiply_nd_f32";
    if (code == tfl::BuiltinOperator_ADD) check(xnn_create_add_nd_f32(lo, hi, 0, &handle), name, out, "xnn_create_add_nd_f32");
    if (code == tfl::BuiltinOperator_SUB) check(xnn_create_subtract_nd_f32(lo, hi, 0, &handle), name, out, "xnn_create_subtract_nd_f32");
    if (code == tfl::BuiltinOperator_MUL) check(xnn_create_multiply_nd_f32(lo, hi, 0, &handle), name, out, "xnn_create_multiply_nd_f32");
    add(kind, name, out, handle, act);
    // The broadcast result must be the file's output shape.
    Shape result(std::max(a.size(), b.size()), 1);
    for (size_t i = 0; i < result.size(); ++i) {
      const size_t r = result.size() - 1 - i;
      const int64_t da = i < a.size() ? static_cast<int64_t>(a[a.size() - 1 - i]) : 1, db = i < b.size() ? static_cast<int64_t>(b[b.size() - 1 - i]) : 1;
      need(da == db || da == 1 || db == 1, name, out, "operand shapes do not broadcast");
      result[r] = std::max(da, db);
    }
    need(result == slot(out).shape, name, out, "the broadcast shape is not the output's");
    xnn_status s = xnn_status_success;
    if (code == tfl::BuiltinOperator_ADD)
      s = xnn_setup_add_nd_f32(handle, a.size(), a.data(), b.size(), b.data(), ptr(in[0]), ptr(in[1]), ptr(out), pool);
    if (code == tfl::BuiltinOperator_SUB)
      s = xnn_setup_subtract_nd_f32(handle, a.size(), a.data(), b.size(), b.data(), ptr(in[0]), ptr(in[1]), ptr(out), pool);
    if (code == tfl::BuiltinOperator_MUL)
      s = xnn_setup_multiply_nd_f32(handle, a.size(), a.data(), b.size(), b.data(), ptr(in[0]), ptr(in[1]), ptr(out), pool);
    check(s, name, out, "xnn_setup_*_nd_f32");
  }

  // Ops applied to every element, or to every row of the innermost dimension (softmax).
  void unary(const tfl::Operator* op, tfl::BuiltinOperator code, const std::string& name, const std::vector<int>& in, int out) {
    need(!in.empty() && slot(in[0]).shape == slot(out).shape && !slot(out).shape.empty(), name, out, "input and output shapes differ");
    const Shape& shape = slot(out).shape;
    const auto channels = static_cast<size_t>(shape.back());
    const auto batch = static_cast<size_t>(numel_of(shape)) / channels;
    xnn_operator_t handle = nullptr;
    std::string kind;
    switch (code) {
      case tfl::BuiltinOperator_LOGISTIC:
        kind = "sigmoid_nc_f32";
        check(xnn_create_sigmoid_nc_f32(channels, channels, channels, 0, &handle), name, out, "xnn_create_sigmoid_nc_f32");
        add(kind, name, out, handle);
        check(xnn_setup_sigmoid_nc_f32(handle, batch, ptr(in[0]), ptr(out), pool), name, out, "xnn_setup_sigmoid_nc_f32");
        return;
      case tfl::BuiltinOperator_HARD_SWISH:
        kind = "hardswish_nc_f32";
        check(xnn_create_hardswish_nc_f32(channels, channels, channels, 0, &handle), name, out, "xnn_create_hardswish_nc_f32");
        add(kind, name, out, handle);
        check(xnn_setup_hardswish_nc_f32(handle, batch, ptr(in[0]), ptr(out), pool), name, out, "xnn_setup_hardswish_nc_f32");
        return;
      case tfl::BuiltinOperator_SOFTMAX: {
        const auto* o = op->builtin_options_as_SoftmaxOptions();
        need(!o || o->beta() == 1.f, name, out, "only beta = 1 has an XNNPACK softmax");
        kind = "softmax_nc_f32";
        check(xnn_create_softmax_nc_f32(channels, channels, channels, 0, &handle), name, out, "xnn_create_softmax_nc_f32");
        add(kind, name, out, handle);
        check(xnn_setup_softmax_nc_f32(handle, batch, ptr(in[0]), ptr(out), pool), name, out, "xnn_setup_softmax_nc_f32");
        return;
      }
      default: {
        const auto act = code == tfl::BuiltinOperator_RELU ? tfl::ActivationFunctionType_RELU : tfl::ActivationFunctionType_RELU6;
        clamp(name, in[0], out, act);
      }
    }
  }

  void clamp(const std::string& name, int x, int out, tfl::ActivationFunctionType act) {
    need(slot(x).shape == slot(out).shape, name, out, "input and output shapes differ");
    const auto [lo, hi] = clamp_of(act);
    const auto n = static_cast<size_t>(numel_of(slot(out).shape));
    xnn_operator_t handle = nullptr;
    check(xnn_create_clamp_nc_f32(1, 1, 1, lo, hi, 0, &handle), name, out, "xnn_create_clamp_nc_f32");
    add("clamp_nc_f32", name, out, handle, act);
    check(xnn_setup_clamp_nc_f32(handle, n, ptr(x), ptr(out), pool), name, out, "xnn_setup_clamp_nc_f32");
  }

  void pooling(const tfl::Operator* op, bool max, const std::string& name, const std::vector<int>& in, int out) {
    const auto* o = op->builtin_options_as_Pool2DOptions();
    need(o != nullptr && !in.empty(), name, out, "has no Pool2DOptions");
    const Shape& xs = slot(in[0]).shape;
    need(xs.size() == 4 && slot(out).shape.size() == 4, name, out, "input and output must be 4-D (NHWC)");
    need(o->filter_height() >= 1 && o->filter_width() >= 1 && o->stride_h() >= 1 && o->stride_w() >= 1, name, out,
         "pool size and strides must be at least 1");
    const auto ph = static_cast<uint32_t>(o->filter_height()), pw = static_cast<uint32_t>(o->filter_width());
    const auto sh = static_cast<uint32_t>(o->stride_h()), sw = static_cast<uint32_t>(o->stride_w());
    const auto act = o->fused_activation_function();
    expect_window_output(name, out, xs, slot(out).shape, {ph, pw}, {sh, sw}, {1, 1}, {0, 0, 0, 0}, o->padding() == tfl::Padding_SAME);
    need(slot(out).shape[3] == xs[3], name, out, "input and output channels differ");
    if (ph == 1 && pw == 1) {
      // XNNPACK refuses a 1x1 window. Without strides it is the identity (the delegate runs it as a clamp);
      // with strides it picks every stride-th pixel, which the delegate leaves to TFLite's own kernel: a
      // hand-written gather here, as plain as that kernel.
      if (sh == 1 && sw == 1) return clamp(name, in[0], out, act);
      return subsample(name, in[0], out, sh, sw, act);
    }
    const auto [lo, hi] = clamp_of(act);
    const uint32_t flags = o->padding() == tfl::Padding_SAME ? XNN_FLAG_TENSORFLOW_SAME_PADDING : 0;
    const auto c = static_cast<size_t>(xs[3]);
    xnn_operator_t handle = nullptr;
    if (max) {
      check(xnn_create_max_pooling2d_nhwc_f32(0, 0, 0, 0, ph, pw, sh, sw, 1, 1, c, c, c, lo, hi, flags, &handle), name, out,
            "xnn_create_max_pooling2d_nhwc_f32");
      add("max_pooling2d_nhwc_f32", name, out, handle, act);
      check(xnn_setup_max_pooling2d_nhwc_f32(handle, static_cast<size_t>(xs[0]), static_cast<size_t>(xs[1]),
                                             static_cast<size_t>(xs[2]), ptr(in[0]), ptr(out), pool),
            name, out, "xnn_setup_max_pooling2d_nhwc_f32");
    } else {
      check(xnn_create_average_pooling2d_nhwc_f32(0, 0, 0, 0, ph, pw, sh, sw, c, c, c, lo, hi, flags, &handle), name, out,
            "xnn_create_average_pooling2d_nhwc_f32");
      add("average_pooling2d_nhwc_f32", name, out, handle, act);
      check(xnn_setup_average_pooling2d_nhwc_f32(handle, static_cast<size_t>(xs[0]), static_cast<size_t>(xs[1]),
                                                 static_cast<size_t>(xs[2]), ptr(in[0]), ptr(out), pool),
            name, out, "xnn_setup_average_pooling2d_nhwc_f32");
    }
  }

  void subsample(const std::string& name, int x, int out, uint32_t sh, uint32_t sw, tfl::ActivationFunctionType act) {
    // The caller checked the output against the window arithmetic: (oh - 1) * sh < h, (ow - 1) * sw < w.
    const Shape& xs = slot(x).shape;
    const Shape& ys = slot(out).shape;
    const std::pair<float, float> bounds = clamp_of(act);  // named: clang 14 cannot capture structured bindings
    const float lo = bounds.first, hi = bounds.second;
    const float* src = ptr(x);
    float* dst = ptr(out);
    const auto n = static_cast<size_t>(xs[0]), h = static_cast<size_t>(xs[1]), w = static_cast<size_t>(xs[2]), c = static_cast<size_t>(xs[3]);
    const auto oh = static_cast<size_t>(ys[1]), ow = static_cast<size_t>(ys[2]);
    add("subsample", name, out, nullptr, act).run = [=] {
      for (size_t b = 0; b < n; ++b)
        for (size_t y = 0; y < oh; ++y)
          for (size_t z = 0; z < ow; ++z) {
            const float* p = src + ((b * h + y * sh) * w + z * sw) * c;
            float* q = dst + ((b * oh + y) * ow + z) * c;
            for (size_t k = 0; k < c; ++k) q[k] = std::min(std::max(p[k], lo), hi);
          }
    };
  }

  void mean(const std::string& name, const std::vector<int>& in, int out) {
    need(in.size() == 2, name, out, "needs an input and its axes");
    const Shape& xs = slot(in[0]).shape;
    std::vector<int32_t> axes = ints(in[1], name, out);
    for (auto& a : axes) a = a < 0 ? a + static_cast<int32_t>(xs.size()) : a;
    std::sort(axes.begin(), axes.end());
    need(xs.size() == 4 && axes == std::vector<int32_t>{1, 2}, name, out,
         "only the mean over height and width of a 4-D (NHWC) tensor has an XNNPACK operator");
    need(numel_of(slot(out).shape) == xs[0] * xs[3], name, out, "the output is not one value per image and channel");
    const auto c = static_cast<size_t>(xs[3]);
    xnn_operator_t handle = nullptr;
    check(xnn_create_global_average_pooling_nwc_f32(c, c, c, -kInf, kInf, 0, &handle), name, out,
          "xnn_create_global_average_pooling_nwc_f32");
    add("global_average_pooling_nwc_f32", name, out, handle);
    check(xnn_setup_global_average_pooling_nwc_f32(handle, static_cast<size_t>(xs[0]), static_cast<size_t>(xs[1] * xs[2]),
                                                   ptr(in[0]), ptr(out), pool),
          name, out, "xnn_setup_global_average_pooling_nwc_f32");
  }

  void pad(const std::string& name, const std::vector<int>& in, int out) {
    need(in.size() >= 2, name, out, "needs an input and its paddings");
    if (in.size() > 2 && in[2] >= 0) need(ints(in[2], name, out).at(0) == 0, name, out, "only zero padding is supported");
    const Shape& xs = slot(in[0]).shape;
    const std::vector<int32_t> p = ints(in[1], name, out);
    need(p.size() == 2 * xs.size() && std::all_of(p.begin(), p.end(), [](int32_t v) { return v >= 0; }), name, out,
         "paddings must be a non-negative [rank, 2] constant");
    need(slot(out).shape.size() == xs.size(), name, out, "input and output ranks differ");
    for (size_t i = 0; i < xs.size(); ++i) need(xs[i] + p[2 * i] + p[2 * i + 1] == slot(out).shape[i], name, out, "padded shape differs");
    if (xs.size() == 4 && p[0] == 0 && p[1] == 0 && p[6] == 0 && p[7] == 0 && pad_folds_into_conv(out)) {
      pending_pads[out] = {in[0], {static_cast<uint32_t>(p[2]), static_cast<uint32_t>(p[5]), static_cast<uint32_t>(p[3]),
                                   static_cast<uint32_t>(p[4])}};
      return;
    }
    std::vector<size_t> shape(xs.begin(), xs.end()), pre, post;
    for (size_t i = 0; i < xs.size(); ++i) pre.push_back(static_cast<size_t>(p[2 * i])), post.push_back(static_cast<size_t>(p[2 * i + 1]));
    static const uint32_t zero = 0;
    xnn_operator_t handle = nullptr;
    check(xnn_create_constant_pad_nd_x32(&zero, 0, &handle), name, out, "xnn_create_constant_pad_nd_x32");
    add("constant_pad_nd_x32", name, out, handle);
    check(xnn_setup_constant_pad_nd_x32(handle, shape.size(), shape.data(), pre.data(), post.data(), ptr(in[0]), ptr(out), pool),
          name, out, "xnn_setup_constant_pad_nd_x32");
  }

  // A strided copy of `rows` rows of `width` floats (XNNPACK's copy operator), for concatenation, split
  // and reshape.
  void copy(const std::string& name, const float* src, size_t src_stride, float* dst, size_t dst_stride, size_t rows,
            size_t width, int out) {
    xnn_operator_t handle = nullptr;
    check(xnn_create_copy_nc_x32(width, src_stride, dst_stride, 0, &handle), name, out, "xnn_create_copy_nc_x32");
    add("copy_nc_x32", name, out, handle);
    check(xnn_setup_copy_nc_x32(handle, rows, src, dst, pool), name, out, "xnn_setup_copy_nc_x32");
  }

  // Rows (dims before `axis`) and row widths (dims from `axis` on) of a shape.
  static std::pair<size_t, size_t> rows_and_width(const Shape& s, size_t axis) {
    size_t rows = 1, width = 1;
    for (size_t i = 0; i < s.size(); ++i) (i < axis ? rows : width) *= static_cast<size_t>(s[i]);
    return {rows, width};
  }

  size_t axis_of(int32_t axis, size_t rank, const std::string& name, int out) const {
    const int32_t a = axis < 0 ? axis + static_cast<int32_t>(rank) : axis;
    need(a >= 0 && static_cast<size_t>(a) < rank, name, out, "axis out of range");
    return static_cast<size_t>(a);
  }

  void concat(const tfl::Operator* op, const std::string& name, const std::vector<int>& in, int out) {
    const auto* o = op->builtin_options_as_ConcatenationOptions();
    need(o != nullptr && !in.empty(), name, out, "has no ConcatenationOptions");
    const Shape& ys = slot(out).shape;
    const size_t axis = axis_of(o->axis(), ys.size(), name, out);
    const auto [rows, out_width] = rows_and_width(ys, axis);
    size_t offset = 0;
    for (int x : in) {
      need(x >= 0 && slot(x).shape.size() == ys.size(), name, out, "inputs of different ranks");
      const auto [r, width] = rows_and_width(slot(x).shape, axis);
      need(r == rows && offset + width <= out_width, name, out, "input shapes do not concatenate to the output");
      copy(name, ptr(x), width, ptr(out) + offset, out_width, rows, width, out);
      offset += width;
    }
    need(offset == out_width, name, out, "input shapes do not concatenate to the output");
    if (o->fused_activation_function() != tfl::ActivationFunctionType_NONE) clamp(name, out, out, o->fused_activation_function());
  }

  void split(const std::string& name, int x, const std::vector<int32_t>& axis_value, const std::vector<int>& outs) {
    const Shape& xs = slot(x).shape;
    need(axis_value.size() == 1, name, outs[0], "the axis must be one value");
    const size_t axis = axis_of(axis_value[0], xs.size(), name, outs[0]);
    const auto [rows, in_width] = rows_and_width(xs, axis);
    size_t offset = 0;
    for (int y : outs) {
      const auto [r, width] = rows_and_width(slot(y).shape, axis);
      need(r == rows && offset + width <= in_width && slot(y).shape.size() == xs.size(), name, y, "output shapes do not split the input");
      copy(name, ptr(x) + offset, in_width, ptr(y), width, rows, width, y);
      offset += width;
    }
    need(offset == in_width, name, outs[0], "output shapes do not split the input");
  }

  // SLICE of one axis, the others whole (a chunk of channels): a region copy, as split.
  void slice(const std::string& name, int x, const std::vector<int32_t>& begin, const std::vector<int32_t>& size, int out) {
    const Shape& xs = slot(x).shape;
    need(begin.size() == xs.size() && size.size() == xs.size() && slot(out).shape.size() == xs.size(), name, out,
         "begin and size must have the input's rank");
    size_t axis = xs.size();
    for (size_t i = 0; i < xs.size(); ++i) {
      const int64_t len = size[i] == -1 ? xs[i] - begin[i] : size[i];
      need(begin[i] >= 0 && len >= 0 && begin[i] + len <= xs[i] && len == slot(out).shape[i], name, out,
           "begin and size do not fit the input and output");
      if (len == xs[i]) continue;
      need(axis == xs.size(), name, out, "only a slice of one axis is lowered");
      axis = i;
    }
    if (axis == xs.size()) return reshape(name, x, out);  // the whole tensor: a copy
    const auto [rows, in_width] = rows_and_width(xs, axis);
    const auto [r, width] = rows_and_width(slot(out).shape, axis);
    const size_t inner = in_width / static_cast<size_t>(xs[axis]);
    copy(name, ptr(x) + static_cast<size_t>(begin[axis]) * inner, in_width, ptr(out), width, rows, width, out);
  }

  // A static reshape is a copy in XNNPACK (its subgraph lowers it to the copy operator).
  void reshape(const std::string& name, int x, int out) {
    const auto n = static_cast<size_t>(numel_of(slot(out).shape));
    need(static_cast<size_t>(numel_of(slot(x).shape)) == n, name, out, "element counts differ");
    copy(name, ptr(x), n, ptr(out), n, 1, n, out);
  }

  // Hand-written: this XNNPACK has no transpose operator (neither in its operator nor its subgraph API).
  // Our export only emits transposes where ONNX's NCHW element order meets NHWC (flattening a feature map,
  // channel shuffles); a strided gather over the output is what the later XNNPACK operator does too.
  void transpose(const std::string& name, int x, const std::vector<int32_t>& perm, int out) {
    const Shape& xs = slot(x).shape;
    const size_t rank = xs.size();
    need(perm.size() == rank && rank >= 1 && rank <= 6, name, out, "perm does not match the input's rank (1 to 6)");
    Shape ys(rank), in_strides(rank, 1), strides(rank);
    for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * xs[i];
    std::vector<bool> seen(rank, false);
    for (size_t j = 0; j < rank; ++j) {
      need(perm[j] >= 0 && static_cast<size_t>(perm[j]) < rank && !seen[static_cast<size_t>(perm[j])], name, out, "perm is not a permutation");
      seen[static_cast<size_t>(perm[j])] = true;
      ys[j] = xs[static_cast<size_t>(perm[j])];
      strides[j] = in_strides[static_cast<size_t>(perm[j])];
    }
    need(ys == slot(out).shape, name, out, "the transposed shape is not the output's");
    const float* src = ptr(x);
    float* dst = ptr(out);
    const auto total = static_cast<size_t>(numel_of(ys));
    Step& s = add("transpose", name, out, nullptr);
    s.run = [src, dst, total, ys, strides, rank] {
      // The innermost output dimension is the loop; the outer ones advance an index counter.
      const auto inner = static_cast<size_t>(ys[rank - 1]);
      const auto inner_stride = static_cast<size_t>(strides[rank - 1]);
      std::array<int64_t, 6> idx{};
      for (size_t o = 0; o < total; o += inner) {
        size_t base = 0;
        for (size_t j = 0; j + 1 < rank; ++j) base += static_cast<size_t>(idx[j] * strides[j]);
        for (size_t i = 0; i < inner; ++i) dst[o + i] = src[base + i * inner_stride];
        for (size_t j = rank - 1; j-- > 0;) {
          if (++idx[j] < ys[j]) break;
          idx[j] = 0;
        }
      }
    };
  }
};

Engine::Engine(const std::string& tflite, const std::string& origin, EngineOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.threads < 1) throw Error("xnnpack_cpu: NUM_THREADS must be at least 1");
  initialize_once();
  impl_->origin = origin;
  impl_->opt = options;
  if (options.threads > 1) {
    impl_->pool = pthreadpool_create(static_cast<size_t>(options.threads));
    if (!impl_->pool) throw Error(fmt::format("xnnpack_cpu: cannot start a pool of {} threads", options.threads));
  }
  impl_->read(tflite);
  t_collect = &impl_->xnn_blocks;
  try {
    impl_->lower();
  } catch (...) {
    t_collect = nullptr;
    throw;
  }
  t_collect = nullptr;
}

Engine::~Engine() = default;

void Engine::set_inputs(const std::vector<Tensor>& inputs) {
  for (int id : impl_->inputs) {
    Slot& s = impl_->slot(id);
    const Tensor* t = nullptr;
    for (const auto& x : inputs)
      if (x.name == s.name) t = &x;
    if (!t) throw Error(fmt::format("xnnpack_cpu: {} needs input '{}'", impl_->origin, s.name));
    const Shape onnx = s.shape.size() == 4 ? Shape{s.shape[0], s.shape[3], s.shape[1], s.shape[2]} : s.shape;
    if (t->shape != onnx || t->data.size() != static_cast<size_t>(numel_of(onnx)))
      throw Error(fmt::format("xnnpack_cpu: input '{}' of {} must have shape [{}]", s.name, impl_->origin, fmt::join(onnx, ",")));
    if (s.shape.size() != 4) {
      std::copy(t->data.begin(), t->data.end(), s.data.begin());
      continue;
    }
    const int64_t n = onnx[0], c = onnx[1], hw = onnx[2] * onnx[3];
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t p = 0; p < hw; ++p)
          s.data[static_cast<size_t>((b * hw + p) * c + ch)] = t->data[static_cast<size_t>((b * c + ch) * hw + p)];
  }
  for (const auto& x : inputs)
    if (std::none_of(impl_->inputs.begin(), impl_->inputs.end(), [&](int id) { return impl_->slot(id).name == x.name; }))
      throw Error(fmt::format("xnnpack_cpu: {} has no input '{}'", impl_->origin, x.name));
}

void Engine::execute() {
  for (auto& s : impl_->steps) {
    if (s.run) {
      s.run();
      continue;
    }
    const xnn_status st = xnn_run_operator(s.op.get(), impl_->pool);
    if (st != xnn_status_success)
      throw Error(fmt::format("xnnpack_cpu: {} of '{}' failed to run ({})", s.kind, impl_->slot(s.output).name, status_name(st)));
  }
}

void Engine::start_cold(size_t fill_bytes) {
  std::vector<backends::ByteRange> all, arrivals;
  for (const auto& s : impl_->slots)
    all.push_back({reinterpret_cast<const uint8_t*>(s.data.data()), s.data.size() * sizeof(float)});
  for (const auto& [p, size] : impl_->xnn_blocks) all.push_back({static_cast<const uint8_t*>(p), size});
  for (int id : impl_->inputs) {
    const auto& d = impl_->slot(id).data;
    arrivals.push_back({reinterpret_cast<const uint8_t*>(d.data()), d.size() * sizeof(float)});
  }
  backends::evict_from_caches(all);
  backends::fill_caches_with_scratch(fill_bytes, impl_->opt.threads);
  backends::write_back_into_cache(arrivals, impl_->opt.threads);
}

std::vector<Tensor> Engine::outputs() const {
  std::vector<Tensor> out;
  for (int id : impl_->outputs) {
    const Slot& s = impl_->slots[static_cast<size_t>(id)];
    Tensor t{s.name, s.shape, {}};
    const auto n = static_cast<size_t>(numel_of(s.shape));
    if (s.shape.size() != 4) {
      t.data.assign(s.data.begin(), s.data.begin() + static_cast<std::ptrdiff_t>(n));
    } else {
      const int64_t b = s.shape[0], h = s.shape[1], w = s.shape[2], c = s.shape[3];
      t.shape = {b, c, h, w};
      t.data.resize(n);
      for (int64_t i = 0; i < b; ++i)
        for (int64_t p = 0; p < h * w; ++p)
          for (int64_t ch = 0; ch < c; ++ch)
            t.data[static_cast<size_t>((i * c + ch) * h * w + p)] = s.data[static_cast<size_t>((i * h * w + p) * c + ch)];
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Tensor> Engine::forward(const std::vector<Tensor>& inputs) {
  set_inputs(inputs);
  execute();
  return outputs();
}

std::vector<std::pair<std::string, Shape>> Engine::input_specs() const {
  std::vector<std::pair<std::string, Shape>> out;
  for (int id : impl_->inputs) {
    const Slot& s = impl_->slots[static_cast<size_t>(id)];
    out.emplace_back(s.name, s.shape.size() == 4 ? Shape{s.shape[0], s.shape[3], s.shape[1], s.shape[2]} : s.shape);
  }
  return out;
}

Json Engine::plan() const {
  Json steps = Json::array();
  for (const auto& s : impl_->steps) {
    Json j = {{"operator", s.kind}, {"op", s.from}, {"output", impl_->slot(s.output).name}, {"shape", impl_->slot(s.output).shape}};
    if (!s.activation.empty()) j["activation"] = s.activation;
    if (!s.fused.empty()) j["fused"] = s.fused;
    steps.push_back(std::move(j));
  }
  return {{"engine", "XNNPACK " + xnnpack_version()}, {"threads", impl_->opt.threads}, {"operators", steps.size()}, {"steps", steps}};
}

int Engine::threads() const { return impl_->opt.threads; }

std::string xnnpack_version() { return NNMETER_XNNPACK_VERSION; }

}  // namespace nnmeter::xnnpack
