#include "backends/xnnpack/xnnpack_backend.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "backends/measure.h"
#include "backends/tflite/tflite_export.h"
#include "common/io.h"

namespace nnmeter::xnnpack {

namespace {

constexpr const char* kName = "xnnpack_cpu";
constexpr const char* kPlanFormat = "nnmeter-xnnpack-plan";
constexpr int kPlanVersion = 1;

EngineOptions engine_options(const Json& config) { return EngineOptions{config.value("NUM_THREADS", 1)}; }

std::unique_ptr<Engine> load_engine(const std::vector<fs::path>& files, const EngineOptions& options) {
  const BackendFiles bf = find_backend_files(files);
  if (!fs::exists(bf.model)) throw Error(fmt::format("{}: {} does not exist; convert the model first", kName, bf.model.string()));
  return std::make_unique<Engine>(io::read_file(bf.model), bf.model.filename().string(), options);
}

class Wrapper : public BackendWrapper {
 public:
  explicit Wrapper(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override { return engine_->forward(inputs); }

 private:
  std::unique_ptr<Engine> engine_;
};

class XnnpackBackend : public Backend {
 public:
  // The config, already resolved against backend_params(), is read once here (the measuring threads come
  // from each loaded engine).
  explicit XnnpackBackend(Json config)
      : config_(std::move(config)), options_(engine_options(config_)), cold_cache_(config_.value("COLD_CACHE", true)) {}

  std::string name() const override { return kName; }
  bool is_available() const override { return true; }
  std::string get_version() const override { return xnnpack_version(); }

  std::string test_connection() override {
    return fmt::format("{}: XNNPACK {} in-process, {} threads of {} CPUs", kName, xnnpack_version(), options_.threads,
                       std::thread::hardware_concurrency());
  }

  std::vector<fs::path> to_backend(const fs::path& onnx_path, const fs::path& work_dir, const std::string& file_name) override {
    const std::string stem = converted_stem(onnx_path, file_name);
    const std::string tflite = tflite::export_tflite(onnx_path, kName);
    const fs::path model = work_dir / (stem + ".tflite");
    Engine engine(tflite, model.filename().string(), options_);  // lowering proves every op runs
    Json plan = engine.plan();
    plan["format"] = kPlanFormat;
    plan["version"] = kPlanVersion;
    plan["source"] = fs::absolute(onnx_path).string();
    plan["model"] = model.filename().string();
    Json inputs = Json::object();
    for (const auto& [name, shape] : engine.input_specs()) inputs[name] = shape;
    plan["inputs"] = inputs;
    const fs::path plan_path = work_dir / (stem + ".xnnpack.json");
    io::write_file_atomic(model, tflite);
    io::save_json_file(plan_path, plan);
    spdlog::debug("{}: {} -> {} ({} operators)", kName, onnx_path.string(), model.string(), plan["operators"].get<int>());
    return {model, plan_path};
  }

  std::unique_ptr<BackendWrapper> build_wrapper(const std::vector<fs::path>& files) override {
    return std::make_unique<Wrapper>(load_engine(files, options_));
  }

  // Every step of the plan is one XNNPACK operator (or our transpose) with its fused activation and pads.
  std::optional<int> kernel_count(const std::vector<fs::path>& files) override {
    const BackendFiles bf = find_backend_files(files);
    if (bf.plan.empty() || !fs::exists(bf.plan)) return std::nullopt;
    const Json plan = io::load_json_file(bf.plan);
    if (plan.value("format", "") != kPlanFormat || !plan.contains("operators") || !plan["operators"].is_number_integer())
      return std::nullopt;
    return plan["operators"].get<int>();
  }

  LatencyStats profile(const std::vector<fs::path>& files) override {
    auto engine = load_engine(files, options_);
    engine->set_inputs(backends::random_inputs(engine->input_specs()));
    const backends::MeasureSettings settings = backends::measure_settings(config_, engine->threads());
    std::function<void()> start_cold;
    if (cold_cache_) start_cold = [&] { engine->start_cold(settings.cold_fill_bytes); };
    const auto m = backends::measure([&] { engine->execute(); }, settings, start_cold);
    spdlog::debug("{}: {} rounds, {} runs, per-run CV {:.1f}%, {} rounds re-measured", kName, m.stats.count, m.run_samples_ms.size(),
                  100 * m.run_cv, m.discarded_rounds);
    return m.stats;
  }

 private:
  Json config_;
  EngineOptions options_;
  bool cold_cache_;
};

}  // namespace

const std::vector<BackendParam>& backend_params() {
  static const std::vector<BackendParam> params = [] {
    std::vector<BackendParam> p = {backend_param(
        "NUM_THREADS", BackendParam::Type::Int, 1,
        "Threads XNNPACK runs on (a pthreadpool; 1 runs on the calling thread, as nn-Meter profiles); with more than "
        "one, PIN_CPU pins the calling thread only",
        1, 1024)};
    for (auto& m : backends::measurement_params()) p.push_back(std::move(m));
    return p;
  }();
  return params;
}

BackendFiles find_backend_files(const std::vector<fs::path>& files) {
  constexpr std::string_view kPlanSuffix = ".xnnpack.json";
  BackendFiles bf;
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    if (name.size() > kPlanSuffix.size() && name.ends_with(kPlanSuffix)) bf.plan = f;
    else if (f.extension() == ".tflite") bf.model = f;
  }
  if (bf.model.empty() && !bf.plan.empty()) {
    const std::string name = bf.plan.filename().string();
    bf.model = bf.plan.parent_path() / (name.substr(0, name.size() - kPlanSuffix.size()) + ".tflite");
  }
  if (bf.plan.empty() && !bf.model.empty()) bf.plan = bf.model.parent_path() / (bf.model.stem().string() + ".xnnpack.json");
  if (bf.model.empty())
    throw Error(fmt::format("{} needs the files written by its convert step (<name>.tflite and <name>.xnnpack.json)", kName));
  return bf;
}

BackendInfo backend_info() {
  BackendInfo info;
  info.name = kName;
  info.customized = false;
  info.params = backend_params();
  info.create = [](const Json& config) -> std::unique_ptr<Backend> { return std::make_unique<XnnpackBackend>(config); };
  info.warm_profiling = backends::warm_caches;
  return info;
}

}  // namespace nnmeter::xnnpack
