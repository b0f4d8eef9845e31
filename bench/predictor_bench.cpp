// Regressor benchmark on the synthetic conv-like dataset (tests/regressors/synthetic_conv.h): random
// forest vs gradient boosting, log vs raw target, against the number of training samples. Accuracy is
// measured on the internal 20 % split and on a separate fresh set of 2000 configs.
// Usage: predictor_bench [threads]
#include <chrono>
#include <cstdio>
#include <string>

#include "nnmeter/predictor_folder.h"
#include "regressors/synthetic_conv.h"

using namespace nnmeter;

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::stoi(argv[1]) : 2;
  const KernelDataset fresh = test::synthetic_conv_dataset(2000, 2);
  std::printf("| samples | regressor | target | split acc10 | fresh acc10 | fresh acc5 | fresh rmspe %% | train s | model MB |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (size_t n : {100, 300, 1000, 2000}) {
    const KernelDataset data = test::synthetic_conv_dataset(n, 1);
    for (bool gbdt : {false, true}) {
      for (const std::string target : {"log+power", "log", "raw"}) {
        RegressorParams p = gbdt ? default_gbdt_params() : default_regressor_params("conv-bn-relu", "onednn_cpu");
        p.log_target = target != "raw";
        p.power_law_baseline = target == "log+power";
        p.threads = threads;
        const auto t0 = std::chrono::steady_clock::now();
        TrainResult r = train_kernel_predictor(data, p, 0.1);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const LatencyMetrics m = latency_metrics(r.model.predict(fresh.features), fresh.labels);
        const fs::path tmp = fs::temp_directory_path() / "predictor_bench_model.json";
        r.model.save(tmp);
        const double mb = static_cast<double>(fs::file_size(tmp)) / 1e6;
        fs::remove(tmp);
        std::printf("| %zu | %s | %s | %.3f | %.3f | %.3f | %.2f | %.2f | %.1f |\n", n, gbdt ? "gbdt" : "rf",
                    target.c_str(), r.metrics->acc10, m.acc10, m.acc5, m.rmspe, secs, mb);
        std::fflush(stdout);
      }
    }
  }
}
