#pragma once

#include <string>

#include "nnmeter/workspace.h"

namespace nnmeter {

// backend_config.yaml of nn-Meter's TFLite and OpenVINO workspaces (the stray apostrophes in nn-Meter's
// OpenVINO keys are fixed).
std::string tflite_backend_config_yaml();
std::string openvino_backend_config_yaml();

}  // namespace nnmeter
