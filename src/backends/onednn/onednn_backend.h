// onednn_cpu: the builtin backend that runs ONNX models on oneDNN primitives in-process.
#pragma once

#include "backends/onednn/engine.h"
#include "nnmeter/backend.h"

namespace nnmeter::onednn {

// The parameters of onednn_cpu, declared once: defaults, validation, YAML and CLI flags come from here.
const std::vector<BackendParam>& backend_params();
// The registry entry for onednn_cpu. Its convert step writes `<name>.onnx` (the model with load-time
// constants folded, runnable by any ONNX runtime) and `<name>.plan.json` (the compiled pipeline:
// primitives, implementations, fused ops, reorders, threads, ISA).
BackendInfo backend_info();

// Settings taken from a config resolved against backend_params().
EngineOptions engine_options(const Json& config);

// Fixed-seed inputs (uniform in [-1, 1)) for every runtime input of a compiled model.
std::vector<Tensor> random_inputs(const Engine& engine, uint32_t seed = 0);

}  // namespace nnmeter::onednn
