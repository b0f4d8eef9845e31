// The xnnpack_cpu inference engine: a .tflite model (as our ONNX export writes it: NHWC activations,
// TFLite's weight layouts, ReLU/ReLU6 fused) run on XNNPACK's operators, the way TFLite's XNNPACK delegate
// runs it on a phone's CPU. Everything that can happen once happens at construction: operator creation
// (weights packed), buffer allocation and operator setup; execute() only runs the operators.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/inprocess_backend.h"
#include "nnmeter/backend.h"

namespace nnmeter::xnnpack {

struct EngineOptions {
  int threads = 1;
};

class Engine final : public backends::InProcessEngine {
 public:
  // `tflite` holds the model's bytes; `origin` names it in messages. Throws Error naming the operator and
  // the reason when the file is malformed or an operator has no XNNPACK lowering.
  Engine(const std::string& tflite, const std::string& origin, EngineOptions options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Named inputs in ONNX's layout (4-D as NCHW); copied into the NHWC input buffers outside execute().
  void set_inputs(const std::vector<Tensor>& inputs) override;
  // Runs every operator once, in order, and waits for completion. The profiler times exactly this call.
  void execute();
  // Before a cold timed run (COLD_CACHE): evicts every buffer a run touches (packed weights and the
  // operators' own allocations, activations, inputs) from all cache levels, then writes the input buffers,
  // as a layer inside a network finds its input just written by the layer before; `fill_bytes` of scratch
  // written between the two (backends::fill_caches_with_scratch).
  void start_cold(size_t fill_bytes = 0);
  void execute_profiled() override { execute(); }
  void start_cold_profiled(size_t fill_bytes) override { start_cold(fill_bytes); }
  // Graph outputs in ONNX's layout (4-D as NCHW) after execute().
  std::vector<Tensor> outputs() const;
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override;

  // Inputs the model reads, with their ONNX (NCHW) shapes.
  std::vector<std::pair<std::string, Shape>> input_specs() const override;
  // The compiled plan: one entry per operator run (XNNPACK operator, the TFLite op it comes from, the ops
  // fused into it, output shape, fused activation).
  Json plan() const;
  int threads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The XNNPACK build this library was compiled against (its Debian package version; XNNPACK has no
// version call).
std::string xnnpack_version();

}  // namespace nnmeter::xnnpack
