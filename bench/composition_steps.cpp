// How a layer costs inside its network against the same layer measured alone: every timed step (one oneDNN
// primitive) of every model given is timed on its own, the models (networks and the kernels a predictor
// detects in them) in one shuffled order in this process, under each cache protocol asked for:
//   cold<MB>  COLD_CACHE with <MB> of scratch written after the eviction (cold0: eviction only, the default)
//   warm      back-to-back runs, nothing evicted
// One process is one repeat: the latency level is set per process, so run_composition_steps.sh starts this
// several times and bench/composition_steps.py compares medians over the repeats.
//
//   composition_steps OUT.jsonl SEED PROTOCOLS MODEL.onnx...     (PROTOCOLS: e.g. cold0,cold64,warm)
//
// Appends one JSON line per model and protocol: the plan's steps (primitive, shapes, post-ops) with the
// median of each step's time over the timed runs, the median of their per-run sum, and the median of
// execute() timed whole (without the per-step waits).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "backends/onednn/engine.h"
#include "backends/onednn/onednn_backend.h"
#include "nnmeter/common.h"

using namespace nnmeter;
using onednn::Pipeline;

namespace {

constexpr int kWarmupRuns = 5;
constexpr int kTimedRuns = 15;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Protocol {
  std::string name;
  bool cold = true;
  size_t fill_bytes = 0;
};

Protocol parse_protocol(const std::string& s) {
  if (s == "warm") return {s, false, 0};
  if (s.rfind("cold", 0) == 0 && s.size() > 4) return {s, true, std::stoul(s.substr(4)) << 20};
  throw Error("unknown protocol '" + s + "' (cold<MB> or warm)");
}

Json measure(onednn::Engine& engine, const Protocol& p) {
  const auto start = [&] {
    if (p.cold) engine.start_cold(Pipeline::Profiling, p.fill_bytes);
  };
  const auto run_steps = [&](std::vector<double>& step_ms) {
    start();
    engine.execute_timed(Pipeline::Profiling, step_ms);
  };
  const auto run_whole = [&] {
    start();
    const auto t0 = std::chrono::steady_clock::now();
    engine.execute(Pipeline::Profiling);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> step_ms;
  for (int i = 0; i < kWarmupRuns; ++i) run_steps(step_ms);
  std::vector<std::vector<double>> per_step(step_ms.size());
  std::vector<double> sums, totals;
  for (int i = 0; i < kTimedRuns; ++i) {
    run_steps(step_ms);
    double sum = 0;
    for (size_t s = 0; s < step_ms.size(); ++s) {
      per_step[s].push_back(step_ms[s]);
      sum += step_ms[s];
    }
    sums.push_back(sum);
    totals.push_back(run_whole());
  }
  Json steps = engine.plan(Pipeline::Profiling)["steps"];
  for (size_t s = 0; s < steps.size(); ++s) steps[s]["ms"] = median(per_step[s]);
  return {{"protocol", p.name}, {"steps", steps}, {"steps_sum_ms", median(sums)}, {"total_ms", median(totals)}};
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 5) {
    std::cerr << "usage: composition_steps OUT.jsonl SEED PROTOCOLS MODEL.onnx...\n";
    return 2;
  }
  std::vector<Protocol> protocols;
  std::istringstream names(argv[3]);
  for (std::string name; std::getline(names, name, ',');) protocols.push_back(parse_protocol(name));
  std::vector<std::pair<std::string, size_t>> order;  // (model, protocol index)
  for (int i = 4; i < argc; ++i)
    for (size_t p = 0; p < protocols.size(); ++p) order.emplace_back(argv[i], p);
  std::shuffle(order.begin(), order.end(), std::mt19937(static_cast<unsigned>(std::stoul(argv[2]))));

  std::ofstream out(argv[1], std::ios::app);
  size_t done = 0;
  for (const auto& [model, p] : order) {
    try {
      onednn::Engine engine(onednn::load_graph(model), onednn::EngineOptions{1});
      engine.set_inputs(onednn::random_inputs(engine));
      engine.prepare_profiling();
      Json line = measure(engine, protocols[p]);
      line["model"] = model;
      out << line.dump() << "\n" << std::flush;
    } catch (const Error& e) {  // one model the engine refuses: said, and the others measured
      std::cerr << "composition_steps: " << e.what() << "\n";
    }
    if (++done % 50 == 0) std::cerr << fmt::format("{}/{}\n", done, order.size());
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "composition_steps: " << e.what() << "\n";
  return 1;
}
