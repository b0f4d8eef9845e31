#include "fuzz_targets.h"

#include <stdlib.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "backends/measure.h"
#include "backends/xnnpack/engine.h"
#include "common/io.h"
#include "nnmeter/kernel_data.h"
#include "nnmeter/prediction.h"
#include "nnmeter/predictor_folder.h"
#include "nnmeter/registry.h"
#include "nnmeter/workspace.h"

namespace nnmeter::fuzz {

namespace {

// Loaders read files, so each input is written to a per-process folder, removed at exit.
class Scratch {
 public:
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "nnmeter-fuzz-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a scratch folder for fuzzing");
    dir_ = pattern;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

fs::path scratch(const std::string& sub = "") {
  static const Scratch s;
  const fs::path p = sub.empty() ? s.dir() : s.dir() / sub;
  fs::create_directories(p);
  return p;
}

void write_bytes(const fs::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

template <class F>
void handled(F&& f) {
  try {
    f();
  } catch (const Error&) {
    // The one-line error the CLI prints: bad input handled.
  }
}

// A CPU backend's rules, so that fusion runs over whatever graph the input makes.
const FusionRules& cpu_rules() {
  static const FusionRules rules = [] {
    Json j = {{"MON", {{"obey", false}}}};
    for (const char* r : {"BF_conv_bn", "BF_conv_relu", "BF_conv_relu6", "BF_conv_hswish", "BF_dwconv_bn", "BF_dwconv_relu",
                          "BF_dwconv_relu6", "BF_bn_relu", "BF_add_relu", "BF_fc_relu"})
      j[r] = {{"obey", true}};
    return FusionRules::from_json(j, "fuzz rules");
  }();
  return rules;
}

void exercise_ir(const ModelIr& ir) {
  for (const auto& k : detect_kernels(ir, cpu_rules())) (void)k.config.dump();
  (void)ir_to_nnmeter_json(ir).dump();
}

void onnx_model(const uint8_t* data, size_t size) {
  const fs::path file = scratch() / "model.onnx";
  write_bytes(file, data, size);
  handled([&] { exercise_ir(load_onnx_ir(file)); });
}

void nnmeter_ir(const uint8_t* data, size_t size) {
  const Json doc = Json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return;  // the CLI's JSON reader reports this one
  handled([&] { exercise_ir(ir_from_nnmeter_json(doc, "fuzz_ir.json")); });
}

void xgboost_model(const uint8_t* data, size_t size) {
  const fs::path file = scratch() / "kernel.json";
  write_bytes(file, data, size);
  handled([&] {
    const KernelRegressor r = KernelRegressor::load(file);
    const FeatureMatrix rows = {std::vector<double>(r.feature_count(), 1.0), std::vector<double>(r.feature_count(), 100.0)};
    (void)r.predict(rows);
  });
}

void predictor_folder(const uint8_t* data, size_t size) {
  const fs::path folder = scratch("predictor");
  write_bytes(folder / kPredictorMetaFile, data, size);
  handled([&] { (void)load_predictor_folder(folder); });
}

// The same text as a workspace config, as registry files and as a predictor's registry meta.
void yaml_config(const uint8_t* data, size_t size) {
  const fs::path ws = scratch("workspace");
  fs::create_directories(ws / "configs");
  write_bytes(ws / "configs" / "predictorbuild_config.yaml", data, size);
  write_bytes(ws / "configs" / "ruletest_config.yaml", data, size);
  write_bytes(ws / "configs" / "backend_config.yaml", data, size);
  handled([&] { (void)Workspace::load(ws); });
  const fs::path home = scratch("home");
  fs::create_directories(home / "config");
  const Registry registry(home);
  write_bytes(registry.registry_file(), data, size);
  write_bytes(registry.predictors_file(), data, size);
  for (ModuleKind kind : {ModuleKind::Backend, ModuleKind::Kernel, ModuleKind::Operator, ModuleKind::TestCase})
    handled([&] { (void)registry.list(kind); });
  handled([&] { (void)registry.list_predictors(); });
  const fs::path meta = scratch("meta") / "meta.yaml";
  write_bytes(meta, data, size);
  handled([&] { (void)Registry(scratch("meta_home")).register_predictor(meta); });
}

// Config file, NUL, latency file: what `kernel-data to-csv` joins.
void kernel_data(const uint8_t* data, size_t size) {
  const auto* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  const size_t config_size = nul ? static_cast<size_t>(nul - data) : size;
  const fs::path dir = scratch("kernel_data");
  write_bytes(dir / "conv-bn-relu_prior.json", data, config_size);
  write_bytes(dir / "profiled_conv-bn-relu.json", nul ? nul + 1 : data, nul ? size - config_size - 1 : 0);
  static const KernelSuite suite = [] {
    for (const auto& k : builtin_kernels())
      if (k.name == "conv-bn-relu") return k.create(io::yaml_to_json(default_predictorbuild_config_yaml(), "default"));
    throw std::runtime_error("no builtin conv-bn-relu kernel");
  }();
  handled([&] {
    const Json joined = collect_kernel_data({dir / "conv-bn-relu_prior.json"}, {dir / "profiled_conv-bn-relu.json"});
    (void)kernel_data_csv(get_data_by_profiled_results("conv-bn-relu", *suite.parser, joined));
  });
}

// A .tflite as xnnpack_cpu reads it: whatever lowers must also run (on XNNPACK) without a fault.
void tflite_model(const uint8_t* data, size_t size) {
  handled([&] {
    xnnpack::Engine engine(std::string(reinterpret_cast<const char*>(data), size), "fuzz.tflite", {});
    (void)engine.forward(backends::random_inputs(engine.input_specs()));
    (void)engine.plan().dump();
  });
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"onnx_model", onnx_model},       {"nnmeter_ir", nnmeter_ir},
                                          {"xgboost_model", xgboost_model}, {"predictor_folder", predictor_folder},
                                          {"yaml_config", yaml_config},     {"kernel_data", kernel_data},
                                          {"tflite_model", tflite_model}};
  return all;
}

Entry find_target(const std::string& name) {
  for (const auto& t : targets())
    if (t.name == name) return t.entry;
  return nullptr;
}

}  // namespace nnmeter::fuzz
