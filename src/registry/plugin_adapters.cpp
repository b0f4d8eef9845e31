#include "registry/plugin_adapters.h"

#include "common/io.h"
#include "registry/plugin_library.h"
#include "registry/plugin_probe.h"

namespace nnmeter {

namespace plugin_methods = registry::plugin_methods;

namespace {

std::string str(const Json& meta, const char* key) {
  return meta.contains(key) && meta[key].is_string() ? meta[key].get<std::string>() : std::string();
}

// `name`: the registered name, which a Python feature parser is constructed with ("" when validating).
PluginClass load_class(const Json& meta, const char* module_key, const char* class_key, const std::string& kind,
                       const std::string& name = "") {
  return PluginClass::load(str(meta, "packageLocation"), str(meta, module_key), str(meta, class_key), kind, name);
}

// Errors from a plugin that was registered earlier get the way out appended: its files may have moved.
template <class F>
auto with_reregister_hint(const std::string& kind, const std::string& name, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error& e) {
    // Nested lookups (the declared parameters read inside a connect) must not repeat the hint.
    const std::string hint = " (registered " + kind + " '" + name + "': ";
    if (std::string_view(e.what()).find(hint) != std::string_view::npos) throw;
    throw Error(std::string(e.what()) + hint + "if its files moved, run `nn-meter unregister --" + kind + " " + name +
                "` and `nn-meter register --" + kind + " META.yaml` again)");
  }
}

class PluginBackend final : public Backend {
 public:
  PluginBackend(std::string name, std::unique_ptr<PluginObject> object)
      : name_(std::move(name)), object_(std::move(object)) {}

  std::string name() const override { return name_; }
  bool is_available() const override { return object_->call(plugin_methods::backend::is_available).get<bool>(); }
  std::string get_version() const override {
    return object_->call(plugin_methods::backend::get_version).get<std::string>();
  }
  std::string test_connection() override {
    return object_->call(plugin_methods::backend::test_connection).get<std::string>();
  }

  std::vector<fs::path> to_backend(const fs::path& onnx_path, const fs::path& work_dir,
                                   const std::string& file_name) override {
    const Json files = object_->call(
        plugin_methods::backend::to_backend,
        {{"onnx_path", onnx_path.string()}, {"work_dir", work_dir.string()}, {"file_name", file_name}});
    std::vector<fs::path> out;
    for (const auto& f : files) out.emplace_back(f.get<std::string>());
    return out;
  }

  std::unique_ptr<BackendWrapper> build_wrapper(const std::vector<fs::path>&) override {
    throw Error("backend '" + name_ + "' is a plugin: nn-meter converts and profiles through it but cannot run inference");
  }

  LatencyStats profile(const std::vector<fs::path>& backend_files) override {
    Json files = Json::array();
    for (const auto& f : backend_files) files.push_back(f.string());
    const Json result = object_->call(plugin_methods::backend::profile, {{"backend_files", files}});
    if (result.contains("latency_ms") && result["latency_ms"].is_array() && !result["latency_ms"].empty())
      return LatencyStats::from_samples(result["latency_ms"].get<std::vector<double>>());
    if (result.contains("avg") && result["avg"].is_number()) {
      LatencyStats s;
      s.mean = s.median = s.min = s.max = result["avg"].get<double>();
      s.std = result.value("std", 0.0);
      s.count = result.value("count", 1);
      return s;
    }
    throw Error("backend '" + name_ + "' returned no latency from profile (expected latency_ms or avg)");
  }

 private:
  std::string name_;
  std::unique_ptr<PluginObject> object_;
};

std::vector<BackendParam> params_from_json(const Json& declared, const std::string& name) {
  std::vector<BackendParam> out;
  try {
    for (const auto& p : declared) {
      BackendParam param;
      param.name = p.at("name").get<std::string>();
      param.type = backend_param_type_from_string(p.value("type", "string"));
      param.default_value = p.value("default", Json());
      param.help = p.value("help", "");
      if (p.contains("min")) param.min = p.at("min").get<double>();
      if (p.contains("max")) param.max = p.at("max").get<double>();
      out.push_back(std::move(param));
    }
  } catch (const Json::exception&) {
    throw Error("backend '" + name + "' declares malformed params (expected [{name, type, default, help}])");
  }
  return out;
}

Json backend_default_config(const Json& meta) {
  const std::string file = str(meta, "defaultConfigFile");
  if (file.empty()) return Json::object();
  Json config = io::load_yaml_file(file);
  return config.is_object() ? config : Json::object();
}

class PluginKernel final : public Kernel {
 public:
  explicit PluginKernel(std::unique_ptr<PluginObject> object) : object_(std::move(object)) {}
  std::vector<Shape> input_tensor_shape(const KernelConfig& config) const override {
    return object_->call(plugin_methods::kernel::input_tensor_shape, {{"config", config}}).get<std::vector<Shape>>();
  }
  std::string build_onnx(const KernelConfig& config, int batch_size) const override {
    return object_->call_bytes(plugin_methods::kernel::get_model, {{"config", config}, {"batch_size", batch_size}});
  }

 private:
  std::unique_ptr<PluginObject> object_;
};

class PluginSampler final : public ConfigSampler {
 public:
  explicit PluginSampler(std::unique_ptr<PluginObject> object) : object_(std::move(object)) {}
  std::vector<KernelConfig> prior_config_sampling(int sample_num, uint64_t seed) override {
    return object_->call(plugin_methods::sampler::prior_config_sampling, {{"sample_num", sample_num}, {"seed", seed}})
        .get<std::vector<KernelConfig>>();
  }
  std::vector<KernelConfig> finegrained_config_sampling(int sample_num, const std::vector<KernelConfig>& configs,
                                                        uint64_t seed) override {
    return object_
        ->call(plugin_methods::sampler::finegrained_config_sampling,
               {{"sample_num", sample_num}, {"configs", configs}, {"seed", seed}})
        .get<std::vector<KernelConfig>>();
  }

 private:
  std::unique_ptr<PluginObject> object_;
};

class PluginParser final : public FeatureParser {
 public:
  explicit PluginParser(std::unique_ptr<PluginObject> object) : object_(std::move(object)) {}
  std::vector<std::string> needed_config() const override {
    return object_->call(plugin_methods::parser::needed_config).get<std::vector<std::string>>();
  }
  std::vector<double> get_feature_by_config(const KernelConfig& config) const override {
    return object_->call(plugin_methods::parser::get_feature_by_config, {{"config", config}})
        .get<std::vector<double>>();
  }
  KernelConfig get_config_by_feature(const std::vector<double>& feature) const override {
    return object_->call(plugin_methods::parser::get_config_by_feature, {{"feature", feature}});
  }

 private:
  std::unique_ptr<PluginObject> object_;
};

class PluginOperator final : public Operator {
 public:
  explicit PluginOperator(std::unique_ptr<PluginObject> object) : object_(std::move(object)) {}
  Shape output_shape(const Shape& input_shape) const override {
    return object_->call(plugin_methods::op::output_shape, {{"input_shape", input_shape}}).get<Shape>();
  }
  bool is_two_inputs() const override { return object_->call(plugin_methods::op::is_two_inputs).get<bool>(); }
  std::string build_onnx(const Shape& input_shape, int batch_size) const override {
    return object_->call_bytes(plugin_methods::op::get_model,
                               {{"input_shape", input_shape}, {"batch_size", batch_size}});
  }

 private:
  std::unique_ptr<PluginObject> object_;
};

class PluginTestCase final : public TestCase {
 public:
  explicit PluginTestCase(std::unique_ptr<PluginObject> object) : object_(std::move(object)) {}
  std::map<std::string, TestCaseModel> generate_testcase(const fs::path& directory, int batch_size) override {
    const Json models = object_->call(plugin_methods::testcase::generate_testcase,
                                      {{"directory", directory.string()}, {"batch_size", batch_size}});
    std::map<std::string, TestCaseModel> out;
    for (const auto& [name, m] : models.items())
      out[name] = TestCaseModel{m.at("model").get<std::string>(), m.at("shapes").get<std::vector<Shape>>()};
    return out;
  }
  Json run_test(const std::map<std::string, double>& latencies_ms) override {
    return object_->call(plugin_methods::testcase::run_test, {{"latencies_ms", latencies_ms}});
  }
  std::vector<std::string> depends_on() const override {
    return object_->call(plugin_methods::testcase::depends_on).get<std::vector<std::string>>();
  }

 private:
  std::unique_ptr<PluginObject> object_;
};

}  // namespace

Json plugin_backend_declared_params(const ModuleEntry& entry) {
  return with_reregister_hint("backend", entry.name, [&] {
    return load_class(entry.meta, "classModule", "className", "backend")
        .create(backend_default_config(entry.meta))
        ->call(plugin_methods::backend::params);
  });
}

BackendInfo plugin_backend_info(const ModuleEntry& entry, bool load_params) {
  BackendInfo info;
  info.name = entry.name;
  info.customized = true;
  const Json meta = entry.meta;
  // Reading the declared parameters runs the plugin (its library's initializers, its constructor): in a
  // child, so that a plugin that crashes or hangs costs an error line, not the nn-meter process.
  if (load_params)
    info.params = with_reregister_hint("backend", entry.name,
                                       [&] { return params_from_json(backend_params_isolated(entry), entry.name); });
  info.create = [meta, name = entry.name](const Json& config) -> std::unique_ptr<Backend> {
    return with_reregister_hint("backend", name, [&] {
      return std::make_unique<PluginBackend>(name, load_class(meta, "classModule", "className", "backend").create(config));
    });
  };
  return info;
}

KernelInfo plugin_kernel_info(const ModuleEntry& entry) {
  KernelInfo info;
  info.name = entry.name;
  info.customized = true;
  info.implement = entry.meta.value("implement", "onnx");
  info.create = [meta = entry.meta, name = entry.name](const Json& config) {
    return with_reregister_hint("kernel", name, [&] {
      KernelSuite suite;
      suite.name = name;
      suite.kernel = std::make_unique<PluginKernel>(load_class(meta, "classModule", "className", "kernel").create(config));
      suite.sampler =
          std::make_unique<PluginSampler>(load_class(meta, "samplerModule", "samplerName", "sampler").create(config));
      suite.parser =
          std::make_unique<PluginParser>(load_class(meta, "parserModule", "parserName", "parser", name).create(config));
      return suite;
    });
  };
  return info;
}

OperatorInfo plugin_operator_info(const ModuleEntry& entry) {
  OperatorInfo info;
  info.name = entry.name;
  info.customized = true;
  info.implement = entry.implement;
  info.create = [meta = entry.meta, name = entry.name](const Json& config) -> std::unique_ptr<Operator> {
    return with_reregister_hint("operator", name, [&] {
      return std::make_unique<PluginOperator>(load_class(meta, "classModule", "className", "operator").create(config));
    });
  };
  return info;
}

TestCaseInfo plugin_testcase_info(const ModuleEntry& entry) {
  TestCaseInfo info;
  info.name = entry.name;
  info.customized = true;
  info.implement = entry.implement;
  info.create = [meta = entry.meta, name = entry.name](const Json& config) -> std::unique_ptr<TestCase> {
    return with_reregister_hint("testcase", name, [&] {
      return std::make_unique<PluginTestCase>(load_class(meta, "classModule", "className", "testcase").create(config));
    });
  };
  return info;
}

void validate_plugin(ModuleKind kind, const Json& meta) {
  switch (kind) {
    case ModuleKind::Backend: {
      const auto object = load_class(meta, "classModule", "className", "backend").create(backend_default_config(meta));
      params_from_json(object->call(plugin_methods::backend::params), str(meta, "className"));
      return;
    }
    case ModuleKind::Kernel:
      load_class(meta, "classModule", "className", "kernel").create(Json::object());
      load_class(meta, "samplerModule", "samplerName", "sampler").create(Json::object());
      load_class(meta, "parserModule", "parserName", "parser").create(Json::object());
      return;
    case ModuleKind::Operator:
      load_class(meta, "classModule", "className", "operator").create(Json::object());
      return;
    case ModuleKind::TestCase:
      load_class(meta, "classModule", "className", "testcase").create(Json::object());
      return;
  }
}

}  // namespace nnmeter
