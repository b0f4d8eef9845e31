// Loading plugin classes from shared libraries through the C ABI of include/nnmeter/plugin.h.
#pragma once

#include <memory>

#include "nnmeter/common.h"
#include "nnmeter/plugin.h"

namespace nnmeter {

// An instance of a plugin class: a C++ class in a shared library (calls through its C table), or a
// Python class run by a plugin host process. A plugin-side failure arrives as its message and is rethrown
// as Error.
class PluginObject {
 public:
  virtual ~PluginObject() = default;
  // Calls `method` and parses its JSON result.
  Json call(const std::string& method, const Json& args = Json::object()) const;
  // Calls `method` whose result is raw bytes (e.g. a serialized ONNX model).
  virtual std::string call_bytes(const std::string& method, const Json& args = Json::object()) const = 0;

 protected:
  // The answer of `method` as JSON text.
  virtual std::string call_json(const std::string& method, const Json& args) const { return call_bytes(method, args); }
  virtual const std::string& label() const = 0;  // "class 'X' of /path/module.so", for messages
};

// A class found in a plugin library, checked for ABI version and kind.
class PluginClass {
 public:
  // Loads `<package_location>/<module>.so` (or lib<module>.so) and finds `class_name`, which must be of
  // `expected_kind` ("backend", "kernel", ...); without a library, `<module>.py` is a Python module whose
  // class runs in a plugin host process (checked when an object is created). `name` is the registered
  // name (a Python feature parser is constructed with it). Each failure is a one-line Error saying what to fix.
  static PluginClass load(const fs::path& package_location, const std::string& module, const std::string& class_name,
                          const std::string& expected_kind, const std::string& name = "");

  std::unique_ptr<PluginObject> create(const Json& config) const;
  const fs::path& library_path() const { return library_path_; }

 private:
  std::shared_ptr<void> library_;
  const nnmeter_plugin_class* cls_ = nullptr;
  fs::path library_path_;  // the .so, or the .py of a Python class
  std::string class_name_, kind_, name_;
};


}  // namespace nnmeter
