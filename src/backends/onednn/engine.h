// The onednn_cpu inference engine: a Graph compiled into a fixed pipeline of oneDNN primitives.
// Everything that can happen once happens at construction: primitive creation, layout choice
// (format_tag::any), weight reorders, buffer allocation. execute() only runs the pipeline.
#pragma once

#include <memory>

#include "backends/inprocess_backend.h"
#include "backends/onednn/graph.h"
#include "nnmeter/backend.h"

namespace nnmeter::onednn {

struct EngineOptions {
  int threads = 1;
};

// Which steps of the compiled plan one execute() runs.
enum class Pipeline {
  // Plain row-major (NCHW) tensors in and out: every step, including the reorders of graph inputs into
  // their consumers' layouts and of graph outputs back to plain. forward() and inference use this.
  Inference,
  // What the model costs as a piece of a larger network, where activations stay in oneDNN's layouts
  // between primitives: graph inputs are already in the layout their consumers chose (reordered once,
  // by prepare_profiling(), outside the timed region) and graph outputs stay in the layout their
  // producers wrote. These "edge reorders" are skipped; outputs() is not valid after such a run.
  // Only the profiler uses it.
  Profiling,
};

class Engine final : public backends::InProcessEngine {
 public:
  Engine(Graph graph, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Copies named inputs into the pipeline's input buffers; throws Error on a missing, unknown or
  // mis-shaped input.
  void set_inputs(const std::vector<Tensor>& inputs) override;
  // Runs the pipeline's primitives once and waits for completion. The profiler times exactly this
  // call with Pipeline::Profiling.
  void execute(Pipeline pipeline = Pipeline::Inference);
  // execute() with every step timed on its own (the stream waited for after each): step_ms[i] is the
  // time of plan(pipeline)["steps"][i]. How each layer costs inside the whole network, for comparing it
  // with the same layer measured alone; the per-step waits make the sum slightly above execute()'s time.
  void execute_timed(Pipeline pipeline, std::vector<double>& step_ms);
  // Puts the current inputs into the layouts their consumers read (the input edge reorders, run once).
  // execute(Pipeline::Profiling) does it on its own when the inputs changed since; calling it first
  // keeps that work out of the first timed run.
  void prepare_profiling() override;
  // Before a cold timed run (COLD_CACHE): evicts every buffer a run touches (weights, activations,
  // inputs, outputs) from all cache levels, then writes the buffers `pipeline` reads its inputs from, so
  // the run finds them where a layer inside a network does: weights and its own output in memory, its
  // input just written by the layer before. `fill_bytes` of scratch written between the two leave the
  // caches and TLBs full of other data, as the layers before leave them (backends::fill_caches_with_scratch).
  void start_cold(Pipeline pipeline, size_t fill_bytes = 0);
  // The profiler times the Profiling pipeline: inputs put into their consumers' layouts once, by
  // prepare_profiling(), and no edge reorders (docs/profiling.md), as a kernel inside a network never pays them.
  void execute_profiled() override { execute(Pipeline::Profiling); }
  void start_cold_profiled(size_t fill_bytes) override { start_cold(Pipeline::Profiling, fill_bytes); }
  // Reads the graph outputs (plain row-major float32) after execute().
  std::vector<Tensor> outputs() const;
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override;

  // Inputs the model reads at run time, with their shapes.
  std::vector<std::pair<std::string, Shape>> input_specs() const override;
  // The compiled plan: one entry per primitive with its oneDNN implementation, for the plan file and
  // for checking that layouts only change where they must. Edge reorders carry "edge": "input" or
  // "output". For Pipeline::Profiling, "steps" holds only the timed steps and
  // "excluded_edge_reorders" the skipped ones.
  Json plan(Pipeline pipeline = Pipeline::Inference) const;
  const Graph& graph() const;
  int threads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// oneDNN's version string, e.g. "2.6.3".
std::string dnnl_version();
// The effective ISA oneDNN dispatches to, e.g. "avx512_core".
std::string effective_isa();
// Caps the ISA process-wide (must run before the first primitive is created); `name` is one of
// "", "SSE41", "AVX", "AVX2", "AVX512_CORE", ... as ONEDNN_MAX_CPU_ISA accepts. Throws Error when the
// name is unknown or the cap can no longer be changed.
void set_isa_cap(const std::string& name);

}  // namespace nnmeter::onednn
