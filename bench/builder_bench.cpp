// Kernel predictor accuracy against the number of profiled samples, measured on a separate set of freshly
// sampled and profiled configs (issue 5), for random forest and gradient boosting, with the time spent
// profiling and training; and one round of adaptive (fine-grained) sampling against the same number of
// plain prior samples.
//
//   builder_bench WORKSPACE KERNEL FRESH_N [SIZES]
//
// The training pool is the workspace's prior sample of KERNEL (`<kernel>_prior.json`, as `nn-meter build`
// left it; profiled now if missing). FRESH_N new configs are drawn from the same prior with another seed
// (mark "fresh") and profiled. SIZES: comma-separated training-set sizes (default 25,50,100,200,400,...
// up to the pool). Everything profiled stays in the workspace, so a rerun only retrains.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <iostream>

#include "cli/args.h"
#include "common/io.h"
#include "nnmeter/builder.h"
#include "nnmeter/kernel_data.h"
#include "nnmeter/registry.h"

using namespace nnmeter;

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

KernelDataset to_dataset(const std::string& kernel, const KernelData& data) {
  const Registry registry;
  const KernelSuite suite = find_kernel(registry, kernel).create(Json::object());
  const KernelDataTable table = get_data_by_profiled_results(kernel, *suite.parser, Json{{kernel, data}});
  KernelDataset out;
  out.features = table.features;
  out.labels = table.labels;
  for (const auto& id : table.ids) out.configs.push_back(data.at(id).value("config", Json::object()));
  return out;
}

KernelDataset first_rows(const KernelDataset& d, size_t n) {
  KernelDataset out;
  n = std::min(n, d.features.size());
  out.features.assign(d.features.begin(), d.features.begin() + static_cast<std::ptrdiff_t>(n));
  out.labels.assign(d.labels.begin(), d.labels.begin() + static_cast<std::ptrdiff_t>(n));
  out.configs.assign(d.configs.begin(), d.configs.begin() + static_cast<std::ptrdiff_t>(n));
  return out;
}

KernelDataset concat(KernelDataset a, const KernelDataset& b) {
  a.features.insert(a.features.end(), b.features.begin(), b.features.end());
  a.labels.insert(a.labels.end(), b.labels.begin(), b.labels.end());
  a.configs.insert(a.configs.end(), b.configs.begin(), b.configs.end());
  return a;
}

RegressorParams params_for(const std::string& kernel, RegressorMode mode) {
  return mode == RegressorMode::gbdt ? default_gbdt_params() : default_regressor_params(kernel, "onednn_cpu");
}

struct Evaluation {
  LatencyMetrics fresh;
  double train_s = 0;
};

// Fits on every row of `train` (the shipped predictor's final fit) and scores the fresh set.
Evaluation evaluate(const std::string& kernel, const KernelDataset& train, const KernelDataset& fresh, RegressorMode mode) {
  const auto t0 = Clock::now();
  const TrainResult r = train_kernel_predictor(train, params_for(kernel, mode), 0.1, TrainMode::final, kernel);
  Evaluation e;
  e.train_s = seconds_since(t0);
  e.fresh = latency_metrics(r.model.predict(fresh.features), fresh.labels);
  return e;
}

// Profiles (or reloads) a prior sample; returns the data and the seconds spent per sample when this
// program profiled it (recorded next to the results, so a rerun reports the first run's cost), NaN when
// it was already profiled by someone else (nn-meter build).
std::pair<KernelData, double> prior_sample(Builder& builder, const std::string& kernel, int n, const std::string& mark) {
  const fs::path results = builder.workspace().predictor_build_dir() / "results";
  const fs::path timing = results / fmt::format("bench_time_{}_{}.json", kernel, mark);
  const bool new_sample = !fs::exists(results / fmt::format("{}_{}.json", kernel, mark));
  const auto t0 = Clock::now();
  KernelData data = builder.sample_and_profile_kernel_data(kernel, n, SamplingMode::Prior, {}, mark);
  if (new_sample) io::save_json_file(timing, Json{{"seconds_per_sample", seconds_since(t0) / std::max(1, n)}});
  const double cost = fs::exists(timing) ? io::load_json_file(timing)["seconds_per_sample"].get<double>() : std::nan("");
  return {std::move(data), cost};
}

std::vector<size_t> default_sizes(size_t pool) {
  std::vector<size_t> sizes;
  for (size_t n = 25; n < pool; n *= 2) sizes.push_back(n);
  sizes.push_back(pool);
  return sizes;
}

int run(const fs::path& ws, const std::string& kernel, int fresh_n, std::vector<size_t> sizes) {
  BuilderSettings settings;
  settings.backend = "onednn_cpu";
  Builder builder(Workspace::load(ws), Registry(), settings);
  const Json& ks = builder.workspace().predictorbuild_config["KERNELS"][kernel];
  const int pool_n = ks.value("INIT_SAMPLE_NUM", 100);
  const int finegrained_n = ks.value("FINEGRAINED_SAMPLE_NUM", 5);

  const auto [pool_data, pool_cost] = prior_sample(builder, kernel, pool_n, "prior");
  const auto [fresh_data, fresh_cost] = prior_sample(builder, kernel, fresh_n, "fresh");
  const KernelDataset pool = to_dataset(kernel, pool_data), fresh = to_dataset(kernel, fresh_data);
  if (sizes.empty()) sizes = default_sizes(pool.features.size());

  fmt::print("### {}: {} pool samples, {} fresh test samples (profiling {:.2f} / {:.2f} s per sample)\n\n", kernel,
             pool.features.size(), fresh.features.size(), pool_cost, fresh_cost);
  fmt::print("| samples | regressor | fresh ±10 % | fresh ±5 % | fresh RMSPE % | train s |\n|---|---|---|---|---|---|\n");
  for (size_t n : sizes) {
    if (n > pool.features.size()) continue;
    for (RegressorMode mode : {RegressorMode::random_forest, RegressorMode::gbdt}) {
      const Evaluation e = evaluate(kernel, first_rows(pool, n), fresh, mode);
      fmt::print("| {} | {} | {:.1f} % | {:.1f} % | {:.2f} | {:.2f} |\n", n, to_string(mode), 100 * e.fresh.acc10,
                 100 * e.fresh.acc5, e.fresh.rmspe, e.train_s);
      std::fflush(stdout);
    }
  }

  // Adaptive sampling: half the pool, then one fine-grained round around its held-out errors, against the
  // same number of prior samples.
  const size_t half = pool.features.size() / 2;
  const KernelDataset initial = first_rows(pool, half);
  const TrainResult split = train_kernel_predictor(initial, params_for(kernel, RegressorMode::random_forest), 0.1,
                                                   TrainMode::split, kernel);
  if (split.error_configs.empty()) {
    fmt::print("\nAdaptive sampling: no held-out error above 10 % with {} samples; nothing to refine.\n", half);
    return 0;
  }
  const KernelData fine = builder.sample_and_profile_kernel_data(kernel, finegrained_n, SamplingMode::Finegrained,
                                                                 split.error_configs, "bench_finegrained");
  const KernelDataset adaptive = concat(initial, to_dataset(kernel, fine));
  const size_t total = adaptive.features.size();
  fmt::print("\nAdaptive sampling ({} prior + {} fine-grained around {} error configs = {} samples) vs {} prior samples:\n\n",
             half, total - half, split.error_configs.size(), total, std::min(total, pool.features.size()));
  fmt::print("| training set | regressor | fresh ±10 % | fresh RMSPE % |\n|---|---|---|---|\n");
  for (RegressorMode mode : {RegressorMode::random_forest, RegressorMode::gbdt}) {
    const Evaluation a = evaluate(kernel, adaptive, fresh, mode);
    const Evaluation p = evaluate(kernel, first_rows(pool, total), fresh, mode);
    fmt::print("| adaptive | {} | {:.1f} % | {:.2f} |\n| prior only | {} | {:.1f} % | {:.2f} |\n", to_string(mode),
               100 * a.fresh.acc10, a.fresh.rmspe, to_string(mode), 100 * p.fresh.acc10, p.fresh.rmspe);
  }
  return 0;
}

std::vector<size_t> parse_sizes(const std::string& text) {
  std::vector<size_t> out;
  for (const auto& item : cli::split_list(text)) out.push_back(std::stoul(item));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc != 4 && argc != 5) {
      std::cerr << "usage: builder_bench WORKSPACE KERNEL FRESH_N [SIZES]\n";
      return 2;
    }
    return run(argv[1], argv[2], std::stoi(argv[3]), argc == 5 ? parse_sizes(argv[4]) : std::vector<size_t>{});
  } catch (const std::exception& e) {
    std::cerr << "builder_bench: " << e.what() << "\n";
    return 1;
  }
}
