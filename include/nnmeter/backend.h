// Backends: an inference engine plus a device. Modelled on MMDeploy's backend manager: a backend
// declares its parameters once, reports availability and version, converts an ONNX model into its own
// files (to_backend), builds a wrapper that runs inference, and profiles latency.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "nnmeter/common.h"
#include "nnmeter/latency.h"

namespace nnmeter {

class Registry;

// One declared backend parameter. From this single declaration come the default backend_config.yaml,
// validation of a loaded config and the flags of `nn-meter backend NAME ...`.
struct BackendParam {
  enum class Type { Int, Float, Bool, String };
  std::string name;  // the YAML key, e.g. "NUM_THREADS"
  Type type = Type::String;
  Json default_value;
  std::string help;
  // Accepted range of an Int or Float value. Unset: any finite Float, any Int a 32-bit int holds.
  std::optional<double> min, max;
};
// One declaration in one call, e.g. backend_param("NUM_THREADS", BackendParam::Type::Int, 1, "threads", 1, 64).
BackendParam backend_param(std::string name, BackendParam::Type type, Json default_value, std::string help,
                           std::optional<double> min = std::nullopt, std::optional<double> max = std::nullopt);
const char* to_string(BackendParam::Type type);
BackendParam::Type backend_param_type_from_string(const std::string& name);  // "int", "float", ...

// Fills defaults into `config` and checks every key against `params`: an unknown key or a value of the
// wrong type throws Error naming the key (`where` names the file for the message).
Json resolve_backend_config(const std::vector<BackendParam>& params, const Json& config, const std::string& where);
// The default backend_config.yaml text, one commented key per parameter.
std::string default_backend_config_yaml(const std::vector<BackendParam>& params);

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

// A backend the registry can construct by name.
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

// Builtin backends compiled into libnnmeter, in listing order.
std::vector<BackendInfo> builtin_backends();

// All backends: builtins first, then the ones registered in `registry`.
std::vector<BackendInfo> list_backends(const Registry& registry);
// Looks a backend up by name (registered plugins and builtins); unknown names throw Error listing the
// known ones.
BackendInfo find_backend(const Registry& registry, const std::string& name);
// find_backend + resolve the config + construct: nn-Meter's connect_backend.
std::unique_ptr<Backend> connect_backend(const Registry& registry, const std::string& name, const Json& config,
                                         const std::string& config_origin = "backend_config.yaml");

// MMDeploy's check_env line for one backend: "<name>:\t<version>" or "<name>:\tNone".
std::string check_env_line(const BackendInfo& info);

}  // namespace nnmeter
