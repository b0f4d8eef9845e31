// nn-Meter plugin SDK for C++: bases that implement the C contract of nnmeter/plugin_abi.h.
//
// A plugin derives its classes from the bases below (nnmeter::plugin::Backend, Kernel, Sampler, Parser,
// Operator, TestCase) and lists them once, with the library's name and version, in one source file:
//
//     NNMETER_PLUGIN("my_backend", "1.0", MyBackend, MyOtherBackend)
//
// The SDK is header-only and needs nlohmann-json; nothing of it crosses the library boundary, so a plugin
// may be built with another compiler or standard library than nn-meter's.
#ifndef NNMETER_PLUGIN_H
#define NNMETER_PLUGIN_H

#ifndef __cplusplus
#error "nnmeter/plugin.h is the C++ SDK; a plugin written in C includes nnmeter/plugin_abi.h"
#endif

#include "nnmeter/plugin_abi.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace nnmeter::plugin {

using json = nlohmann::json;

/* Bases for plugin classes. Each is constructed from the relevant config as JSON: the workspace's
 * backend_config for backends, predictorbuild_config for kernels/samplers/parsers, ruletest_config for
 * operators and test cases. */

class Backend {
 public:
  static constexpr nnmeter_plugin_kind kind = NNMETER_PLUGIN_KIND_BACKEND;
  explicit Backend(const json& config) : config_(config) {}
  virtual ~Backend() = default;
  /* Parameters this backend reads from backend_config.yaml: [{"name","type","default","help"}], with
   * type one of "int", "float", "bool", "string", and optionally "min"/"max" bounding an int or float. */
  virtual json params() const { return json::array(); }
  virtual bool is_available() const { return true; }
  virtual std::string get_version() const { return "unknown"; }
  /* Checks the device is reachable; the returned text is shown to the user. Throw to report failure. */
  virtual std::string test_connection() = 0;
  /* Converts an ONNX model into the backend's own files inside work_dir; returns their paths. */
  virtual std::vector<std::string> to_backend(const std::string& onnx_path, const std::string& work_dir,
                                              const std::string& file_name) {
    (void)work_dir;
    (void)file_name;
    return {onnx_path};
  }
  /* Measures the converted model. Returns {"latency_ms": [one entry per measured run]} or, for tools
   * that only report a summary, {"avg": ms, "std": ms, "count": n}. */
  virtual json profile(const std::vector<std::string>& backend_files) = 0;

 protected:
  json config_;
};

class Kernel {
 public:
  static constexpr nnmeter_plugin_kind kind = NNMETER_PLUGIN_KIND_KERNEL;
  explicit Kernel(const json& config) : config_(config) {}
  virtual ~Kernel() = default;
  /* Shapes of every model input without the batch dimension, e.g. [[CIN, HW, HW]]. */
  virtual json input_tensor_shape(const json& kernel_config) const = 0;
  /* The kernel as a serialized ONNX ModelProto (raw bytes) for this config and batch size. */
  virtual std::string get_model(const json& kernel_config, int batch_size) const = 0;

 protected:
  json config_;
};

class Sampler {
 public:
  static constexpr nnmeter_plugin_kind kind = NNMETER_PLUGIN_KIND_SAMPLER;
  explicit Sampler(const json& config) : config_(config) {}
  virtual ~Sampler() = default;
  /* Returns a JSON array of configs. `seed` makes the result reproducible. */
  virtual json prior_config_sampling(int sample_num, uint64_t seed) = 0;
  virtual json finegrained_config_sampling(int sample_num, const json& configs, uint64_t seed) = 0;

 protected:
  json config_;
};

class Parser {
 public:
  static constexpr nnmeter_plugin_kind kind = NNMETER_PLUGIN_KIND_PARSER;
  explicit Parser(const json& config) : config_(config) {}
  virtual ~Parser() = default;
  virtual std::vector<std::string> needed_config() const = 0;
  virtual std::vector<double> get_feature_by_config(const json& kernel_config) const = 0;
  virtual json get_config_by_feature(const std::vector<double>& feature) const = 0;

 protected:
  json config_;
};

class Operator {
 public:
  static constexpr nnmeter_plugin_kind kind = NNMETER_PLUGIN_KIND_OPERATOR;
  explicit Operator(const json& config) : config_(config) {}
  virtual ~Operator() = default;
  /* Output shape (no batch) for the given input shape (no batch). */
  virtual json output_shape(const json& input_shape) const = 0;
  virtual bool is_two_inputs() const { return false; }
  /* A one-operator ONNX model for the input shape, as serialized bytes. */
  virtual std::string get_model(const json& input_shape, int batch_size) const = 0;

 protected:
  json config_;
};

class TestCase {
 public:
  static constexpr nnmeter_plugin_kind kind = NNMETER_PLUGIN_KIND_TESTCASE;
  explicit TestCase(const json& config) : config_(config) {}
  virtual ~TestCase() = default;
  /* Writes the models to profile under `directory`; returns {"<model name>": {"model": path,
   * "shapes": [[...]]}}. */
  virtual json generate_testcase(const std::string& directory, int batch_size) = 0;
  /* Given {"name": latency_ms} for every generated model, decides the rule: {"obey": true/false, ...}. */
  virtual json run_test(const json& latencies_ms) = 0;
  virtual std::vector<std::string> depends_on() const { return {}; }

 protected:
  json config_;
};

namespace detail {

inline std::string& last_error_text() {
  thread_local std::string text;
  return text;
}

inline const char* last_error() { return last_error_text().c_str(); }

inline void set_last_error(const char* reason) noexcept {
  try {
    last_error_text() = reason;
  } catch (...) {
    last_error_text().clear();  // no memory even for the message: nn-meter then says no reason was given
  }
}

// Runs `body`, turning any exception into a failure status and the thread's last error: exceptions must
// not unwind into nn-meter, which may be built with another compiler.
template <class F>
int guarded(F&& body) noexcept {
  try {
    body();
    return 0;
  } catch (const std::exception& e) {
    set_last_error(e.what());
  } catch (...) {
    set_last_error("unknown exception");
  }
  return 1;
}

inline char* copy_buffer(const std::string& s, size_t* size) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out == nullptr) throw std::bad_alloc();
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  if (size != nullptr) *size = s.size();
  return out;
}

[[noreturn]] inline void no_such_method(const char* kind, uint32_t method) {
  throw std::runtime_error(std::string(kind) + " plugin has no method " + std::to_string(method) +
                           " (the plugin was built against an older nn-Meter plugin.h)");
}

inline std::string dispatch(Backend& b, uint32_t m, const json& a) {
  switch (m) {
    case NNMETER_BACKEND_PARAMS: return b.params().dump();
    case NNMETER_BACKEND_IS_AVAILABLE: return json(b.is_available()).dump();
    case NNMETER_BACKEND_GET_VERSION: return json(b.get_version()).dump();
    case NNMETER_BACKEND_TEST_CONNECTION: return json(b.test_connection()).dump();
    case NNMETER_BACKEND_TO_BACKEND:
      return json(b.to_backend(a.at("onnx_path"), a.at("work_dir"), a.at("file_name"))).dump();
    case NNMETER_BACKEND_PROFILE: return b.profile(a.at("backend_files").get<std::vector<std::string>>()).dump();
  }
  no_such_method("backend", m);
}
inline std::string dispatch(Kernel& k, uint32_t m, const json& a) {
  switch (m) {
    case NNMETER_KERNEL_INPUT_TENSOR_SHAPE: return k.input_tensor_shape(a.at("config")).dump();
    case NNMETER_KERNEL_GET_MODEL: return k.get_model(a.at("config"), a.at("batch_size").get<int>());
  }
  no_such_method("kernel", m);
}
inline std::string dispatch(Sampler& s, uint32_t m, const json& a) {
  switch (m) {
    case NNMETER_SAMPLER_PRIOR_CONFIG_SAMPLING:
      return s.prior_config_sampling(a.at("sample_num"), a.at("seed").get<uint64_t>()).dump();
    case NNMETER_SAMPLER_FINEGRAINED_CONFIG_SAMPLING:
      return s.finegrained_config_sampling(a.at("sample_num"), a.at("configs"), a.at("seed").get<uint64_t>()).dump();
  }
  no_such_method("sampler", m);
}
inline std::string dispatch(Parser& p, uint32_t m, const json& a) {
  switch (m) {
    case NNMETER_PARSER_NEEDED_CONFIG: return json(p.needed_config()).dump();
    case NNMETER_PARSER_GET_FEATURE_BY_CONFIG: return json(p.get_feature_by_config(a.at("config"))).dump();
    case NNMETER_PARSER_GET_CONFIG_BY_FEATURE:
      return p.get_config_by_feature(a.at("feature").get<std::vector<double>>()).dump();
  }
  no_such_method("parser", m);
}
inline std::string dispatch(Operator& o, uint32_t m, const json& a) {
  switch (m) {
    case NNMETER_OPERATOR_OUTPUT_SHAPE: return o.output_shape(a.at("input_shape")).dump();
    case NNMETER_OPERATOR_IS_TWO_INPUTS: return json(o.is_two_inputs()).dump();
    case NNMETER_OPERATOR_GET_MODEL: return o.get_model(a.at("input_shape"), a.at("batch_size").get<int>());
  }
  no_such_method("operator", m);
}
inline std::string dispatch(TestCase& t, uint32_t m, const json& a) {
  switch (m) {
    case NNMETER_TESTCASE_GENERATE_TESTCASE: return t.generate_testcase(a.at("directory"), a.at("batch_size")).dump();
    case NNMETER_TESTCASE_RUN_TEST: return t.run_test(a.at("latencies_ms")).dump();
    case NNMETER_TESTCASE_DEPENDS_ON: return json(t.depends_on()).dump();
  }
  no_such_method("testcase", m);
}

template <class T>
struct ClassFunctions {
  static int create(const char* config_json, void** out_self) noexcept {
    return guarded([&] {
      if (config_json == nullptr || out_self == nullptr) throw std::invalid_argument("create called without config or out_self");
      *out_self = new T(json::parse(config_json));
    });
  }
  static int destroy(void* self) noexcept {
    return guarded([&] { delete static_cast<T*>(self); });
  }
  static int call(void* self, uint32_t method, const char* args_json, char** out_result, size_t* out_size) noexcept {
    return guarded([&] {
      if (self == nullptr || args_json == nullptr || out_result == nullptr)
        throw std::invalid_argument("call without object, arguments or out_result");
      *out_result = nullptr;
      *out_result = copy_buffer(dispatch(*static_cast<T*>(self), method, json::parse(args_json)), out_size);
    });
  }
  static int free_buffer(char* buffer) noexcept {
    std::free(buffer);
    return 0;
  }
  static constexpr nnmeter_plugin_functions table = {&create, &destroy, &call, &free_buffer};
};

// The class names as the macro wrote them ("A, ns::B, C<int, 2>"), split at the commas that separate
// classes (not those inside template arguments).
inline std::vector<std::string> split_class_names(const std::string& list) {
  std::vector<std::string> names;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '<' || c == '(') ++depth;
    if (c == '>' || c == ')') --depth;
    if (c != ',' || depth != 0) continue;
    const size_t first = list.find_first_not_of(' ', start);
    names.push_back(first < i ? list.substr(first, list.find_last_not_of(' ', i - 1) - first + 1) : "");
    start = i + 1;
  }
  return names;
}

template <class... Classes>
struct Library {
  Library(const char* name, const char* version, const char* class_list)
      : names(split_class_names(class_list)),
        classes{nnmeter_plugin_class{Classes::kind, nullptr, &ClassFunctions<Classes>::table}...} {
    if (names.size() != classes.size()) throw std::logic_error("cannot split the class list");
    for (size_t i = 0; i < classes.size(); ++i) classes[i].name = names[i].c_str();
    info = {NNMETER_PLUGIN_ABI_VERSION, name, version, classes.size(), classes.data(), &last_error};
  }
  std::vector<std::string> names;
  std::array<nnmeter_plugin_class, sizeof...(Classes)> classes;
  nnmeter_plugin_library info{};
};

template <class... Classes>
const nnmeter_plugin_library* describe_library(const char* name, const char* version, const char* class_list) noexcept {
  static_assert(sizeof...(Classes) > 0, "NNMETER_PLUGIN needs at least one class");
  static_assert((std::is_same_v<decltype(Classes::kind), const nnmeter_plugin_kind> && ...),
                "every class listed in NNMETER_PLUGIN must derive from one of the bases of nnmeter::plugin");
  try {
    static const Library<Classes...> library(name, version, class_list);
    return &library.info;
  } catch (...) {
    return nullptr;  // a later call tries again
  }
}

}  // namespace detail
}  // namespace nnmeter::plugin

/* Defines the entry point nn-meter looks up: the library's name and version (string literals) and its
 * classes, any number of them. Use it once per library, in one source file. */
#define NNMETER_PLUGIN(library_name, library_version, ...)                                           \
  extern "C" NNMETER_PLUGIN_EXPORT const nnmeter_plugin_library* nnmeter_plugin_info(void) {         \
    return ::nnmeter::plugin::detail::describe_library<__VA_ARGS__>(library_name, library_version,   \
                                                                    #__VA_ARGS__);                   \
  }

#endif  // NNMETER_PLUGIN_H
