#include "backends/inprocess_backend.h"

#include <spdlog/spdlog.h>

#include "common/io.h"

namespace nnmeter::backends {

BackendFiles find_backend_files(const std::vector<fs::path>& files, const InProcessFormat& format) {
  const size_t suffix = format.plan_suffix.size();
  BackendFiles bf;
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    // A file named only the suffix has no stem to find its model by.
    if (name.size() > suffix && name.ends_with(format.plan_suffix)) bf.plan = f;
    else if (f.extension().string() == format.model_ext) bf.model = f;
  }
  if (bf.model.empty() && !bf.plan.empty()) {
    const std::string name = bf.plan.filename().string();
    bf.model = bf.plan.parent_path() / (name.substr(0, name.size() - suffix) + std::string(format.model_ext));
  }
  if (bf.plan.empty() && !bf.model.empty())
    bf.plan = bf.model.parent_path() / (bf.model.stem().string() + std::string(format.plan_suffix));
  if (bf.model.empty())
    throw Error(fmt::format("{} needs the files written by its convert step (<name>{} and <name>{})", format.backend,
                            format.model_ext, format.plan_suffix));
  return bf;
}

std::vector<BackendParam> in_process_params(std::string threads_help, std::vector<BackendParam> own) {
  std::vector<BackendParam> p = {
      backend_param("NUM_THREADS", BackendParam::Type::Int, 1, std::move(threads_help), 1, 1024)};
  for (auto& o : own) p.push_back(std::move(o));
  for (auto& m : measurement_params()) p.push_back(std::move(m));
  return p;
}

// The measuring threads are the engine's own: NUM_THREADS, which every engine runs on.
InProcessBackend::InProcessBackend(const InProcessFormat& format, const Json& config)
    : format_(format),
      measure_(measure_settings(config, config.value("NUM_THREADS", 1))),
      cold_cache_(config.value("COLD_CACHE", true)) {}

std::unique_ptr<BackendWrapper> InProcessBackend::build_wrapper(const std::vector<fs::path>& files) {
  return load_engine(find_files(files));
}

LatencyStats InProcessBackend::profile(const std::vector<fs::path>& files) {
  return measure_engine(*load_engine(find_files(files)));
}

BackendFiles InProcessBackend::converted_files(const fs::path& work_dir, const std::string& stem) const {
  return {work_dir / (stem + std::string(format_.model_ext)), work_dir / (stem + std::string(format_.plan_suffix))};
}

void InProcessBackend::stamp_plan(Json& plan, const fs::path& onnx_path, const fs::path& model,
                                  const InProcessEngine& engine) const {
  plan["format"] = format_.plan_format;
  plan["version"] = format_.plan_version;
  plan["source"] = fs::absolute(onnx_path).string();
  plan["model"] = model.filename().string();
  Json inputs = Json::object();
  for (const auto& [name, shape] : engine.input_specs()) inputs[name] = shape;
  plan["inputs"] = inputs;
}

std::vector<fs::path> InProcessBackend::write_converted(const BackendFiles& out, std::string_view model,
                                                        const Json& plan) const {
  io::write_file_atomic(out.model, model);
  io::save_json_file(out.plan, plan);
  return {out.model, out.plan};
}

std::optional<Json> InProcessBackend::read_plan(const std::vector<fs::path>& files) const {
  const BackendFiles bf = find_files(files);
  if (!fs::exists(bf.plan)) return std::nullopt;
  return io::load_json_file(bf.plan);
}

LatencyStats InProcessBackend::measure_engine(InProcessEngine& engine) const {
  engine.set_inputs(random_inputs(engine.input_specs()));
  engine.prepare_profiling();
  std::function<void()> start_cold;
  if (cold_cache_) start_cold = [&] { engine.start_cold_profiled(measure_.cold_fill_bytes); };
  const auto m = measure([&] { engine.execute_profiled(); }, measure_, start_cold);
  spdlog::debug("{}: {} rounds, {} runs, per-run CV {:.1f}%, {} rounds re-measured", format_.backend, m.stats.count,
                m.run_samples_ms.size(), 100 * m.run_cv, m.discarded_rounds);
  return m.stats;
}

}  // namespace nnmeter::backends
