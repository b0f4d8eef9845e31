#include "backends/xnnpack/xnnpack_backend.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "backends/tflite/tflite_export.h"
#include "common/io.h"

namespace nnmeter::xnnpack {

namespace {

constexpr const char* kName = "xnnpack_cpu";
constexpr backends::InProcessFormat kFormat{
    .backend = kName, .model_ext = ".tflite", .plan_suffix = ".xnnpack.json", .plan_format = "nnmeter-xnnpack-plan",
    .plan_version = 1};

EngineOptions engine_options(const Json& config) { return EngineOptions{config.value("NUM_THREADS", 1)}; }

class XnnpackBackend : public backends::InProcessBackend {
 public:
  explicit XnnpackBackend(const Json& config) : InProcessBackend(kFormat, config), options_(engine_options(config)) {}

  std::string get_version() const override { return xnnpack_version(); }

  std::string test_connection() override {
    return fmt::format("{}: XNNPACK {} in-process, {} threads of {} CPUs", kName, xnnpack_version(), options_.threads,
                       std::thread::hardware_concurrency());
  }

  std::vector<fs::path> to_backend(const fs::path& onnx_path, const fs::path& work_dir, const std::string& file_name) override {
    const backends::BackendFiles out = converted_files(work_dir, converted_stem(onnx_path, file_name));
    const std::string tflite = tflite::export_tflite(onnx_path, kName);
    Engine engine(tflite, out.model.filename().string(), options_);  // lowering proves every op runs
    Json plan = engine.plan();
    stamp_plan(plan, onnx_path, out.model, engine);
    auto written = write_converted(out, tflite, plan);
    spdlog::debug("{}: {} -> {} ({} operators)", kName, onnx_path.string(), out.model.string(), plan["operators"].get<int>());
    return written;
  }

  // Every step of the plan is one XNNPACK operator (or our transpose) with its fused activation and pads.
  std::optional<int> kernel_count(const std::vector<fs::path>& files) override {
    const auto plan = read_plan(files);
    if (!plan || plan->value("format", "") != kFormat.plan_format || !plan->contains("operators") ||
        !(*plan)["operators"].is_number_integer())
      return std::nullopt;
    return (*plan)["operators"].get<int>();
  }

 private:
  std::unique_ptr<backends::InProcessEngine> load_engine(const backends::BackendFiles& files) const override {
    if (!fs::exists(files.model))
      throw Error(fmt::format("{}: {} does not exist; convert the model first", kName, files.model.string()));
    return std::make_unique<Engine>(io::read_file(files.model), files.model.filename().string(), options_);
  }

  EngineOptions options_;
};

}  // namespace

const std::vector<BackendParam>& backend_params() {
  static const std::vector<BackendParam> params = backends::in_process_params(
      "Threads XNNPACK runs on (a pthreadpool; 1 runs on the calling thread, as nn-Meter profiles); with more than "
      "one, PIN_CPU pins the calling thread only");
  return params;
}

BackendInfo backend_info() { return backends::in_process_info<XnnpackBackend>(kName, backend_params()); }

}  // namespace nnmeter::xnnpack
