// Where does a model-level prediction miss? Splits the error of one model into
//   predictor error   = Σ predicted kernels − Σ measured kernels  (what a perfect kernel predictor removes)
//   composition error = Σ measured kernels − measured model       (what summing isolated kernels misses)
// Every kernel the predictor detects is built as the builder's kernel model (same generator, same config),
// profiled on onednn_cpu like a builder sample, and compared with its prediction.
//
//   prediction_oracle MODEL.onnx PREDICTOR_FOLDER [CONFIG_JSON]
//
// CONFIG_JSON: onednn_cpu parameters (default 1 thread, 5 rounds). Prints a markdown table per kernel and
// the totals.
#include <fmt/format.h>

#include <iostream>
#include <map>

#include "common/io.h"
#include "nnmeter/backend.h"
#include "nnmeter/kernel.h"
#include "nnmeter/prediction.h"
#include "nnmeter/registry.h"

using namespace nnmeter;

namespace {

class KernelMeter {
 public:
  explicit KernelMeter(const Json& user_config) {
    const Registry registry;
    const BackendInfo info = find_backend(registry, "onednn_cpu");
    Json config = Json{{"NUM_THREADS", 1}, {"NUM_ROUNDS", 5}};
    config.update(user_config);
    backend_ = info.create(resolve_backend_config(info.params, config, "oracle config"));
    fs::create_directories(work_);
  }
  ~KernelMeter() { fs::remove_all(work_); }

  double model_ms(const fs::path& onnx) { return profile(onnx); }

  // One group of the kernel, measured once per distinct (kernel, config).
  double kernel_ms(const std::string& kernel, const KernelConfig& config) {
    const std::string key = kernel + config.dump();
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const Registry registry;
    const KernelSuite suite = find_kernel(registry, kernel).create(Json::object());
    const fs::path file = work_ / "kernel.onnx";
    io::write_file_atomic(file, suite.kernel->build_onnx(config, 1));
    return cache_[key] = profile(file);
  }

 private:
  double profile(const fs::path& onnx) {
    const fs::path dir = work_ / "converted";
    fs::remove_all(dir);
    fs::create_directories(dir);
    return backend_->profile(backend_->to_backend(onnx, dir, "")).median;
  }

  std::unique_ptr<Backend> backend_;
  fs::path work_ = fs::temp_directory_path() / fmt::format("prediction_oracle_{}", ::getpid());
  std::map<std::string, double> cache_;
};

int run(const fs::path& model, const fs::path& folder, const Json& config) {
  const ModelPrediction p = LatencyPredictor::from_folder(folder).predict_file(model);
  KernelMeter meter(config);
  const double network = meter.model_ms(model);

  struct Share {
    double predicted = 0, measured = 0;
    int count = 0;
  };
  std::map<std::string, Share> by_kernel;
  double predicted = 0, measured = 0;
  fmt::print("| kernel | predictor | config | groups | predicted ms | measured ms | error % |\n|---|---|---|---|---|---|---|\n");
  for (const KernelPrediction& k : p.kernels) {
    if (k.predictor_kernel.empty()) continue;
    const double m = meter.kernel_ms(k.predictor_kernel, k.config) * static_cast<double>(k.groups);
    fmt::print("| {} | {} | {} | {} | {:.4f} | {:.4f} | {:+.1f} |\n", k.name, k.predictor_kernel, k.config.dump(), k.groups,
               k.latency_ms, m, 100 * (k.latency_ms / m - 1));
    std::fflush(stdout);
    Share& s = by_kernel[k.predictor_kernel];
    s.predicted += k.latency_ms;
    s.measured += m;
    ++s.count;
    predicted += k.latency_ms;
    measured += m;
  }
  fmt::print("\n| predictor kernel | kernels | predicted ms | measured ms | error % |\n|---|---|---|---|---|\n");
  for (const auto& [name, s] : by_kernel)
    fmt::print("| {} | {} | {:.3f} | {:.3f} | {:+.1f} |\n", name, s.count, s.predicted, s.measured,
               100 * (s.predicted / s.measured - 1));
  fmt::print("\n**{}**: model measured {:.3f} ms; kernels measured {:.3f} ms ({:+.1f} % vs model: composition); "
             "kernels predicted {:.3f} ms ({:+.1f} % vs kernels measured: predictors); prediction {:+.1f} % vs model\n",
             model.filename().string(), network, measured, 100 * (measured / network - 1), predicted,
             100 * (predicted / measured - 1), 100 * (predicted / network - 1));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc != 3 && argc != 4) {
      std::cerr << "usage: prediction_oracle MODEL.onnx PREDICTOR_FOLDER [CONFIG_JSON]\n";
      return 2;
    }
    return run(argv[1], argv[2], argc == 4 ? Json::parse(argv[3]) : Json::object());
  } catch (const std::exception& e) {
    std::cerr << "prediction_oracle: " << e.what() << "\n";
    return 1;
  }
}
