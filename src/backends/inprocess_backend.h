// The builtin backends that run a model inside this process (onednn_cpu, xnnpack_cpu) share everything but
// their engine, their conversion and their version strings: the engine interface, the two files the convert
// step writes, the fields stamped into the plan, the profiling loop, the parameters and the registry entry.
// Each backend's own part stays in its folder (backends/onednn/onednn_backend.cpp,
// backends/xnnpack/xnnpack_backend.cpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/measure.h"
#include "nnmeter/backend.h"

namespace nnmeter::backends {

// A model compiled for one in-process engine. The engine is its own BackendWrapper: forward() takes and
// returns plain ONNX-layout tensors.
class InProcessEngine : public BackendWrapper {
 public:
  // Named inputs in ONNX's layout, copied into the engine's buffers; throws Error on a missing, unknown or
  // mis-shaped input.
  virtual void set_inputs(const std::vector<Tensor>& inputs) = 0;
  // Inputs the model reads at run time, with their ONNX shapes.
  virtual std::vector<std::pair<std::string, Shape>> input_specs() const = 0;
  // Untimed, after set_inputs(): work the first timed run would otherwise pay once.
  virtual void prepare_profiling() {}
  // The one call the profiler times.
  virtual void execute_profiled() = 0;
  // Untimed, before each cold timed run (COLD_CACHE): leaves the caches as a layer inside a network finds
  // them, with `fill_bytes` of scratch written in between (backends::fill_caches_with_scratch).
  virtual void start_cold_profiled(size_t fill_bytes) = 0;
};

// What tells one in-process backend's converted files apart: `<name><model_ext>`, the model its engine
// loads, and `<name><plan_suffix>` beside it, the compiled plan, whose "format" and "version" fields name
// the backend that wrote it.
struct InProcessFormat {
  std::string_view backend;  // the registry name, which messages start with
  std::string_view model_ext;
  std::string_view plan_suffix;
  std::string_view plan_format;
  int plan_version = 1;
};

struct BackendFiles {
  fs::path model, plan;
};
// The model and the plan among `files`; either one is enough, the other is taken to lie beside it. Throws
// Error when neither is there.
BackendFiles find_backend_files(const std::vector<fs::path>& files, const InProcessFormat& format);

// NUM_THREADS (`threads_help` says what the engine runs on them), then the backend's `own` parameters,
// then the measurement parameters (backends/measure.h), in the order the default config lists them.
std::vector<BackendParam> in_process_params(std::string threads_help, std::vector<BackendParam> own = {});

class InProcessBackend : public Backend {
 public:
  std::string name() const override { return std::string(format_.backend); }
  bool is_available() const override { return true; }
  std::unique_ptr<BackendWrapper> build_wrapper(const std::vector<fs::path>& files) override;
  // Times the engine's profiled run (InProcessEngine::execute_profiled) on fixed-seed random inputs.
  LatencyStats profile(const std::vector<fs::path>& files) override;

 protected:
  // `config` is already resolved against in_process_params(); it is read once, here.
  InProcessBackend(const InProcessFormat& format, const Json& config);

  // The engine of converted files, after whatever check of them the backend makes.
  virtual std::unique_ptr<InProcessEngine> load_engine(const BackendFiles& files) const = 0;

  BackendFiles find_files(const std::vector<fs::path>& files) const { return find_backend_files(files, format_); }
  // The files to_backend writes for `stem` in `work_dir`.
  BackendFiles converted_files(const fs::path& work_dir, const std::string& stem) const;
  // The fields every plan carries besides the engine's own: format and version (what a plan file is
  // checked by), the ONNX file it was converted from, the model file beside it, the runtime inputs.
  void stamp_plan(Json& plan, const fs::path& onnx_path, const fs::path& model, const InProcessEngine& engine) const;
  // Writes both files, each atomically; returns them in the order to_backend returns them.
  std::vector<fs::path> write_converted(const BackendFiles& out, std::string_view model, const Json& plan) const;
  // The plan written at conversion; nullopt when there is none.
  std::optional<Json> read_plan(const std::vector<fs::path>& files) const;
  // profile() past loading, for a backend that reports on the loaded engine first.
  LatencyStats measure_engine(InProcessEngine& engine) const;

 private:
  const InProcessFormat format_;
  MeasureSettings measure_;
  bool cold_cache_;
};

// The registry entry of the in-process backend `B`, built from its resolved config. Every in-process
// backend declares the measurement parameters, so warm_caches turns its caches warm.
template <class B>
BackendInfo in_process_info(std::string_view name, std::vector<BackendParam> params) {
  BackendInfo info;
  info.name = name;
  info.params = std::move(params);
  info.create = [](const Json& config) -> std::unique_ptr<Backend> { return std::make_unique<B>(config); };
  info.warm_profiling = warm_caches;
  return info;
}

}  // namespace nnmeter::backends
