#include "backends/tflite/tflite_backend.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "backends/tflite/adb.h"
#include "backends/tflite/benchmark_output.h"
#include "backends/tflite/tflite_export.h"
#include "common/io.h"

namespace nnmeter::tflite {

namespace {

const char* backend_name(bool gpu) { return gpu ? "tflite_gpu" : "tflite_cpu"; }

Adb make_adb(const Json& config, bool gpu) {
  Adb::Options o;
  o.program = config.value("ADB", std::string("adb"));
  o.serial = config.value("DEVICE_SERIAL", std::string());
  o.timeout_s = config.value("TIMEOUT_S", 300.0);
  o.dry_run = config.value("DRY_RUN", false);
  o.who = backend_name(gpu);
  return Adb(o);
}

// A missing or unusable binary is reported by the device's shell, whatever adb's exit status says (adb
// before 7.0 does not forward it): "sh: /data/local/tmp/benchmark_model: not found", "... inaccessible or
// not found", "... Permission denied", "... No such file or directory".
bool binary_missing(const std::string& output, const std::string& binary) {
  for (const char* phrase : {"not found", "No such file or directory", "Permission denied", "can't execute"}) {
    size_t at = output.find(phrase);
    while (at != std::string::npos) {
      const size_t line_start = output.rfind('\n', at);
      const std::string line = output.substr(line_start == std::string::npos ? 0 : line_start + 1, at - line_start);
      if (line.find(binary) != std::string::npos) return true;
      at = output.find(phrase, at + 1);
    }
  }
  return false;
}

class TfliteBackend : public Backend {
 public:
  TfliteBackend(Json config, bool gpu) : config_(std::move(config)), gpu_(gpu), adb_(make_adb(config_, gpu)) {}

  std::string name() const override { return backend_name(gpu_); }
  // The host side: the device is checked by test_connection (a phone may be plugged in later).
  bool is_available() const override { return find_executable(adb_.options().program).has_value(); }
  std::string get_version() const override {
    Adb adb = adb_;
    return "adb " + adb.version();
  }

  std::string test_connection() override {
    const std::string model = adb_.getprop("ro.product.model");
    const std::string release = adb_.getprop("ro.build.version.release");
    const std::string binary = config_.value("BENCHMARK_MODEL_PATH", std::string());
    const CommandResult ls = adb_.shell({"ls", binary}, adb_.options().timeout_s);
    if (adb_.dry_run()) return fmt::format("{}: dry run, nothing was run", name());
    if (binary_missing(ls.output, binary) || !ls.ok())
      throw Error(missing_binary_message(binary));
    if (model.empty()) throw Error(fmt::format("{}: the device answered no ro.product.model; is it an Android device?", name()));
    const std::string serial = config_.value("DEVICE_SERIAL", std::string());
    return fmt::format("{}: device {}{}, Android {}; benchmark_model at {}", name(), model,
                       serial.empty() ? "" : " (" + serial + ")", release.empty() ? "unknown" : release, binary);
  }

  std::vector<fs::path> to_backend(const fs::path& onnx_path, const fs::path& work_dir,
                                   const std::string& file_name) override {
    const std::string stem = converted_stem(onnx_path, file_name);
    const std::string bytes = export_tflite(onnx_path, name());  // throws before anything is written
    const fs::path out = work_dir / (stem + ".tflite");
    io::write_file_atomic(out, bytes);
    spdlog::debug("{}: {} -> {}", name(), onnx_path.string(), out.string());
    return {out};
  }

  std::unique_ptr<BackendWrapper> build_wrapper(const std::vector<fs::path>&) override {
    throw Error(fmt::format("{} runs models only on the device, through benchmark_model: it has no inference wrapper "
                            "(use `nn-meter backend {} profile`)",
                            name(), name()));
  }

  LatencyStats profile(const std::vector<fs::path>& files) override {
    const fs::path model = tflite_file(files);
    const std::string remote_dir = config_.value("REMOTE_MODEL_DIR", std::string());
    const std::string remote = (remote_dir.empty() || remote_dir.ends_with("/") ? remote_dir : remote_dir + "/") +
                               model.filename().string();
    adb_.run({"push", model.string(), remote});
    CommandResult r;
    try {
      r = adb_.shell(benchmark_command(config_, remote, gpu_), config_.value("TIMEOUT_S", 300.0));
    } catch (...) {
      remove_remote(remote);
      throw;
    }
    remove_remote(remote);
    if (adb_.dry_run()) return {};  // nothing measured: a profiling run records a lost sample, never a value
    const std::string binary = config_.value("BENCHMARK_MODEL_PATH", std::string());
    if (binary_missing(r.output, binary)) throw Error(missing_binary_message(binary));
    try {
      const BenchmarkModelReport report = parse_benchmark_model_output(r.output);
      spdlog::debug("{}: {} ({} runs{}{})", name(), report.stats_line, report.stats.count,
                    report.init_ms ? fmt::format(", init {:.3f} ms", *report.init_ms) : "",
                    report.memory_overall_mb ? fmt::format(", memory {:.2f} MB", *report.memory_overall_mb) : "");
      return report.stats;
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {} ({} on the device, exit code {})", name(), e.what(), model.filename().string(),
                              r.exit_code));
    }
  }

 private:
  std::string missing_binary_message(const std::string& binary) const {
    return fmt::format("{}: benchmark_model is not on the device at {} (BENCHMARK_MODEL_PATH): push it with `adb push "
                       "benchmark_model {}` and `adb shell chmod +x {}`",
                       name(), binary, binary, binary);
  }

  // Best effort: a file left behind costs device storage, not a wrong result, so its failure is a warning.
  void remove_remote(const std::string& remote) {
    try {
      adb_.run({"shell", "rm", shell_quote(remote)});
    } catch (const Error& e) {
      spdlog::warn("{}", e.what());
    }
  }

  fs::path tflite_file(const std::vector<fs::path>& files) const {
    for (const auto& f : files)
      if (f.extension() == ".tflite") {
        if (!fs::is_regular_file(f)) throw Error(fmt::format("{}: model file {} does not exist", name(), f.string()));
        return f;
      }
    throw Error(fmt::format("{} profiles .tflite files (written by its convert step); got none", name()));
  }

  Json config_;
  bool gpu_;
  Adb adb_;
};

}  // namespace

std::vector<std::string> benchmark_command(const Json& config, const std::string& remote_model, bool gpu) {
  std::vector<std::string> words;
  const std::string taskset = config.value("TASKSET", std::string());
  if (!taskset.empty()) words.insert(words.end(), {"taskset", taskset});
  words.push_back(config.value("BENCHMARK_MODEL_PATH", std::string("/data/local/tmp/benchmark_model")));
  words.push_back("--graph=" + remote_model);
  words.push_back(fmt::format("--num_threads={}", config.value("NUM_THREADS", 1)));
  words.push_back(fmt::format("--num_runs={}", config.value("NUM_RUNS", 50)));
  words.push_back(fmt::format("--warmup_runs={}", config.value("WARMUP_RUNS", 10)));
  const std::string kernel_path = config.value("KERNEL_PATH", std::string());
  if (!kernel_path.empty()) words.push_back("--kernel_path=" + kernel_path);
  if (!config.value("USE_XNNPACK", true)) words.push_back("--use_xnnpack=false");
  if (gpu) words.push_back("--use_gpu=true");
  return words;
}

const std::vector<BackendParam>& backend_params(bool gpu) {
  using T = BackendParam::Type;
  static const auto make = [](bool for_gpu) {
    std::vector<BackendParam> params = {
        backend_param("REMOTE_MODEL_DIR", T::String, "/mnt/sdcard/tflite_bench", "Folder on the device the model is pushed to"),
        backend_param("BENCHMARK_MODEL_PATH", T::String, "/data/local/tmp/benchmark_model", "TFLite's benchmark_model binary on the device"),
        backend_param("DEVICE_SERIAL", T::String, "", "adb serial of the device (empty: adb's only device)"),
        backend_param("KERNEL_PATH", T::String, "",
         "Passed as --kernel_path= (the OpenCL kernel folder of nn-Meter's modified GPU binaries; empty: not passed)"),
        backend_param("NUM_THREADS", T::Int, 1, "benchmark_model --num_threads", 1, 64),
        backend_param("NUM_RUNS", T::Int, 50, "benchmark_model --num_runs (it may run more to last its --min_secs)", 1, 1e6),
        backend_param("WARMUP_RUNS", T::Int, 10, "benchmark_model --warmup_runs", 0, 1e6),
        backend_param("TASKSET", T::String, "",
         "CPU mask the run is pinned to with the device's taskset, e.g. 70 for cores 4-6 as nn-Meter does on big "
         "cores (empty: not pinned)"),
        backend_param("USE_XNNPACK", T::Bool, true, "false passes --use_xnnpack=false (TFLite's own CPU kernels, nn-Meter's close_xnnpack)"),
        backend_param("ADB", T::String, "adb", "The adb program on this machine (a name on PATH or a path)"),
        backend_param("TIMEOUT_S", T::Float, 300.0, "Seconds one adb command (push, the benchmark run, rm) may take", 1, 86400),
        backend_param("DRY_RUN", T::Bool, false, "Print the adb commands instead of running them (nothing is measured)")};
    if (for_gpu) params[4].help += " (CPU threads next to the GPU delegate)";
    return params;
  };
  static const std::vector<BackendParam> cpu = make(false), gpu_params = make(true);
  return gpu ? gpu_params : cpu;
}

BackendInfo backend_info(bool gpu) {
  BackendInfo info;
  info.name = backend_name(gpu);
  info.params = backend_params(gpu);
  info.remote_device = true;
  info.create = [gpu](const Json& config) -> std::unique_ptr<Backend> { return std::make_unique<TfliteBackend>(config, gpu); };
  return info;
}

}  // namespace nnmeter::tflite
