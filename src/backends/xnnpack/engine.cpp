#include "backends/xnnpack/engine.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xnnpack.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>

#include "backends/measure.h"
#include "backends/xnnpack/ops/op.h"
#include "common/text.h"
#include "tflite_schema_generated.h"

#ifndef NNMETER_XNNPACK_VERSION
#define NNMETER_XNNPACK_VERSION "unknown"
#endif

namespace nnmeter::xnnpack {

namespace {

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

}  // namespace

int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) {
    if (d > 0 && n > std::numeric_limits<int64_t>::max() / d) return std::numeric_limits<int64_t>::max();
    n *= d;
  }
  return n;
}

void Lowering::fail(const std::string& why) const { throw Error(fmt::format("xnnpack_cpu cannot run {}: {}", origin, why)); }

void Lowering::fail_op(const std::string& op, int out, const std::string& why) const {
  const std::string name = out >= 0 ? slots[static_cast<size_t>(out)].name : "?";
  throw Error(fmt::format("xnnpack_cpu cannot run {} '{}' in {}: {}", op, name, origin, why));
}

void Lowering::check(xnn_status s, const std::string& op, int out, const char* call) const {
  if (s != xnn_status_success) fail_op(op, out, fmt::format("{} failed ({})", call, status_name(s)));
}

int Lowering::arg(const OpNode& n, size_t k) const {
  if (k >= n.in.size() || n.in[k] < 0) fail_op(n.name, n.out[0], fmt::format("has no operand {}", k));
  return n.in[k];
}

std::vector<int32_t> Lowering::ints(int i, const std::string& op, int out) {
  const Slot& s = slot(i);
  if (!s.constant) fail_op(op, out, fmt::format("'{}' must be a constant", s.name));
  std::vector<int32_t> v(static_cast<size_t>(numel_of(s.shape)));
  std::memcpy(v.data(), s.data.data(), v.size() * 4);
  return v;
}

Step& Lowering::add(std::string kind, std::string from, int out, xnn_operator_t op, tfl::ActivationFunctionType act) {
  Step s;
  s.kind = std::move(kind);
  s.from = std::move(from);
  s.output = out;
  s.op.reset(op);
  s.activation = act == tfl::ActivationFunctionType_NONE ? "" : tfl::EnumNameActivationFunctionType(act);
  steps.push_back(std::move(s));
  return steps.back();
}

// The engine is the context its op files (ops/) lower into, plus what a run needs.
struct Engine::Impl : Lowering {
  EngineOptions opt;
  std::vector<int> inputs, outputs;
  std::map<const void*, size_t> xnn_blocks;  // XNNPACK's own allocations for this engine's operators

  ~Impl() {
    steps.clear();  // operators before the pool they ran on
    if (pool) pthreadpool_destroy(pool);
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

  // ---- lowering -----------------------------------------------------------------------------------------
  void lower() {
    for (size_t o = 0; o < graph->operators()->size(); ++o) {
      if (absorbed.count(o)) continue;
      OpNode n{.index = o, .op = op_at(o), .code = code_at(o), .name = tfl::EnumNameBuiltinOperator(code_at(o))};
      for (int32_t i : *n.op->inputs()) n.in.push_back(i);
      for (int32_t i : *n.op->outputs()) n.out.push_back(i);
      for (int i : n.in) {
        if (i < 0 || slot(i).constant) continue;
        if (slot(i).producer >= static_cast<int>(o)) fail_op(n.name, n.out[0], fmt::format("reads '{}' before it is computed", slot(i).name));
        if (slot(i).producer < 0 && std::find(inputs.begin(), inputs.end(), i) == inputs.end())
          fail_op(n.name, n.out[0], fmt::format("reads '{}', which nothing computes", slot(i).name));
      }
      if (n.in.empty() || n.in[0] < 0) arg(n, 0);
      const OpDef* def = find_op(n.code);
      if (!def) fail_op(n.name, n.out[0], fmt::format("op has no XNNPACK lowering (supported: {})", supported_ops()));
      def->lower(*this, n);
    }
    if (!pending_pads.empty()) fail("a PAD folded into a convolution has no convolution reading it");
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
