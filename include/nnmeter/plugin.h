/* nn-Meter plugin contract: everything a plugin library and nn-meter agree on.
 *
 * A plugin is a shared library (`<classModule>.so` or `lib<classModule>.so` in the plugin folder) that
 * exports one C function, `nnmeter_plugin_find_class`. It returns a table describing a class by name.
 * Only C types and JSON strings cross the library boundary, so a plugin built with another compiler or
 * standard library still works; exceptions never cross it.
 *
 * Plugin authors normally do not touch the C part: they derive from one of the C++ bases below
 * (nnmeter::plugin::Backend, Kernel, Sampler, Parser, Operator, TestCase) and list their classes once:
 *
 *     NNMETER_PLUGIN_CLASSES(MyBackend)
 *
 * ABI history: 1 — first version.
 */
#ifndef NNMETER_PLUGIN_H
#define NNMETER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define NNMETER_PLUGIN_ABI_VERSION 1

#if defined(_WIN32)
#define NNMETER_PLUGIN_EXPORT __declspec(dllexport)
#else
#define NNMETER_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One class of a plugin. Method calls take a JSON argument object and produce a result buffer
 * (JSON text, or raw bytes for methods documented as such). On failure `call` returns non-zero and the
 * result buffer holds a one-line error message. Buffers are released with `free_buffer`. */
typedef struct nnmeter_plugin_class {
  uint32_t abi_version; /* NNMETER_PLUGIN_ABI_VERSION the plugin was compiled against */
  const char* kind;     /* "backend", "kernel", "sampler", "parser", "operator" or "testcase" */
  const char* name;     /* the class name, as written in the meta file's className */
  void* (*create)(const char* config_json, char** error);
  void (*destroy)(void* self);
  int (*call)(void* self, const char* method, const char* args_json, char** result, size_t* result_size);
  void (*free_buffer)(char* buffer);
} nnmeter_plugin_class;

/* The one symbol nn-meter resolves in a plugin library: the class called `class_name`, or NULL. */
typedef const nnmeter_plugin_class* (*nnmeter_plugin_find_class_fn)(const char* class_name);
#define NNMETER_PLUGIN_ENTRY_POINT "nnmeter_plugin_find_class"

#ifdef __cplusplus
}  // extern "C"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <nlohmann/json.hpp>
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
  static constexpr const char* kind = "backend";
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
  static constexpr const char* kind = "kernel";
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
  static constexpr const char* kind = "sampler";
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
  static constexpr const char* kind = "parser";
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
  static constexpr const char* kind = "operator";
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
  static constexpr const char* kind = "testcase";
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

inline char* copy_buffer(const std::string& s, size_t* size) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out == nullptr) return nullptr;
  std::memcpy(out, s.data(), s.size());
  out[s.size()] = '\0';
  if (size != nullptr) *size = s.size();
  return out;
}

inline std::string dispatch(Backend& b, const std::string& m, const json& a) {
  if (m == "params") return b.params().dump();
  if (m == "is_available") return json(b.is_available()).dump();
  if (m == "get_version") return json(b.get_version()).dump();
  if (m == "test_connection") return json(b.test_connection()).dump();
  if (m == "to_backend")
    return json(b.to_backend(a.at("onnx_path"), a.at("work_dir"), a.at("file_name"))).dump();
  if (m == "profile") return b.profile(a.at("backend_files").get<std::vector<std::string>>()).dump();
  throw std::runtime_error("backend plugin has no method '" + m + "'");
}
inline std::string dispatch(Kernel& k, const std::string& m, const json& a) {
  if (m == "input_tensor_shape") return k.input_tensor_shape(a.at("config")).dump();
  if (m == "get_model") return k.get_model(a.at("config"), a.at("batch_size").get<int>());
  throw std::runtime_error("kernel plugin has no method '" + m + "'");
}
inline std::string dispatch(Sampler& s, const std::string& m, const json& a) {
  if (m == "prior_config_sampling")
    return s.prior_config_sampling(a.at("sample_num"), a.at("seed").get<uint64_t>()).dump();
  if (m == "finegrained_config_sampling")
    return s.finegrained_config_sampling(a.at("sample_num"), a.at("configs"), a.at("seed").get<uint64_t>()).dump();
  throw std::runtime_error("sampler plugin has no method '" + m + "'");
}
inline std::string dispatch(Parser& p, const std::string& m, const json& a) {
  if (m == "needed_config") return json(p.needed_config()).dump();
  if (m == "get_feature_by_config") return json(p.get_feature_by_config(a.at("config"))).dump();
  if (m == "get_config_by_feature")
    return p.get_config_by_feature(a.at("feature").get<std::vector<double>>()).dump();
  throw std::runtime_error("parser plugin has no method '" + m + "'");
}
inline std::string dispatch(Operator& o, const std::string& m, const json& a) {
  if (m == "output_shape") return o.output_shape(a.at("input_shape")).dump();
  if (m == "is_two_inputs") return json(o.is_two_inputs()).dump();
  if (m == "get_model") return o.get_model(a.at("input_shape"), a.at("batch_size").get<int>());
  throw std::runtime_error("operator plugin has no method '" + m + "'");
}
inline std::string dispatch(TestCase& t, const std::string& m, const json& a) {
  if (m == "generate_testcase") return t.generate_testcase(a.at("directory"), a.at("batch_size")).dump();
  if (m == "run_test") return t.run_test(a.at("latencies_ms")).dump();
  if (m == "depends_on") return json(t.depends_on()).dump();
  throw std::runtime_error("testcase plugin has no method '" + m + "'");
}

template <class T>
const nnmeter_plugin_class* describe(const char* name) {
  static const nnmeter_plugin_class table = {
      NNMETER_PLUGIN_ABI_VERSION,
      T::kind,
      name,
      [](const char* config_json, char** error) -> void* {
        try {
          return new T(json::parse(config_json));
        } catch (const std::exception& e) {
          if (error != nullptr) *error = copy_buffer(e.what(), nullptr);
        } catch (...) {
          if (error != nullptr) *error = copy_buffer("unknown exception", nullptr);
        }
        return nullptr;
      },
      [](void* self) { delete static_cast<T*>(self); },
      [](void* self, const char* method, const char* args_json, char** result, size_t* result_size) -> int {
        try {
          *result = copy_buffer(dispatch(*static_cast<T*>(self), method, json::parse(args_json)), result_size);
          return 0;
        } catch (const std::exception& e) {
          *result = copy_buffer(e.what(), result_size);
        } catch (...) {
          *result = copy_buffer("unknown exception", result_size);
        }
        return 1;
      },
      [](char* buffer) { std::free(buffer); },
  };
  return &table;
}

}  // namespace detail
}  // namespace nnmeter::plugin

#define NNMETER_PLUGIN_DETAIL_CASE(C) \
  if (std::strcmp(class_name, #C) == 0) return ::nnmeter::plugin::detail::describe<C>(#C);
#define NNMETER_PLUGIN_DETAIL_EACH_1(C) NNMETER_PLUGIN_DETAIL_CASE(C)
#define NNMETER_PLUGIN_DETAIL_EACH_2(C, ...) NNMETER_PLUGIN_DETAIL_CASE(C) NNMETER_PLUGIN_DETAIL_EACH_1(__VA_ARGS__)
#define NNMETER_PLUGIN_DETAIL_EACH_3(C, ...) NNMETER_PLUGIN_DETAIL_CASE(C) NNMETER_PLUGIN_DETAIL_EACH_2(__VA_ARGS__)
#define NNMETER_PLUGIN_DETAIL_EACH_4(C, ...) NNMETER_PLUGIN_DETAIL_CASE(C) NNMETER_PLUGIN_DETAIL_EACH_3(__VA_ARGS__)
#define NNMETER_PLUGIN_DETAIL_EACH_5(C, ...) NNMETER_PLUGIN_DETAIL_CASE(C) NNMETER_PLUGIN_DETAIL_EACH_4(__VA_ARGS__)
#define NNMETER_PLUGIN_DETAIL_EACH_6(C, ...) NNMETER_PLUGIN_DETAIL_CASE(C) NNMETER_PLUGIN_DETAIL_EACH_5(__VA_ARGS__)
#define NNMETER_PLUGIN_DETAIL_PICK(_1, _2, _3, _4, _5, _6, NAME, ...) NAME
#define NNMETER_PLUGIN_DETAIL_EACH(...)                                                                     \
  NNMETER_PLUGIN_DETAIL_PICK(__VA_ARGS__, NNMETER_PLUGIN_DETAIL_EACH_6, NNMETER_PLUGIN_DETAIL_EACH_5,      \
                             NNMETER_PLUGIN_DETAIL_EACH_4, NNMETER_PLUGIN_DETAIL_EACH_3,                   \
                             NNMETER_PLUGIN_DETAIL_EACH_2, NNMETER_PLUGIN_DETAIL_EACH_1, unused)(__VA_ARGS__)

/* Lists the plugin's classes (1 to 6) and defines the entry point nn-meter looks up. Use it once per
 * library, in one source file. */
#define NNMETER_PLUGIN_CLASSES(...)                                                                   \
  extern "C" NNMETER_PLUGIN_EXPORT const nnmeter_plugin_class* nnmeter_plugin_find_class(             \
      const char* class_name) {                                                                      \
    if (class_name == nullptr) return nullptr;                                                       \
    NNMETER_PLUGIN_DETAIL_EACH(__VA_ARGS__)                                                          \
    return nullptr;                                                                                  \
  }

#endif  // __cplusplus
#endif  // NNMETER_PLUGIN_H
