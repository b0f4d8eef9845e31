#pragma once

#include <string>

#include "nnmeter/backend_config.h"
#include "nnmeter/workspace.h"

namespace nnmeter {

// backend_config.yaml of nn-Meter's TFLite and OpenVINO workspaces (the stray apostrophes in nn-Meter's
// OpenVINO keys are fixed).
std::string tflite_backend_config_yaml();
std::string openvino_backend_config_yaml();
// The parameters those files are written from: one config for both backends of the pair (tflite_cpu and
// tflite_gpu; openvino_vpu and openvino_cpu).
const std::vector<BackendParam>& tflite_workspace_params();
const std::vector<BackendParam>& openvino_workspace_params();

}  // namespace nnmeter
