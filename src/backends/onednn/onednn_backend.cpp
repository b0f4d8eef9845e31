#include "backends/onednn/onednn_backend.h"

#include <spdlog/spdlog.h>

#include <thread>

#include "common/io.h"

namespace nnmeter::onednn {

namespace {

constexpr const char* kPlanFormat = "nnmeter-onednn-plan";
constexpr int kPlanVersion = 1;

// The edge reorders a profiling plan leaves out, as {"edge", "tensor", "impl"} entries.
Json excluded_summary(const Json& profiling_plan) {
  Json out = Json::array();
  for (const auto& s : profiling_plan.value("excluded_edge_reorders", Json::array()))
    out.push_back({{"edge", s.value("edge", "")}, {"tensor", s.value("tensor", "")}, {"impl", s.value("impl", "")}});
  return out;
}

class Wrapper : public BackendWrapper {
 public:
  explicit Wrapper(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}
  std::vector<Tensor> forward(const std::vector<Tensor>& inputs) override { return engine_->forward(inputs); }

 private:
  std::unique_ptr<Engine> engine_;
};

std::unique_ptr<Engine> load_engine(const std::vector<fs::path>& files, const EngineOptions& options) {
  const auto bf = find_backend_files(files);
  const Json plan = io::load_json_file(bf.plan);
  if (plan.value("format", "") != kPlanFormat || plan.value("version", 0) != kPlanVersion)
    throw Error(fmt::format("{} is not an onednn_cpu plan of version {}; convert the model again", bf.plan.string(),
                            kPlanVersion));
  return std::make_unique<Engine>(load_graph(bf.model), options);
}

class OneDnnBackend : public Backend {
 public:
  // The config, already resolved against backend_params(), is read once here.
  explicit OneDnnBackend(const Json& config)
      : options_(engine_options(config)),
        measure_(backends::measure_settings(config, options_.threads)),
        cold_cache_(config.value("COLD_CACHE", true)) {
    // The ISA cap must precede every primitive of the process; a backend is the first to create any.
    set_isa_cap(config.value("ISA", ""));
  }

  std::string name() const override { return "onednn_cpu"; }
  bool is_available() const override { return true; }
  std::string get_version() const override { return dnnl_version(); }

  std::string test_connection() override {
    return fmt::format("onednn_cpu: oneDNN {} in-process, ISA {}, {} threads of {} CPUs", dnnl_version(), effective_isa(),
                       options_.threads, std::thread::hardware_concurrency());
  }

  std::vector<fs::path> to_backend(const fs::path& onnx_path, const fs::path& work_dir,
                                   const std::string& file_name) override {
    const std::string stem = converted_stem(onnx_path, file_name);
    Graph graph = load_graph(onnx_path);
    const std::string folded = folded_model(graph).SerializeAsString();
    Engine engine(std::move(graph), options_);  // compiling proves every node is supported
    Json plan = engine.plan();
    plan["format"] = kPlanFormat;
    plan["version"] = kPlanVersion;
    plan["source"] = fs::absolute(onnx_path).string();
    plan["model"] = stem + ".onnx";
    // What profile() times: the same steps without the reorders at the model's edges.
    const Json timed = engine.plan(Pipeline::Profiling);
    plan["profiling"] = {{"primitives", timed["primitives"]},
                         {"reorders", timed["reorders"]},
                         {"excluded_edge_reorders", excluded_summary(timed)}};
    Json inputs = Json::object();
    for (const auto& [name, shape] : engine.input_specs()) inputs[name] = shape;
    plan["inputs"] = inputs;
    const fs::path model = work_dir / (stem + ".onnx");
    const fs::path plan_path = work_dir / (stem + ".plan.json");
    io::write_file_atomic(model, folded);
    io::save_json_file(plan_path, plan);
    spdlog::debug("onednn_cpu: {} -> {} ({} primitives, {} reorders)", onnx_path.string(), model.string(),
                  plan["primitives"].get<int>(), plan["reorders"].get<int>());
    return {model, plan_path};
  }

  std::unique_ptr<BackendWrapper> build_wrapper(const std::vector<fs::path>& files) override {
    return std::make_unique<Wrapper>(load_engine(files, options_));
  }

  // The plan written at conversion lists what a timed run executes; every step that is not a reorder is
  // one primitive, with whatever ops were fused into it as post-ops.
  std::optional<int> kernel_count(const std::vector<fs::path>& files) override {
    const BackendFiles bf = find_backend_files(files);
    if (bf.plan.empty() || !fs::exists(bf.plan)) return std::nullopt;
    const Json timed = io::load_json_file(bf.plan).value("profiling", Json::object());
    if (!timed.contains("primitives") || !timed.contains("reorders")) return std::nullopt;
    return timed["primitives"].get<int>() - timed["reorders"].get<int>();
  }

  LatencyStats profile(const std::vector<fs::path>& files) override {
    auto engine = load_engine(files, options_);
    engine->set_inputs(random_inputs(*engine));
    // Inputs go into their consumers' layouts once, here; the timed pipeline leaves out the edge reorders
    // (docs/profiling.md), as a kernel inside a network never pays them.
    engine->prepare_profiling();
    const Json timed = engine->plan(Pipeline::Profiling);
    spdlog::debug("onednn_cpu: timing {} primitives ({} reorders); edge reorders excluded: {}",
                  timed["primitives"].get<int>(), timed["reorders"].get<int>(), excluded_summary(timed).dump());
    std::function<void()> start_cold;
    if (cold_cache_) start_cold = [&] { engine->start_cold(Pipeline::Profiling, measure_.cold_fill_bytes); };
    const auto m = backends::measure([&] { engine->execute(Pipeline::Profiling); },
                                      measure_, start_cold);
    spdlog::debug("onednn_cpu: {} rounds, {} runs, per-run CV {:.1f}%, {} rounds re-measured", m.stats.count,
                  m.run_samples_ms.size(), 100 * m.run_cv, m.discarded_rounds);
    return m.stats;
  }

 private:
  EngineOptions options_;
  backends::MeasureSettings measure_;
  bool cold_cache_;
};

}  // namespace

const std::vector<BackendParam>& backend_params() {
  using T = BackendParam::Type;
  static const std::vector<BackendParam> params = [] {
    std::vector<BackendParam> p = {
        backend_param("NUM_THREADS", T::Int, 1, "Threads oneDNN runs on; nn-Meter profiles on 1", 1, 1024),
        backend_param("ISA", T::String, "",
                      "Highest instruction set oneDNN may use (AVX2, AVX512_CORE, ...; empty: all the CPU has), so one "
                      "machine can act as several devices")};
    for (auto& m : backends::measurement_params()) p.push_back(std::move(m));
    return p;
  }();
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

BackendFiles find_backend_files(const std::vector<fs::path>& files) {
  BackendFiles bf;
  for (const auto& f : files) {
    const auto name = f.filename().string();
    if (name.size() > 10 && name.ends_with(".plan.json")) bf.plan = f;
    else if (f.extension() == ".onnx") bf.model = f;
  }
  if (bf.model.empty() && !bf.plan.empty()) {
    const auto name = bf.plan.filename().string();
    bf.model = bf.plan.parent_path() / (name.substr(0, name.size() - 10) + ".onnx");
  }
  if (bf.plan.empty() && !bf.model.empty()) bf.plan = bf.model.parent_path() / (bf.model.stem().string() + ".plan.json");
  if (bf.model.empty())
    throw Error("onednn_cpu needs the files written by its convert step (<name>.onnx and <name>.plan.json)");
  return bf;
}

BackendInfo backend_info() {
  BackendInfo info;
  info.name = "onednn_cpu";
  info.customized = false;
  info.params = backend_params();
  info.create = [](const Json& config) -> std::unique_ptr<Backend> { return std::make_unique<OneDnnBackend>(config); };
  info.warm_profiling = backends::warm_caches;
  return info;
}

}  // namespace nnmeter::onednn
