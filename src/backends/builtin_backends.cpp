// The backends compiled into libnnmeter, in listing order, registered as the builtins of registry/builtins.h.
#include "backends/onednn/onednn_backend.h"
#include "backends/openvino/openvino_backend.h"
#include "backends/tflite/tflite_backend.h"
#include "backends/xnnpack/xnnpack_backend.h"
#include "registry/builtins.h"

namespace nnmeter {

namespace {

std::vector<BackendInfo> builtins() {
  return {onednn::backend_info(), xnnpack::backend_info(), tflite::backend_info(false), tflite::backend_info(true), openvino::backend_info(false),
          openvino::backend_info(true)};
}

const BuiltinRegistration registration(&builtins);

}  // namespace

}  // namespace nnmeter
