// Compiling a Graph into oneDNN primitives. Layout rules (after oneDNN's memory_format_propagation
// example): compute-heavy primitives (conv, matmul) get format_tag::any and their inputs are reordered
// only when the producer's layout differs; layout-agnostic primitives (eltwise, binary, pooling,
// batch norm, concat) run in whatever layout their input arrived in; ops defined on the logical
// row-major order (Reshape, Transpose, Softmax, ...) get a plain copy. Every reorder that exists is
// a step of the plan, so plan() shows exactly where layouts change.
#include "backends/onednn/engine.h"

#include <omp.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "backends/onednn/ops/op.h"
#include "backends/measure.h"

namespace nnmeter::onednn {

namespace {

using tag = memory::format_tag;
using dt = memory::data_type;

// A reorder at the model's boundary: a graph input into its consumer's layout, or a graph output back
// to plain. Pipeline::Profiling leaves them out of the timed run.
enum class Edge { None, Input, Output };

struct Step {
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  Json info;
  Edge edge = Edge::None;
};

void mark_edge(Step& s, Edge edge, const std::string& tensor) {
  s.edge = edge;
  s.info["edge"] = edge == Edge::Input ? "input" : "output";
  s.info["tensor"] = tensor;
}

// Where a value lives: its memory (any layout) and the buffer it shares with its aliases.
struct Slot {
  memory mem;
  int buffer = -1;
  bool ready = false;
  bool pinned = false;  // must not be overwritten in place (graph input, padded border, constant)
  std::vector<memory> copies;  // reordered copies, reused by every consumer that wants that layout
};

}  // namespace

struct Engine::Impl final : Lowering {
  Graph g;
  EngineOptions opt;
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  std::vector<Slot> slots;
  std::vector<std::vector<int>> buffer_values;
  std::vector<Step> steps;
  std::vector<memory> inputs;          // per graph input, plain
  std::vector<memory> outputs;         // per graph output, plain
  std::vector<memory> kept;            // memories referenced only through aliases
  int current = -1;                    // node being compiled
  bool inputs_staged = false;          // the input edge reorders ran since the last set_inputs()
  std::vector<backends::ByteRange> footprint;    // every buffer a run touches, found once after compile()

  // With `step_ms`, each step is waited for and timed on its own.
  void run_steps(Pipeline p, std::vector<double>* step_ms = nullptr) {
    using Clock = std::chrono::steady_clock;
    if (step_ms) step_ms->clear();
    for (auto& s : steps) {
      if (p != Pipeline::Inference && s.edge != Edge::None) continue;
      const auto start = step_ms ? Clock::now() : Clock::time_point{};
      s.prim.execute(strm, s.args);
      if (!step_ms) continue;
      strm.wait();
      step_ms->push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    strm.wait();
  }

  // The buffers a pipeline's first steps read from outside: for Profiling the staged copies the input
  // edges write (or the plain input where no edge stages it), for Inference the plain inputs.
  std::vector<backends::ByteRange> arrivals(Pipeline p) const {
    std::vector<backends::ByteRange> out;
    for (const auto& in : inputs) {
      bool read_directly = p == Pipeline::Inference;
      for (const auto& s : steps) {
        if (s.edge == Edge::Output || (p == Pipeline::Inference && s.edge == Edge::Input)) continue;
        for (const auto& [arg, m] : s.args) {
          if (arg == DNNL_ARG_DST || m.get_data_handle() != in.get_data_handle()) continue;
          if (s.edge == Edge::Input) out.push_back(byte_range(s.args.at(DNNL_ARG_DST)));
          else read_directly = true;
        }
      }
      if (read_directly) out.push_back(byte_range(in));
    }
    return out;
  }

  static backends::ByteRange byte_range(const memory& m) {
    return {static_cast<const uint8_t*>(m.get_data_handle()), m.get_desc().get_size()};
  }

  void collect_footprint() {
    std::map<const uint8_t*, size_t> ranges;
    auto add = [&](const memory& m) {
      if (!m) return;
      const backends::ByteRange r = byte_range(m);
      if (r.data != nullptr && r.size > 0) ranges[r.data] = std::max(ranges[r.data], r.size);
    };
    for (const auto& s : steps)
      for (const auto& [arg, m] : s.args) add(m);
    for (const auto* group : {&inputs, &outputs, &kept})
      for (const auto& m : *group) add(m);
    for (const auto& [data, size] : ranges) footprint.push_back({data, size});
  }

  void stage_inputs() {
    for (auto& s : steps)
      if (s.edge == Edge::Input) s.prim.execute(strm, s.args);
    strm.wait();
    inputs_staged = true;
  }

  // -------------------------------------------------------------------------------------------------
  // Buffers and layouts

  int new_buffer(int value) {
    buffer_values.push_back({value});
    return static_cast<int>(buffer_values.size() - 1);
  }

  const Graph& graph() const override { return g; }
  const dnnl::engine& engine() const override { return eng; }

  void bind(int value, memory m) override { bind_buffer(value, std::move(m), -1); }

  void bind_buffer(int value, memory mem, int buffer) {
    auto& s = slots[static_cast<size_t>(value)];
    s.mem = std::move(mem);
    s.ready = true;
    if (buffer < 0) {
      s.buffer = new_buffer(value);
    } else {
      s.buffer = buffer;
      buffer_values[static_cast<size_t>(buffer)].push_back(value);
    }
  }

  const memory& mem(int value) override {
    auto& s = slots[static_cast<size_t>(value)];
    if (!s.ready) {
      const auto& v = g.value(value);
      if (!v.constant) throw Error(fmt::format("internal: tensor '{}' used before it is computed", v.name));
      bind(value, host_memory(*v.constant, plain_md(v.shape)));
      slots[static_cast<size_t>(value)].pinned = true;
    }
    return slots[static_cast<size_t>(value)].mem;
  }

  void add_step(dnnl::primitive prim, std::unordered_map<int, memory> args, Json info) override {
    // The tensor shapes in the plan let a step be matched with the same layer elsewhere (a kernel measured
    // alone against its place in a network) without knowing the ONNX graph.
    static const std::pair<int, const char*> kShown[] = {{DNNL_ARG_SRC, "src"},     {DNNL_ARG_SRC_1, "src_1"},
                                                         {DNNL_ARG_WEIGHTS, "weights"}, {DNNL_ARG_DST, "dst"}};
    for (const auto& [arg, name] : kShown)
      if (const auto it = args.find(arg); it != args.end()) info["dims"][name] = it->second.get_desc().dims();
    steps.push_back({std::move(prim), std::move(args), std::move(info)});
  }

  void reorder_step(const memory& from, const memory& to, const std::string& why) override {
    dnnl::reorder r(from, to);
    add_step(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}},
             {{"primitive", "reorder"}, {"why", why},
              {"impl", dnnl::reorder::primitive_desc(from, to).impl_info_str()}});
  }

  // Copies of constants are made once at load, of runtime values by a pipeline step.
  memory as_desc(int value, const memory::desc& want) override {
    const memory& m = mem(value);
    if (m.get_desc() == want) return m;
    auto& s = slots[static_cast<size_t>(value)];
    for (const auto& c : s.copies)
      if (c.get_desc() == want) return c;
    memory copy(want, eng);
    if (g.is_const(value)) {
      dnnl::reorder(m, copy).execute(strm, const_cast<memory&>(m), copy);
      strm.wait();
    } else {
      reorder_step(m, copy, "layout of '" + g.value(value).name + "'");
      // A graph input read in another layout: inside a network its producer would have written that
      // layout. The copy is only ever read, so staging it once serves every later run.
      if (g.value(value).graph_input && m.get_data_handle() == inputs_handle(value))
        mark_edge(steps.back(), Edge::Input, g.value(value).name);
    }
    s.copies.push_back(copy);
    return copy;
  }

  // The buffer set_inputs() writes for graph input `value`, or null.
  void* inputs_handle(int value) const {
    for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i)
      if (g.inputs[i] == value) return inputs[i].get_data_handle();
    return nullptr;
  }

  int buffer_of(const memory& m) const {
    for (size_t v = 0; v < slots.size(); ++v)
      if (slots[v].ready && slots[v].mem.get_data_handle() == m.get_data_handle()) return slots[v].buffer;
    return -1;
  }

  void bind_alias(int value, const memory& view, int source) override {
    bind_buffer(value, view, slots[static_cast<size_t>(source)].mem.get_data_handle() == view.get_data_handle()
                          ? slots[static_cast<size_t>(source)].buffer
                          : buffer_of(view));
  }

  bool overwritable(int value, int absorbed_consumer) const override {
    const auto& s = slots[static_cast<size_t>(value)];
    if (s.pinned) return false;
    for (int v : buffer_values[static_cast<size_t>(s.buffer)]) {
      const auto& val = g.value(v);
      if (val.graph_output || val.graph_input || slots[static_cast<size_t>(v)].pinned) return false;
      // The node being compiled counts too: a conv must not accumulate into its own input.
      for (int c : val.consumers)
        if (c >= current && c != absorbed_consumer) return false;
    }
    return true;
  }

  void pin(int value) override { slots[static_cast<size_t>(value)].pinned = true; }
  void keep(const memory& m) override { kept.push_back(m); }

  // -------------------------------------------------------------------------------------------------
  // Lowering

  memory constant_memory(const HostTensor& t, const memory::dims& dims, const memory::desc& want) override {
    const memory src = host_memory(t, memory::desc(dims, dt::f32, row_major_strides(dims)));
    memory dst(want, eng);
    dnnl::reorder(src, dst).execute(strm, const_cast<memory&>(src), dst);
    strm.wait();
    return dst;
  }

  void compile_node(const Node& n) {
    const LowerRule lower = lowering_of(g, n);
    if (!lower) throw Error(fmt::format("onednn_cpu cannot compile {} node '{}' in {}", n.op, n.name, g.origin));
    lower(*this, n);
  }

  void check_sizes() {
    for (const auto& n : g.nodes) {
      if (g.of(n).removed) continue;
      for (int v : n.outputs)
        if (numel(g.value(v).shape) == 0)
          throw Error(fmt::format("onednn_cpu cannot convert {} node '{}' in {}: output '{}' has zero elements {}", n.op,
                                  n.name, g.origin, g.value(v).name, shape_str(g.value(v).shape)));
    }
  }

  // The layouts oneDNN gives a 1x1 conv's source and destination for an activation of this NCHW shape:
  // what a layer inside a CNN reads and writes. None for other ranks.
  std::optional<std::pair<memory::desc, memory::desc>> conv_layouts(const Shape& s) {
    if (s.size() != 4) return std::nullopt;
    const memory::dims d = to_dims(s);
    const memory::desc any(d, dt::f32, tag::any);
    const memory::desc w({d[1], d[1], 1, 1}, dt::f32, tag::any);
    try {
      dnnl::convolution_forward::desc cd(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any,
                                         w, any, {1, 1}, {0, 0}, {0, 0});
      const dnnl::convolution_forward::primitive_desc pd(cd, eng);
      return std::pair{pd.src_desc(), pd.dst_desc()};
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  }

  // A graph input stands for an activation inside a network. Read only by primitives that pick their own
  // layout, it stays plain and as_desc stages it into theirs (an input edge, untimed). Read by anything
  // else, it arrives in the layout a conv writes (staged once, untimed), so the reorders those ops need
  // from there are timed, as a network pays them.
  memory arrival_memory(int id, const memory& plain) {
    const Value& v = g.value(id);
    bool only_layout_pickers = true;
    for (int c : v.consumers) {
      const Node& n = g.nodes[static_cast<size_t>(c)];
      const OpDef* def = find_op(n.op);
      if (!g.of(n).removed && !(def && def->picks_layout)) only_layout_pickers = false;
    }
    const auto layouts = conv_layouts(v.shape);
    if (only_layout_pickers || !layouts || layouts->second == plain.get_desc()) return plain;
    memory staged(layouts->second, eng);
    reorder_step(plain, staged, "layout a conv writes for '" + v.name + "'");
    mark_edge(steps.back(), Edge::Input, v.name);
    return staged;
  }

  void compile() {
    check_sizes();
    slots.resize(g.values.size());
    for (int id : g.inputs) {
      memory m(plain_md(g.value(id).shape), eng);
      inputs.push_back(m);
      bind(id, arrival_memory(id, m));
      slots[static_cast<size_t>(id)].pinned = true;
    }
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const auto& n = g.nodes[i];
      if (g.of(n).removed) continue;
      current = static_cast<int>(i);
      try {
        compile_node(n);
      } catch (const dnnl::error& e) {
        throw Error(fmt::format("onednn_cpu cannot build {} node '{}' in {}: oneDNN says {} (status {})", n.op, n.name,
                                g.origin, e.what(), static_cast<int>(e.status)));
      }
    }
    current = static_cast<int>(g.nodes.size());
    for (int id : g.outputs) {
      // Inside a network a conv reads this activation. An op that wrote it in plain layout leaves the
      // reorder into the conv's layout to be paid there: it is part of this model's cost (timed).
      if (const auto layouts = conv_layouts(g.value(id).shape); layouts && mem(id).get_desc() == plain_md(g.value(id).shape))
        as_desc(id, layouts->first);
      const size_t before = steps.size();
      outputs.push_back(as_plain(id));
      for (size_t i = before; i < steps.size(); ++i) mark_edge(steps[i], Edge::Output, g.value(id).name);
    }
  }
};

Engine::Engine(Graph graph, EngineOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->g = std::move(graph);
  impl_->opt = options;
  omp_set_num_threads(std::max(1, options.threads));
  impl_->compile();
  impl_->collect_footprint();
  spdlog::debug("onednn_cpu: {} compiled into {} primitives", impl_->g.origin, impl_->steps.size());
}

Engine::~Engine() = default;

void Engine::set_inputs(const std::vector<Tensor>& inputs) {
  const auto& g = impl_->g;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const auto& v = g.value(g.inputs[i]);
    const auto it = std::find_if(inputs.begin(), inputs.end(), [&](const Tensor& t) { return t.name == v.name; });
    if (it == inputs.end()) throw Error(fmt::format("{}: input '{}' {} was not given", g.origin, v.name, shape_str(v.shape)));
    if (it->shape != v.shape || it->data.size() != static_cast<size_t>(numel(v.shape)))
      throw Error(fmt::format("{}: input '{}' has shape {}, the model expects {}", g.origin, v.name, shape_str(it->shape),
                              shape_str(v.shape)));
    std::memcpy(impl_->inputs[i].get_data_handle(), it->data.data(), it->data.size() * sizeof(float));
  }
  impl_->inputs_staged = false;
  for (const auto& t : inputs) {
    const auto it = g.value_index.find(t.name);
    if (it == g.value_index.end() || !g.value(it->second).graph_input)
      throw Error(fmt::format("{}: the model has no runtime input named '{}'", g.origin, t.name));
  }
}

void Engine::execute(Pipeline pipeline) {
  omp_set_num_threads(std::max(1, impl_->opt.threads));
  if (pipeline == Pipeline::Profiling && !impl_->inputs_staged) impl_->stage_inputs();
  impl_->run_steps(pipeline);
}

void Engine::execute_timed(Pipeline pipeline, std::vector<double>& step_ms) {
  omp_set_num_threads(std::max(1, impl_->opt.threads));
  if (pipeline == Pipeline::Profiling && !impl_->inputs_staged) impl_->stage_inputs();
  impl_->run_steps(pipeline, &step_ms);
}

void Engine::start_cold(Pipeline pipeline, size_t fill_bytes) {
  if (pipeline == Pipeline::Profiling && !impl_->inputs_staged) impl_->stage_inputs();
  backends::evict_from_caches(impl_->footprint);
  backends::fill_caches_with_scratch(fill_bytes, impl_->opt.threads);
  backends::write_back_into_cache(impl_->arrivals(pipeline), impl_->opt.threads);
}

void Engine::prepare_profiling() {
  omp_set_num_threads(std::max(1, impl_->opt.threads));
  impl_->stage_inputs();
}

std::vector<Tensor> Engine::outputs() const {
  std::vector<Tensor> out;
  const auto& g = impl_->g;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const auto& v = g.value(g.outputs[i]);
    Tensor t{v.name, v.shape, std::vector<float>(static_cast<size_t>(numel(v.shape)))};
    std::memcpy(t.data.data(), impl_->outputs[i].get_data_handle(), t.data.size() * sizeof(float));
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
  for (int id : impl_->g.inputs) out.emplace_back(impl_->g.value(id).name, impl_->g.value(id).shape);
  return out;
}

Json Engine::plan(Pipeline pipeline) const {
  Json steps = Json::array(), excluded = Json::array();
  int reorders = 0, edges = 0;
  for (const auto& s : impl_->steps) {
    edges += s.edge != Edge::None;
    if (pipeline == Pipeline::Profiling && s.edge != Edge::None) {
      excluded.push_back(s.info);
      continue;
    }
    steps.push_back(s.info);
    reorders += s.info.value("primitive", "") == "reorder";
  }
  auto total = [](const std::vector<backends::ByteRange>& ranges) {
    size_t bytes = 0;
    for (const auto& r : ranges) bytes += r.size;
    return bytes;
  };
  Json j{{"threads", impl_->opt.threads}, {"isa", effective_isa()}, {"onednn", dnnl_version()},
         {"pipeline", pipeline == Pipeline::Profiling ? "profiling" : "inference"},
         {"primitives", steps.size()}, {"reorders", reorders}, {"edge_reorders", edges},
         {"footprint_bytes", total(impl_->footprint)}, {"cold_start_input_bytes", total(impl_->arrivals(pipeline))},
         {"steps", steps}};
  if (pipeline == Pipeline::Profiling) j["excluded_edge_reorders"] = excluded;
  return j;
}

const Graph& Engine::graph() const { return impl_->g; }
int Engine::threads() const { return impl_->opt.threads; }

std::string dnnl_version() {
  const auto* v = dnnl::version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

std::string effective_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

void set_isa_cap(const std::string& name) {
  if (name.empty() || name == "ALL" || name == "all") return;
  static const std::vector<std::pair<std::string, dnnl::cpu_isa>> kIsas = {
      {"SSE41", dnnl::cpu_isa::sse41},
      {"AVX", dnnl::cpu_isa::avx},
      {"AVX2", dnnl::cpu_isa::avx2},
      {"AVX2_VNNI", dnnl::cpu_isa::avx2_vnni},
      {"AVX512_CORE", dnnl::cpu_isa::avx512_core},
      {"AVX512_CORE_VNNI", dnnl::cpu_isa::avx512_core_vnni},
      {"AVX512_CORE_BF16", dnnl::cpu_isa::avx512_core_bf16},
      {"AVX512_CORE_AMX", dnnl::cpu_isa::avx512_core_amx}};
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  const auto it = std::find_if(kIsas.begin(), kIsas.end(), [&](const auto& p) { return p.first == upper; });
  if (it == kIsas.end())
    throw Error(fmt::format("unknown ISA '{}' for onednn_cpu (use one of SSE41, AVX, AVX2, AVX2_VNNI, AVX512_CORE, "
                            "AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_AMX, or ALL)", name));
  // oneDNN accepts one cap per process, before any kernel is generated; asking again for the same cap
  // is fine.
  static std::optional<dnnl::cpu_isa> applied;
  if (applied == it->second) return;
  if (!applied && dnnl::set_max_cpu_isa(it->second) == dnnl::status::success) {
    applied = it->second;
    return;
  }
  throw Error(fmt::format("cannot cap the oneDNN ISA at {} any more: another cap or a primitive came first in this "
                            "process (run one ISA per process)", upper));
}

}  // namespace nnmeter::onednn
