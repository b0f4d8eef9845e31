// The onednn_cpu inference engine: a Graph compiled into a fixed pipeline of oneDNN primitives.
// Everything that can happen once happens at construction: primitive creation, layout choice
// (format_tag::any), weight reorders, buffer allocation. execute() only runs the pipeline.
#pragma once

#include <memory>

#include "backends/onednn/graph.h"
#include "nnmeter/backend.h"

namespace nnmeter::onednn {

struct EngineOptions {
  int threads = 1;
};

class Engine {
 public:
  Engine(Graph graph, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Copies named inputs into the pipeline's input buffers; throws Error on a missing, unknown or
  // mis-shaped input.
  void set_inputs(const std::vector<Tensor>& inputs);
  // Runs every primitive once and waits for completion. This is the only thing the profiler times.
  void execute();
  // Reads the graph outputs (plain row-major float32) after execute().
  std::vector<Tensor> outputs() const;
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs);

  // Inputs the model reads at run time, with their shapes.
  std::vector<std::pair<std::string, Shape>> input_specs() const;
  // The compiled plan: one entry per primitive with its oneDNN implementation, for the plan file and
  // for checking that layouts only change where they must.
  Json plan() const;
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
