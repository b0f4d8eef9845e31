// Backends: an inference engine plus a device. Modelled on MMDeploy's backend manager: a backend
// declares its parameters once, reports availability and version, converts an ONNX model into its own
// files (to_backend), builds a wrapper that runs inference, and profiles latency.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "nnmeter/backend_config.h"
#include "nnmeter/common.h"
#include "nnmeter/latency.h"

namespace nnmeter {


// A dense float32 tensor with a name, as the ONNX model's inputs and outputs are named.
struct Tensor {
  std::string name;
  Shape shape;
  std::vector<float> data;
};

// Runs inference on converted backend files: named tensors in, named tensors out.
class BackendWrapper {
 public:
  virtual ~BackendWrapper() = default;
  virtual std::vector<Tensor> forward(const std::vector<Tensor>& inputs) = 0;
};

// The stem of the files a backend's to_backend writes: `file_name` when given (only a ".onnx" suffix is cut:
// "mobilenet_v2_r224_w1.4" must not become "..._w1" and overwrite that model's files), else the ONNX file's stem.
std::string converted_stem(const fs::path& onnx_path, const std::string& file_name);

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual bool is_available() const = 0;
  virtual std::string get_version() const = 0;
  // Checks the device can be reached; returns the message to show. Throws Error when it cannot.
  virtual std::string test_connection() = 0;
  // Converts an ONNX model into the backend's files inside work_dir; returns their paths.
  virtual std::vector<fs::path> to_backend(const fs::path& onnx_path, const fs::path& work_dir,
                                           const std::string& file_name) = 0;
  // Loads converted files for inference. Backends that only measure (external tools) throw Error.
  virtual std::unique_ptr<BackendWrapper> build_wrapper(const std::vector<fs::path>& backend_files) = 0;
  // Measures the latency of converted files with the settings of the backend's config.
  virtual LatencyStats profile(const std::vector<fs::path>& backend_files) = 0;
  // How many kernels (fused units of work, layout reorders not counted) a run of converted files
  // executes, when the backend can tell from its own execution plan; nullopt when it cannot. The
  // fusion-rule tester settles with it the pairs whose timing stays inside the noise.
  virtual std::optional<int> kernel_count(const std::vector<fs::path>& /*backend_files*/) { return std::nullopt; }
};

// A backend the registry can construct by name (the lookups are in nnmeter/registry.h).
struct BackendInfo {
  std::string name;
  bool customized = false;  // registered as a plugin
  std::vector<BackendParam> params;
  // Constructs the backend from a config already resolved against `params`.
  std::function<std::unique_ptr<Backend>(const Json& config)> create;
  // Capability: the config that makes the backend profile with warm caches (back-to-back runs). The rule
  // tester needs it: its criterion compares ops measured alone with a block in which the second op reads
  // data the first just wrote. Empty: the backend profiles warm already, or cannot choose.
  std::function<Json(Json config)> warm_profiling;
  // Measures on another device (a phone over adb): the state of the machine nn-meter runs on does not set its
  // labels, so the machine check before measuring is skipped.
  bool remote_device = false;
};


}  // namespace nnmeter
