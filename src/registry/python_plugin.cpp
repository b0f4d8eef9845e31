#include "registry/python_plugin.h"

#include <unistd.h>

#include <cstdlib>
#include <variant>

#include "common/io.h"
#include "common/location.h"
#include "common/worker_process.h"

namespace nnmeter {

namespace {

// A plugin call may profile a model on a device for minutes; the profiling worker's own timeout (which ends
// the worker, and with it the host) is what bounds it.
constexpr double kCallTimeoutS = 7 * 24 * 3600.0;
constexpr double kStartTimeoutS = 120.0;  // importing the module (torch, onnx) and constructing the class

fs::path find_interpreter() {
  if (const char* env = std::getenv("NN_METER_PYTHON"); env != nullptr && *env != '\0') return env;
  if (::access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  if (const char* path = std::getenv("PATH"))
    for (std::string_view rest = path; !rest.empty();) {
      const size_t colon = rest.find(':');
      const fs::path candidate = fs::path(std::string(rest.substr(0, colon))) / "python3";
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  throw Error("Python plugins need python3: install it (apt-get install python3) or set NN_METER_PYTHON");
}

// The host script of the nn_meter package next to this library: <build>/python/nn_meter/ in a build tree,
// <prefix>/lib/python3.X/dist-packages/nn_meter/ when installed.
fs::path find_host_script() {
  if (const char* env = std::getenv("NN_METER_PLUGIN_HOST"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  if (const fs::path lib_dir = library_dir(); !lib_dir.empty()) {
    const fs::path in_build_tree = lib_dir / "python" / "nn_meter" / "_plugin_host.py";
    if (fs::is_regular_file(in_build_tree, ec)) return in_build_tree;
    for (const auto& entry : fs::directory_iterator(lib_dir, ec)) {
      const fs::path installed = entry.path() / "dist-packages" / "nn_meter" / "_plugin_host.py";
      if (entry.path().filename().string().rfind("python3", 0) == 0 && fs::is_regular_file(installed, ec))
        return installed;
    }
  }
  throw Error("Python plugins need nn-meter's Python package (nn_meter), which this nn-meter was built or installed "
              "without: build with python3-dev and pybind11-dev, or set NN_METER_PLUGIN_HOST to its _plugin_host.py");
}

class PythonPluginObject final : public PluginObject {
 public:
  PythonPluginObject(const fs::path& module_file, const std::string& class_name, const std::string& kind,
                     const std::string& name, const Json& config)
      : label_("class '" + class_name + "' of " + module_file.string()) {
    std::vector<std::string> argv = python_plugin_host_command();
    for (auto& a : worker_protocol_args()) argv.push_back(std::move(a));
    for (const std::string& a : {module_file.parent_path().string(), module_file.stem().string(), class_name, kind, name})
      argv.push_back(a);
    host_ = std::make_unique<WorkerProcess>(argv, fs::path());
    answer_of(host_->request({{"config", config}}, kStartTimeoutS), "loading");
  }

  std::string call_bytes(const PluginMethod& method, const Json& args) const override {
    std::string name = (fs::temp_directory_path() / "nn-meter-plugin-XXXXXX").string();
    const int fd = ::mkstemp(name.data());
    if (fd < 0) throw Error("cannot create a temporary file for " + label_ + "'s " + std::string(method.name) + " result");
    ::close(fd);
    const fs::path file = name;
    struct Remove {
      fs::path f;
      ~Remove() {
        std::error_code ec;
        fs::remove(f, ec);
      }
    } remove{file};
    answer_of(host_->request({{"method", method.name}, {"args", args}, {"bytes_to", file.string()}}, kCallTimeoutS),
              method.name);
    return io::read_file(file);
  }

 protected:
  std::string call_json(const PluginMethod& method, const Json& args) const override {
    return answer_of(host_->request({{"method", method.name}, {"args", args}}, kCallTimeoutS), method.name).dump();
  }
  const std::string& label() const override { return label_; }

 private:
  Json answer_of(const std::variant<Json, std::string>& reply, std::string_view method) const {
    if (const auto* why = std::get_if<std::string>(&reply))
      throw Error(label_ + ": its Python plugin host " + *why + " in " + std::string(method));
    const Json& answer = std::get<Json>(reply);
    if (answer.contains("error"))
      throw Error(label_ + (method == "loading" ? " could not be loaded: " : " failed in " + std::string(method) + ": ") +
                  answer["error"].get<std::string>());
    if (!answer.contains("ok"))
      throw Error(label_ + ": its Python plugin host answered without a result in " + std::string(method));
    return answer["ok"];
  }

  std::string label_;
  std::unique_ptr<WorkerProcess> host_;  // one request at a time: callers use an object from one thread
};

}  // namespace

std::vector<std::string> python_plugin_host_command() {
  return {find_interpreter().string(), find_host_script().string()};
}

std::unique_ptr<PluginObject> create_python_plugin_object(const fs::path& module_file, const std::string& class_name,
                                                          const std::string& kind, const std::string& name,
                                                          const Json& config) {
  return std::make_unique<PythonPluginObject>(module_file, class_name, kind, name, config);
}

}  // namespace nnmeter
