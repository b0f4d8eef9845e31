// The backends compiled into libnnmeter, in listing order.
#include "backends/onednn/onednn_backend.h"
#include "backends/openvino/openvino_backend.h"
#include "backends/tflite/tflite_backend.h"
#include "backends/xnnpack/xnnpack_backend.h"
#include "nnmeter/backend.h"

namespace nnmeter {

std::vector<BackendInfo> builtin_backends() {
  return {onednn::backend_info(), xnnpack::backend_info(), tflite::backend_info(false), tflite::backend_info(true), openvino::backend_info(false),
          openvino::backend_info(true)};
}

}  // namespace nnmeter
