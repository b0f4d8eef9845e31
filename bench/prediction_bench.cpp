// Model-level prediction benchmark (issue 6): accuracy of `nn-meter predict` against measured latency on
// onednn_cpu over real CNN architectures at several widths and resolutions, and prediction speed.
//
// The networks are the library's sets (`nn-meter networks export --set evaluation --out DIR`).
//
//   prediction_bench measure DIR OUT.json [CONFIG]    measures each model on onednn_cpu (resumable: models
//                                                     already in OUT.json are skipped; OUT.json is rewritten
//                                                     atomically after every model)
//   prediction_bench accuracy DIR MEASURED.json PREDICTOR_FOLDER   per-model table + summary (markdown)
//   prediction_bench speed PREDICTOR_FOLDER TMP_DIR [N]            end-to-end time per model, models/s
//
// CONFIG is a JSON object of onednn_cpu parameters (default: 1 thread, 5 rounds).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>

#include "networks/architectures.h"
#include "common/io.h"
#include "nnmeter/backend.h"
#include "nnmeter/registry.h"
#include "nnmeter/prediction.h"
#include "nnmeter/predictor_folder.h"

using namespace nnmeter;

namespace {

std::vector<fs::path> onnx_files(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".onnx") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

int measure(const fs::path& dir, const fs::path& out, const Json& user_config) {
  Json measured = fs::exists(out) ? Json::parse(io::read_file(out)) : Json::object();
  const BackendInfo info = [] {
    for (auto& b : builtin_backends())
      if (b.name == "onednn_cpu") return b;
    throw Error("onednn_cpu is not built in");
  }();
  Json config = Json{{"NUM_THREADS", 1}, {"NUM_ROUNDS", 5}};
  config.update(user_config);
  auto backend = info.create(resolve_backend_config(info.params, config, "measure config"));
  const fs::path work = fs::temp_directory_path() / "prediction_bench_work";
  for (const fs::path& file : onnx_files(dir)) {
    const std::string name = file.filename().string();
    if (measured.contains(name)) continue;
    fs::remove_all(work);
    fs::create_directories(work);
    const LatencyStats s = backend->profile(backend->to_backend(file, work, ""));
    measured[name] = {{"median_ms", s.median}, {"cv", s.cv()}, {"rounds", s.count}};
    io::write_file_atomic(out, measured.dump(1));
    fmt::print("{:<40} {:10.3f} ms  cv {:.1f} %\n", name, s.median, 100 * s.cv());
    std::fflush(stdout);
  }
  fs::remove_all(work);
  return 0;
}

std::string family(const std::string& file) { return file.substr(0, file.find("_r")); }

int accuracy(const fs::path& dir, const fs::path& measured_file, const fs::path& folder) {
  const Json measured = Json::parse(io::read_file(measured_file));
  const LatencyPredictor predictor = LatencyPredictor::from_folder(folder);
  std::vector<double> errors;
  std::map<std::string, std::vector<double>> by_family;
  std::map<std::string, double> kernel_share;  // predicted ms per predictor kernel over all models
  double predicted_total = 0;
  size_t uncovered = 0;
  fmt::print("| model | measured ms | predicted ms | error % | kernels | uncovered ops |\n|---|---|---|---|---|---|\n");
  for (const fs::path& file : onnx_files(dir)) {
    const std::string name = file.filename().string();
    if (!measured.contains(name)) continue;
    const ModelPrediction p = predictor.predict_file(file);
    const double truth = measured[name]["median_ms"].get<double>();
    const double error = (p.latency_ms - truth) / truth;
    errors.push_back(error);
    by_family[family(name)].push_back(error);
    for (const auto& k : p.kernels) kernel_share[k.predictor_kernel.empty() ? "(layout)" : k.predictor_kernel] += k.latency_ms;
    predicted_total += p.latency_ms;
    uncovered += p.uncovered.size();
    fmt::print("| {} | {:.3f} | {:.3f} | {:+.1f} | {} | {} |\n", name, truth, p.latency_ms, 100 * error, p.kernels.size(),
               p.uncovered.size());
  }
  if (errors.empty()) throw Error("no measured model in " + measured_file.string());
  auto within = [&](const std::vector<double>& e, double bound) {
    return 100.0 * static_cast<double>(std::count_if(e.begin(), e.end(), [&](double x) { return std::fabs(x) <= bound; })) /
           static_cast<double>(e.size());
  };
  auto rmspe = [](const std::vector<double>& e) {
    double s = 0;
    for (double x : e) s += x * x;
    return 100 * std::sqrt(s / static_cast<double>(e.size()));
  };
  fmt::print("\n**{} models: RMSPE {:.2f} %, within ±5 %: {:.1f} %, within ±10 %: {:.1f} %; uncovered ops in all: {}**\n\n",
             errors.size(), rmspe(errors), within(errors, 0.05), within(errors, 0.10), uncovered);
  fmt::print("| family | models | RMSPE % | ±5 % | ±10 % | mean error % |\n|---|---|---|---|---|---|\n");
  for (const auto& [f, e] : by_family) {
    double mean = 0;
    for (double x : e) mean += x;
    fmt::print("| {} | {} | {:.2f} | {:.0f} % | {:.0f} % | {:+.1f} |\n", f, e.size(), rmspe(e), within(e, 0.05),
               within(e, 0.10), 100 * mean / static_cast<double>(e.size()));
  }
  fmt::print("\n| predictor kernel | share of predicted time |\n|---|---|\n");
  for (const auto& [k, ms] : kernel_share) fmt::print("| {} | {:.1f} % |\n", k, 100 * ms / predicted_total);
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds of each of `runs` calls of f.
template <class F>
std::vector<double> run_times(int runs, F&& f) {
  using clock = std::chrono::steady_clock;
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = clock::now();
    f();
    times.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  }
  return times;
}

int speed(const fs::path& folder, const fs::path& tmp, int count) {
  using clock = std::chrono::steady_clock;
  const LatencyPredictor predictor = LatencyPredictor::from_folder(folder);
  fs::create_directories(tmp);
  const fs::path mbv2 = tmp / "mobilenet_v2.onnx";
  io::write_file_atomic(mbv2, networks::build("mobilenet_v2", 224).model.SerializeAsString());
  constexpr int runs = 200;
  const std::vector<double> times = run_times(runs, [&] {
    if (predictor.predict_file(mbv2).latency_ms <= 0) throw Error("MobileNetV2 predicted at <= 0 ms");
  });
  fmt::print("MobileNetV2 (224, {:.1f} MB file) end to end (parse, shapes, detect, predict): median {:.3f} ms, "
             "min {:.3f} ms over {} runs\n",
             static_cast<double>(fs::file_size(mbv2)) / 1e6, median(times), *std::min_element(times.begin(), times.end()),
             times.size());

  // Where the time goes. Prediction is predict_ir minus detection, which predict_ir runs first.
  const ModelIr ir = load_onnx_ir(mbv2);
  const double parse = median(run_times(runs, [&] { (void)load_onnx_ir(mbv2); }));
  const double detect = median(run_times(runs, [&] { (void)detect_kernels(ir, predictor.fusion_rules()); }));
  const double predict = median(run_times(runs, [&] { (void)predictor.predict_ir(ir); }));
  fmt::print("  split (median of {} runs each): file -> graph with static shapes {:.3f} ms, kernel detection {:.3f} ms, "
             "features + regressors {:.3f} ms\n",
             runs, parse, detect, predict - detect);

  // A NAS-like folder: small-width mobile models at many resolutions, as a search would produce.
  const fs::path many = tmp / "models";
  fs::create_directories(many);
  const std::vector<std::string> archs = {"mobilenet_v2", "mobilenet_v3_large", "mnasnet1_0", "efficientnet_b0",
                                          "shufflenet_v2_x1_0", "mobilenet_v1", "resnet18"};
  double bytes = 0;
  for (int i = 0; i < count; ++i) {
    const std::string arch = archs[static_cast<size_t>(i) % archs.size()];
    const int64_t res = 96 + 32 * ((i / static_cast<int>(archs.size())) % 5);
    const double width = (i / static_cast<int>(archs.size() * 5)) % 2 == 0 ? 0.35 : 0.5;
    const fs::path file = many / fmt::format("{:04d}_{}_{}_{}.onnx", i, arch, res, width);
    if (!fs::exists(file)) io::write_file_atomic(file, networks::build(arch, res, width).model.SerializeAsString());
    bytes += static_cast<double>(fs::file_size(file));
  }
  const auto t0 = clock::now();
  double sum = 0;
  for (const fs::path& file : onnx_files(many)) sum += predictor.predict_file(file).latency_ms;
  const double secs = std::chrono::duration<double>(clock::now() - t0).count();
  fmt::print("{} models ({:.0f} MB) predicted in {:.2f} s: {:.0f} models/s (sum of predictions {:.0f} ms)\n", count,
             bytes / 1e6, secs, count / secs, sum);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> a(argv + 1, argv + argc);
    if ((a.size() == 3 || a.size() == 4) && a[0] == "measure")
      return measure(a[1], a[2], a.size() == 4 ? Json::parse(a[3]) : Json::object());
    if (a.size() == 4 && a[0] == "accuracy") return accuracy(a[1], a[2], a[3]);
    if ((a.size() == 3 || a.size() == 4) && a[0] == "speed") return speed(a[1], a[2], a.size() == 4 ? std::stoi(a[3]) : 1000);
    std::cerr << "usage: prediction_bench measure DIR OUT.json [CONFIG_JSON] | "
                 "accuracy DIR MEASURED.json PREDICTOR_FOLDER | speed PREDICTOR_FOLDER TMP_DIR [N]\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "prediction_bench: " << e.what() << "\n";
    return 1;
  }
}
