// tflite_cpu and tflite_gpu: TFLite's benchmark_model on an Android device over adb, as nn-Meter's TFLite
// backends. The model is converted here (ONNX -> .tflite, tflite_export.h), pushed, timed on the device
// and removed again.
#pragma once

#include "nnmeter/backend.h"

namespace nnmeter::tflite {

// The parameters of tflite_cpu (gpu = false) or tflite_gpu, declared once: defaults, validation, YAML and
// CLI flags come from here. nn-Meter's four keys come first, with its defaults.
const std::vector<BackendParam>& backend_params(bool gpu);
BackendInfo backend_info(bool gpu);

// The words run on the device for `remote_model` with a resolved config: [taskset MASK] benchmark_model
// --graph=... --num_threads=... --num_runs=... --warmup_runs=... [--kernel_path=...] [--use_xnnpack=false]
// [--use_gpu=true].
std::vector<std::string> benchmark_command(const Json& config, const std::string& remote_model, bool gpu);

}  // namespace nnmeter::tflite
