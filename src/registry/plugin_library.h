// Loading plugin classes from shared libraries through the C ABI of include/nnmeter/plugin.h.
#pragma once

#include <memory>

#include "nnmeter/common.h"
#include "nnmeter/plugin.h"

namespace nnmeter {

// An instance of a plugin class. Calls go through the plugin's C table; a plugin-side failure arrives as
// its message and is rethrown as Error.
class PluginObject {
 public:
  PluginObject(std::shared_ptr<void> library, const nnmeter_plugin_class* cls, void* self, std::string label);
  ~PluginObject();
  PluginObject(const PluginObject&) = delete;
  PluginObject& operator=(const PluginObject&) = delete;

  // Calls `method` and parses its JSON result.
  Json call(const std::string& method, const Json& args = Json::object()) const;
  // Calls `method` whose result is raw bytes (e.g. a serialized ONNX model).
  std::string call_bytes(const std::string& method, const Json& args = Json::object()) const;

 private:
  std::shared_ptr<void> library_;  // keeps the code mapped while the instance lives
  const nnmeter_plugin_class* cls_;
  void* self_;
  std::string label_;  // "class 'X' of /path/module.so", for messages
};

// A class found in a plugin library, checked for ABI version and kind.
class PluginClass {
 public:
  // Loads `<package_location>/<module>.so` (or lib<module>.so) and finds `class_name`, which must be of
  // `expected_kind` ("backend", "kernel", ...). Each failure is a one-line Error saying what to fix.
  static PluginClass load(const fs::path& package_location, const std::string& module, const std::string& class_name,
                          const std::string& expected_kind);

  std::unique_ptr<PluginObject> create(const Json& config) const;
  const fs::path& library_path() const { return library_path_; }

 private:
  std::shared_ptr<void> library_;
  const nnmeter_plugin_class* cls_ = nullptr;
  fs::path library_path_;
  std::string class_name_;
};

}  // namespace nnmeter
