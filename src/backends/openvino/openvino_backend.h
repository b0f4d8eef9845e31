// openvino_cpu and openvino_vpu: OpenVINO's benchmark_app on this machine (it reads ONNX itself), on the
// CPU or on a Movidius stick (MYRIAD), as nn-Meter's openvino_vpu was meant to run.
#pragma once

#include "nnmeter/backend.h"

namespace nnmeter::openvino {

// The parameters of openvino_cpu (vpu = false) or openvino_vpu, declared once.
const std::vector<BackendParam>& backend_params(bool vpu);
BackendInfo backend_info(bool vpu);

// benchmark_app -m MODEL -d DEVICE -niter N -api API -nireq R [-nthreads T] [-infer_precision P]
std::vector<std::string> benchmark_command(const Json& config, const std::string& model);

}  // namespace nnmeter::openvino
