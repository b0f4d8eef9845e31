// Benchmark: sample and write N conv-bn-relu kernels (default 10,000) with the real
// generate_config_sample, and split the time into sampling, graph building + serialization, and the rest
// (file I/O). Prints a Markdown table row set; bench/RESULTS-sampling.md records a run.
//
//   sampling_bench [--num N] [--dir DIR] [--seed S] [--keep]
//
// The models of 10,000 prior conv-bn-relu configs take tens of GB; the benchmark computes the size first
// and refuses to start when the disk does not have that much free space plus 10 GB.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "nnmeter/registry.h"
#include "nnmeter/sampling.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

long peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

nnmeter::KernelSuite conv_bn_relu(const nnmeter::Json& pbc) {
  for (auto& info : nnmeter::builtin_kernels())
    if (info.name == "conv-bn-relu") return info.create(pbc);
  throw std::runtime_error("conv-bn-relu is not a builtin kernel");
}

}  // namespace

int main(int argc, char** argv) try {
  int num = 10000;
  uint64_t seed = 1;
  bool keep = false;
  fs::path dir;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--num" && i + 1 < argc) num = std::stoi(argv[++i]);
    else if (a == "--dir" && i + 1 < argc) dir = argv[++i];
    else if (a == "--seed" && i + 1 < argc) seed = std::stoull(argv[++i]);
    else if (a == "--keep") keep = true;
    else throw std::runtime_error("usage: sampling_bench [--num N] [--dir DIR] [--seed S] [--keep]");
  }
  if (dir.empty()) dir = fs::temp_directory_path() / ("nnmeter-sampling-bench-" + std::to_string(::getpid()));
  if (fs::exists(dir / "predictor_build")) throw std::runtime_error(dir.string() + " already holds a predictor_build");

  nnmeter::Workspace ws;
  ws.root = dir;
  ws.predictorbuild_config = {{"BATCH_SIZE", 1}};

  // 1. Sampling alone.
  auto t0 = Clock::now();
  auto suite = conv_bn_relu(ws.predictorbuild_config);
  const auto configs = suite.sampler->prior_config_sampling(num, seed);
  const double t_sample = seconds_since(t0);

  // Expected bytes: float32 weights dominate (conv weight + bias + 4 BN vectors).
  double weight_bytes = 0;
  for (const auto& c : configs) {
    const double cin = c["CIN"], cout = c["COUT"], k = c["KERNEL_SIZE"];
    weight_bytes += 4.0 * (cout * cin * k * k + 5 * cout);
  }
  fs::create_directories(dir);
  const double free_bytes = static_cast<double>(fs::space(dir).available);
  if (free_bytes < weight_bytes + 10e9) {
    std::fprintf(stderr, "need %.1f GB free in %s for %d models (+10 GB margin), have %.1f GB\n", weight_bytes / 1e9,
                 dir.c_str(), num, free_bytes / 1e9);
    fs::remove_all(dir);
    return 2;
  }

  // 2. Graph building + serialization alone (models discarded).
  t0 = Clock::now();
  double built_bytes = 0;
  for (const auto& c : configs) built_bytes += static_cast<double>(suite.kernel->build_onnx(c, 1).size());
  const double t_build = seconds_since(t0);

  // 3. The real thing: sample, dedup, build, write every model and the results JSON.
  t0 = Clock::now();
  const auto r = nnmeter::generate_config_sample(ws, suite, num, "prior", nnmeter::SamplingMode::Prior, {}, seed);
  const double t_total = seconds_since(t0);

  double written = 0;
  for (const auto& e : fs::directory_iterator(dir / "predictor_build" / "kernels")) written += static_cast<double>(e.file_size());
  written += static_cast<double>(fs::file_size(r.results_file));

  std::printf("| kernels requested | %d |\n", num);
  std::printf("| kernels written (after dedup) | %zu (%d duplicates) |\n", r.new_entries.size(), r.duplicates);
  std::printf("| bytes written | %.2f GB (weights estimate %.2f GB, serialized %.2f GB) |\n", written / 1e9,
              weight_bytes / 1e9, built_bytes / 1e9);
  std::printf("| sampling %d configs | %.3f s |\n", num, t_sample);
  std::printf("| building + serializing all models (no I/O) | %.1f s |\n", t_build);
  std::printf("| generate_config_sample total (sample + build + write) | %.1f s |\n", t_total);
  std::printf("| share not spent building (I/O, dedup, JSON) | %.0f %% |\n", 100.0 * (t_total - t_build - t_sample) / t_total);
  std::printf("| write throughput | %.2f GB/s |\n", written / 1e9 / t_total);
  std::printf("| peak RSS | %ld MB |\n", peak_rss_mb());
  if (!keep) fs::remove_all(dir);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "sampling_bench: %s\n", e.what());
  return 1;
}
