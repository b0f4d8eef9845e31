#include "backends/onednn/onednn_backend.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "common/io.h"

namespace nnmeter::onednn {

namespace {

constexpr backends::InProcessFormat kFormat{
    .backend = "onednn_cpu", .model_ext = ".onnx", .plan_suffix = ".plan.json", .plan_format = "nnmeter-onednn-plan",
    .plan_version = 1};

// The edge reorders a profiling plan leaves out, as {"edge", "tensor", "impl"} entries.
Json excluded_summary(const Json& profiling_plan) {
  Json out = Json::array();
  for (const auto& s : profiling_plan.value("excluded_edge_reorders", Json::array()))
    out.push_back({{"edge", s.value("edge", "")}, {"tensor", s.value("tensor", "")}, {"impl", s.value("impl", "")}});
  return out;
}

class OneDnnBackend : public backends::InProcessBackend {
 public:
  explicit OneDnnBackend(const Json& config) : InProcessBackend(kFormat, config), options_(engine_options(config)) {
    // The ISA cap must precede every primitive of the process; a backend is the first to create any.
    set_isa_cap(config.value("ISA", ""));
  }

  std::string get_version() const override { return dnnl_version(); }

  std::string test_connection() override {
    return fmt::format("onednn_cpu: oneDNN {} in-process, ISA {}, {} threads of {} CPUs", dnnl_version(), effective_isa(),
                       options_.threads, std::thread::hardware_concurrency());
  }

  std::vector<fs::path> to_backend(const fs::path& onnx_path, const fs::path& work_dir,
                                   const std::string& file_name) override {
    const backends::BackendFiles out = converted_files(work_dir, converted_stem(onnx_path, file_name));
    Graph graph = load_graph(onnx_path);
    const std::string folded = folded_model(graph).SerializeAsString();
    Engine engine(std::move(graph), options_);  // compiling proves every node is supported
    Json plan = engine.plan();
    stamp_plan(plan, onnx_path, out.model, engine);
    // What profile() times: the same steps without the reorders at the model's edges.
    const Json timed = engine.plan(Pipeline::Profiling);
    plan["profiling"] = {{"primitives", timed["primitives"]},
                         {"reorders", timed["reorders"]},
                         {"excluded_edge_reorders", excluded_summary(timed)}};
    auto written = write_converted(out, folded, plan);
    spdlog::debug("onednn_cpu: {} -> {} ({} primitives, {} reorders)", onnx_path.string(), out.model.string(),
                  plan["primitives"].get<int>(), plan["reorders"].get<int>());
    return written;
  }

  // The plan written at conversion lists what a timed run executes; every step that is not a reorder is
  // one primitive, with whatever ops were fused into it as post-ops.
  std::optional<int> kernel_count(const std::vector<fs::path>& files) override {
    const auto plan = read_plan(files);
    if (!plan) return std::nullopt;
    const Json timed = plan->value("profiling", Json::object());
    if (!timed.contains("primitives") || !timed.contains("reorders")) return std::nullopt;
    return timed["primitives"].get<int>() - timed["reorders"].get<int>();
  }

  LatencyStats profile(const std::vector<fs::path>& files) override {
    const auto engine = load(find_files(files));
    const Json timed = engine->plan(Pipeline::Profiling);
    spdlog::debug("onednn_cpu: timing {} primitives ({} reorders); edge reorders excluded: {}",
                  timed["primitives"].get<int>(), timed["reorders"].get<int>(), excluded_summary(timed).dump());
    return measure_engine(*engine);
  }

 private:
  std::unique_ptr<backends::InProcessEngine> load_engine(const backends::BackendFiles& files) const override {
    return load(files);
  }

  std::unique_ptr<Engine> load(const backends::BackendFiles& files) const {
    const Json plan = io::load_json_file(files.plan);
    if (plan.value("format", "") != kFormat.plan_format || plan.value("version", 0) != kFormat.plan_version)
      throw Error(fmt::format("{} is not an onednn_cpu plan of version {}; convert the model again", files.plan.string(),
                              kFormat.plan_version));
    return std::make_unique<Engine>(load_graph(files.model), options_);
  }

  EngineOptions options_;
};

}  // namespace

const std::vector<BackendParam>& backend_params() {
  static const std::vector<BackendParam> params = backends::in_process_params(
      "Threads oneDNN runs on; nn-Meter profiles on 1",
      {backend_param("ISA", BackendParam::Type::String, "",
                     "Highest instruction set oneDNN may use (AVX2, AVX512_CORE, ...; empty: all the CPU has), so one "
                     "machine can act as several devices")});
  return params;
}

EngineOptions engine_options(const Json& config) {
  EngineOptions o;
  o.threads = config.value("NUM_THREADS", 1);
  if (o.threads < 1) throw Error("onednn_cpu: NUM_THREADS must be at least 1");
  return o;
}

std::vector<Tensor> random_inputs(const Engine& engine, uint32_t seed) {
  return backends::random_inputs(engine.input_specs(), seed);
}

BackendInfo backend_info() { return backends::in_process_info<OneDnnBackend>(kFormat.backend, backend_params()); }

}  // namespace nnmeter::onednn
