#include "backends/openvino/openvino_backend.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <sstream>

#include "backends/openvino/benchmark_app_output.h"
#include "common/io.h"
#include "common/subprocess.h"
#include "onnx_io/builder.h"

namespace nnmeter::openvino {

namespace {

const char* backend_name(bool vpu) { return vpu ? "openvino_vpu" : "openvino_cpu"; }

class OpenvinoBackend : public Backend {
 public:
  OpenvinoBackend(Json config, bool vpu) : config_(std::move(config)), vpu_(vpu) {
    const std::string api = config_.value("API", std::string("sync"));
    if (api != "sync" && api != "async")
      throw Error(fmt::format("{}: API must be sync or async, got '{}'", name(), api));
    how_ = ToolRun{name(), "install OpenVINO's tools (pip install openvino-dev, or its archive) or set BENCHMARK_APP to its path",
                   config_.value("TIMEOUT_S", 300.0), config_.value("DRY_RUN", false)};
  }

  std::string name() const override { return backend_name(vpu_); }
  bool is_available() const override { return find_executable(program()).has_value(); }
  // benchmark_app has no --version; its report header names the build ("Build ..... 2023.0.0-...").
  std::string get_version() const override {
    const CommandResult r = run_command({program(), "-h"}, 60);
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) {
      if (line.find("Build") == std::string::npos) continue;
      std::istringstream words(line);
      std::string last;
      for (std::string w; words >> w;) last = w;
      if (!last.empty() && std::isdigit(static_cast<unsigned char>(last[0]))) return last;
    }
    return "Unknown";
  }

  // A model of one ReLU run once on the device: benchmark_app, the runtime and the device all answer.
  std::string test_connection() override {
    const fs::path dir = fs::temp_directory_path() / fmt::format("nn-meter-{}-probe-{}", name(), ::getpid());
    fs::create_directories(dir);
    const fs::path model = dir / "probe.onnx";
    onnx_io::GraphBuilder g("probe", 0);
    g.output(onnx_io::relu(g, g.input({1, 4, 8, 8})), {1, 4, 8, 8});
    io::write_file_atomic(model, g.finish_serialized());
    Json probe = config_;
    probe["NUM_RUNS"] = 1;
    CommandResult r;
    try {
      r = run_tool(benchmark_command(probe, model.string()), how_);
    } catch (...) {
      fs::remove_all(dir);
      throw;
    }
    fs::remove_all(dir);
    if (how_.dry_run) return fmt::format("{}: dry run, nothing was run", name());
    const BenchmarkAppReport report = parse(r);
    return fmt::format("{}: benchmark_app ran a test model on {} ({:.3f} ms)", name(), device(), report.stats.median);
  }

  std::vector<fs::path> to_backend(const fs::path& onnx_path, const fs::path& work_dir,
                                   const std::string& file_name) override {
    const std::string stem = converted_stem(onnx_path, file_name);
    const std::string bytes = io::read_file(onnx_path);
    onnx::ModelProto model;
    if (!model.ParseFromString(bytes) || !model.has_graph())
      throw Error(fmt::format("{}: {} is not an ONNX model", name(), onnx_path.string()));
    const fs::path out = work_dir / (stem + ".onnx");  // benchmark_app reads ONNX as it is
    io::write_file_atomic(out, bytes);
    return {out};
  }

  std::unique_ptr<BackendWrapper> build_wrapper(const std::vector<fs::path>&) override {
    throw Error(fmt::format("{} only measures, through benchmark_app: it has no inference wrapper (use `nn-meter backend "
                            "{} profile`)",
                            name(), name()));
  }

  LatencyStats profile(const std::vector<fs::path>& files) override {
    fs::path model;
    for (const auto& f : files)
      if (f.extension() == ".onnx") model = f;
    if (model.empty()) throw Error(fmt::format("{} profiles .onnx files (written by its convert step); got none", name()));
    const CommandResult r = run_tool(benchmark_command(config_, model.string()), how_);
    if (how_.dry_run) return {};  // nothing measured: a profiling run records a lost sample
    const BenchmarkAppReport report = parse(r);
    spdlog::debug("{}: {} iterations, median {:.4f} ms{}", name(), report.stats.count, report.stats.median,
                  report.throughput_fps ? fmt::format(", {:.2f} FPS", *report.throughput_fps) : "");
    return report.stats;
  }

 private:
  std::string program() const {
    const std::string p = config_.value("BENCHMARK_APP", std::string("benchmark_app"));
    return p.empty() ? "benchmark_app" : p;
  }
  std::string device() const { return config_.value("DEVICE", std::string(vpu_ ? "MYRIAD" : "CPU")); }

  BenchmarkAppReport parse(const CommandResult& r) const {
    try {
      BenchmarkAppReport report = parse_benchmark_app_output(r.output);
      if (!r.ok()) throw Error(fmt::format("exit code {} after its report: '{}'", r.exit_code, last_output_line(r.output)));
      return report;
    } catch (const Error& e) {
      throw Error(fmt::format("{} on {}: {}", name(), device(), e.what()));
    }
  }

  Json config_;
  bool vpu_;
  ToolRun how_;
};

}  // namespace

std::vector<std::string> benchmark_command(const Json& config, const std::string& model) {
  std::string program = config.value("BENCHMARK_APP", std::string("benchmark_app"));
  if (program.empty()) program = "benchmark_app";
  std::vector<std::string> argv = {program,
                                   "-m",
                                   model,
                                   "-d",
                                   config.value("DEVICE", std::string("CPU")),
                                   "-niter",
                                   std::to_string(config.value("NUM_RUNS", 50)),
                                   "-api",
                                   config.value("API", std::string("sync")),
                                   "-nireq",
                                   std::to_string(config.value("NIREQ", 1))};
  if (const int threads = config.value("NUM_THREADS", 0); threads > 0) argv.insert(argv.end(), {"-nthreads", std::to_string(threads)});
  if (const std::string p = config.value("DATA_TYPE", std::string()); !p.empty()) argv.insert(argv.end(), {"-infer_precision", p});
  return argv;
}

const std::vector<BackendParam>& backend_params(bool vpu) {
  using T = BackendParam::Type;
  static const auto make = [](bool for_vpu) {
    return std::vector<BackendParam>{
        backend_param("BENCHMARK_APP", T::String, "benchmark_app", "OpenVINO's benchmark_app on this machine (a name on PATH or a path)"),
        backend_param("DEVICE", T::String, for_vpu ? "MYRIAD" : "CPU", "benchmark_app -d: the OpenVINO device"),
        backend_param("DATA_TYPE", T::String, "",
          "benchmark_app -infer_precision, e.g. FP16 (empty: the device's default; MYRIAD computes in FP16 anyway)"),
        backend_param("NUM_RUNS", T::Int, 50, "benchmark_app -niter: timed iterations", 1, 1e6),
        backend_param("NUM_THREADS", T::Int, 0, "benchmark_app -nthreads (0: not passed, OpenVINO decides)", 0, 1024),
        backend_param("API", T::String, "sync", "benchmark_app -api: sync measures one inference at a time (async includes queueing)"),
        backend_param("NIREQ", T::Int, 1, "benchmark_app -nireq: inference requests in flight", 1, 1024),
        backend_param("TIMEOUT_S", T::Float, 300.0, "Seconds one benchmark_app run may take", 1, 86400),
        backend_param("DRY_RUN", T::Bool, false, "Print the benchmark_app command instead of running it (nothing is measured)")};
  };
  static const std::vector<BackendParam> cpu = make(false), vpu_params = make(true);
  return vpu ? vpu_params : cpu;
}

BackendInfo backend_info(bool vpu) {
  BackendInfo info;
  info.name = backend_name(vpu);
  info.params = backend_params(vpu);
  info.create = [vpu](const Json& config) -> std::unique_ptr<Backend> { return std::make_unique<OpenvinoBackend>(config, vpu); };
  return info;
}

}  // namespace nnmeter::openvino
