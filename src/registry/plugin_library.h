// Loading plugin classes from shared libraries through the C ABI of include/nnmeter/plugin_abi.h.
#pragma once

#include <memory>
#include <string_view>

#include "nnmeter/common.h"
#include "nnmeter/plugin_abi.h"

namespace nnmeter {

// A method of a plugin kind: its number crosses the C ABI, its name the Python plugin host's protocol and
// every message.
struct PluginMethod {
  uint32_t id;
  std::string_view name;
};

namespace registry::plugin_methods {
namespace backend {
inline constexpr PluginMethod params{NNMETER_BACKEND_PARAMS, "params"};
inline constexpr PluginMethod is_available{NNMETER_BACKEND_IS_AVAILABLE, "is_available"};
inline constexpr PluginMethod get_version{NNMETER_BACKEND_GET_VERSION, "get_version"};
inline constexpr PluginMethod test_connection{NNMETER_BACKEND_TEST_CONNECTION, "test_connection"};
inline constexpr PluginMethod to_backend{NNMETER_BACKEND_TO_BACKEND, "to_backend"};
inline constexpr PluginMethod profile{NNMETER_BACKEND_PROFILE, "profile"};
}  // namespace backend
namespace kernel {
inline constexpr PluginMethod input_tensor_shape{NNMETER_KERNEL_INPUT_TENSOR_SHAPE, "input_tensor_shape"};
inline constexpr PluginMethod get_model{NNMETER_KERNEL_GET_MODEL, "get_model"};
}  // namespace kernel
namespace sampler {
inline constexpr PluginMethod prior_config_sampling{NNMETER_SAMPLER_PRIOR_CONFIG_SAMPLING, "prior_config_sampling"};
inline constexpr PluginMethod finegrained_config_sampling{NNMETER_SAMPLER_FINEGRAINED_CONFIG_SAMPLING,
                                                          "finegrained_config_sampling"};
}  // namespace sampler
namespace parser {
inline constexpr PluginMethod needed_config{NNMETER_PARSER_NEEDED_CONFIG, "needed_config"};
inline constexpr PluginMethod get_feature_by_config{NNMETER_PARSER_GET_FEATURE_BY_CONFIG, "get_feature_by_config"};
inline constexpr PluginMethod get_config_by_feature{NNMETER_PARSER_GET_CONFIG_BY_FEATURE, "get_config_by_feature"};
}  // namespace parser
namespace op {
inline constexpr PluginMethod output_shape{NNMETER_OPERATOR_OUTPUT_SHAPE, "output_shape"};
inline constexpr PluginMethod is_two_inputs{NNMETER_OPERATOR_IS_TWO_INPUTS, "is_two_inputs"};
inline constexpr PluginMethod get_model{NNMETER_OPERATOR_GET_MODEL, "get_model"};
}  // namespace op
namespace testcase {
inline constexpr PluginMethod generate_testcase{NNMETER_TESTCASE_GENERATE_TESTCASE, "generate_testcase"};
inline constexpr PluginMethod run_test{NNMETER_TESTCASE_RUN_TEST, "run_test"};
inline constexpr PluginMethod depends_on{NNMETER_TESTCASE_DEPENDS_ON, "depends_on"};
}  // namespace testcase
}  // namespace registry::plugin_methods

// An instance of a plugin class: a C++ class in a shared library (calls through its C table), or a
// Python class run by a plugin host process. A plugin-side failure arrives as its message and is rethrown
// as Error.
class PluginObject {
 public:
  virtual ~PluginObject() = default;
  // Calls `method` and parses its JSON result.
  Json call(const PluginMethod& method, const Json& args = Json::object()) const;
  // Calls `method` whose result is raw bytes (e.g. a serialized ONNX model).
  virtual std::string call_bytes(const PluginMethod& method, const Json& args = Json::object()) const = 0;

 protected:
  // The answer of `method` as JSON text.
  virtual std::string call_json(const PluginMethod& method, const Json& args) const { return call_bytes(method, args); }
  virtual const std::string& label() const = 0;  // "class 'X' of /path/module.so", for messages
};

// "backend", "kernel", ... for an nnmeter_plugin_kind; "kind N" for a number this nn-meter does not know.
std::string plugin_kind_name(uint32_t kind);

// A loaded plugin library whose description was checked: ABI 2, a well-formed class table.
class PluginLibrary {
 public:
  struct Class {
    std::string name, kind;  // kind as plugin_kind_name() spells it
    const nnmeter_plugin_class* table;
  };

  // Loads `file`, which `module` names in messages. Each failure is a one-line Error saying what to fix;
  // a library built against another plugin ABI is refused before anything else of it is read.
  static std::shared_ptr<const PluginLibrary> open(const fs::path& file, const std::string& module);

  const fs::path& path() const { return path_; }
  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const std::vector<Class>& classes() const { return classes_; }
  const Class* find(const std::string& class_name) const;
  // The first line of the library's last error on this thread (after a failed call), or "no reason given".
  std::string last_error() const;

 private:
  std::shared_ptr<void> handle_;
  const nnmeter_plugin_library* info_ = nullptr;
  fs::path path_;
  std::string name_, version_;
  std::vector<Class> classes_;
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
  std::shared_ptr<const PluginLibrary> library_;
  const nnmeter_plugin_class* cls_ = nullptr;
  fs::path library_path_;  // the .so, or the .py of a Python class
  std::string class_name_, kind_, name_;
};

}  // namespace nnmeter
