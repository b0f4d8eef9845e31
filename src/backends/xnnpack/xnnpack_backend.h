// xnnpack_cpu: the builtin backend that runs models on XNNPACK in-process, as TFLite's XNNPACK delegate
// runs them on a phone's CPU: converted to .tflite by our export, then lowered to XNNPACK operators.
#pragma once

#include "backends/xnnpack/engine.h"
#include "nnmeter/backend.h"

namespace nnmeter::xnnpack {

// The parameters of xnnpack_cpu, declared once: defaults, validation, YAML and CLI flags come from here.
const std::vector<BackendParam>& backend_params();
// The registry entry for xnnpack_cpu. Its convert step writes `<name>.tflite` (the model XNNPACK runs;
// TFLite's benchmark_model runs it too) and `<name>.xnnpack.json` (the compiled plan: one XNNPACK operator
// per step, the ops fused in).
BackendInfo backend_info();

}  // namespace nnmeter::xnnpack
