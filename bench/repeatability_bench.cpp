// How well measurements repeat between runs (issue: latency you can trust), old protocol against new.
//
//   repeatability_bench measure OUT.json REPEATS CONFIG.yaml MODEL_DIR...
//       every *.onnx of the folders measured REPEATS times on onednn_cpu, each repeat in a fresh worker
//       process, all repeats of all models in one shuffled order; OUT.json keeps every repeat. Resumable:
//       the journal sits next to OUT.json.
//   repeatability_bench compare A.json B.json [K]
//       two such runs (taken apart in time) compared per model: the old protocol is one process (a run's
//       first repeat), the new one the minimum (and median) of K repeats (default: all but the first, so
//       the two never share a measurement). Prints the share of models whose two runs agree within ±5 %
//       and ±10 %, by kind (kernel models vs CNNs), and the split-half agreement inside each run.
//   repeatability_bench replay TRIALS PROFILED.json... [-- RULE...]
//       a fixed-REPEATS build's repeats (profiled_<kernel>.json, R repeats a sample) replayed under stopping
//       rules, to choose adaptive repeats' defaults from data: per trial each sample's repeats are permuted and
//       dealt into two disjoint builds of R/2, each taking repeats in turn while its rule asks for more. Per rule:
//       repeats spent a sample, the split-half ceiling the build would report, and how often the two builds'
//       labels agree (the retest: the ceiling no stopping rule can bias). RULE: fixed:N, MIN:MAX:TOLERANCE (each
//       sample alone: the library's repeats_settled, REPEAT_STATISTIC min) or kernel:MIN:MAX:CEILING (the kernel's
//       samples together, SETTLE_CEILING); default, a grid of the three.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "common/hash.h"
#include "common/io.h"
#include "common/rng.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"

using namespace nnmeter;

namespace {

int measure(const fs::path& out, int repeats, const fs::path& config_file, const std::vector<fs::path>& dirs) {
  std::vector<ProfileJob> jobs;
  for (const auto& dir : dirs)
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".onnx") jobs.push_back({e.path().stem().string(), e.path(), {}});
  std::sort(jobs.begin(), jobs.end(), [](const ProfileJob& a, const ProfileJob& b) { return a.id < b.id; });
  ProfilerOptions options;
  options.backend = "onednn_cpu";
  options.backend_config = io::load_yaml_file(config_file);
  options.backend_config["REPEATS"] = repeats;
  options.registry_home = Registry::default_home();
  options.work_dir = out.parent_path() / (out.stem().string() + "_converted");
  options.label = "repeatability";
  options.seed = fnv1a(out.filename().string());
  const auto outcomes = profile_models(jobs, options, out.parent_path() / (out.stem().string() + "_journal.jsonl"),
                                       out.parent_path() / (out.stem().string() + "_errors.log"));
  Json doc = Json::object();
  for (const auto& [id, o] : outcomes)
    doc[id] = {{"ok", o.ok}, {"repeats_ms", o.repeats_ms}, {"repeat_times", o.repeat_times}, {"error", o.error}};
  io::save_json_file(out, doc);
  return 0;
}

bool is_kernel(const std::string& id) { return id.find("_prior_") != std::string::npos; }

struct Tally {
  size_t n = 0, in5 = 0, in10 = 0;
  std::vector<double> deviations;
  void add(double a, double b) {
    const double d = std::abs(a - b) / std::min(a, b);
    ++n;
    in5 += d <= 0.05;
    in10 += d <= 0.10;
    deviations.push_back(d);
  }
  std::string str() const {
    if (n == 0) return "-";
    return fmt::format("{:5.1f}% / {:5.1f}% (median dev {:.1f}%)", 100.0 * in5 / n, 100.0 * in10 / n,
                       100 * LatencyStats::from_samples(deviations).median);
  }
};

int compare(const fs::path& a_file, const fs::path& b_file, int k) {
  const Json a = io::load_json_file(a_file), b = io::load_json_file(b_file);
  std::map<std::string, Tally> old_p, min_p, median_p, half_a, half_b;
  for (const auto& [id, ra] : a.items()) {
    if (!b.contains(id) || !ra["ok"].get<bool>() || !b[id]["ok"].get<bool>()) continue;
    const auto x = ra["repeats_ms"].get<std::vector<double>>(), y = b[id]["repeats_ms"].get<std::vector<double>>();
    if (x.size() < 2 || y.size() < 2) continue;
    const size_t use = k > 0 ? static_cast<size_t>(k) : std::min(x.size(), y.size()) - 1;
    if (x.size() < use + 1 || y.size() < use + 1) continue;
    const std::vector<double> xs(x.begin() + 1, x.begin() + 1 + static_cast<long>(use)),
        ys(y.begin() + 1, y.begin() + 1 + static_cast<long>(use));
    for (const std::string& kind : {std::string(is_kernel(id) ? "kernel models" : "CNNs"), std::string("all")}) {
      old_p[kind].add(x[0], y[0]);
      min_p[kind].add(repeat_label(xs, RepeatStatistic::min), repeat_label(ys, RepeatStatistic::min));
      median_p[kind].add(repeat_label(xs, RepeatStatistic::median), repeat_label(ys, RepeatStatistic::median));
      std::vector<double> h0, h1;
      for (size_t i = 0; i < x.size(); ++i) (i % 2 ? h1 : h0).push_back(x[i]);
      half_a[kind].add(repeat_label(h0, RepeatStatistic::min), repeat_label(h1, RepeatStatistic::min));
      h0.clear(), h1.clear();
      for (size_t i = 0; i < y.size(); ++i) (i % 2 ? h1 : h0).push_back(y[i]);
      half_b[kind].add(repeat_label(h0, RepeatStatistic::min), repeat_label(h1, RepeatStatistic::min));
    }
  }
  fmt::print("| models | n | old: one process, run A vs B (±5 % / ±10 %) | new: min of {0} repeats, A vs B | median of {0} "
             "repeats, A vs B | split-half (min) inside A | inside B |\n|---|---|---|---|---|---|---|\n",
             k > 0 ? std::to_string(k) : std::string("R-1"));
  for (const std::string kind : {"kernel models", "CNNs", "all"})
    fmt::print("| {} | {} | {} | {} | {} | {} | {} |\n", kind, old_p[kind].n, old_p[kind].str(), min_p[kind].str(),
               median_p[kind].str(), half_a[kind].str(), half_b[kind].str());

  // How many repeats the label needs: run A against run B with the first K repeats after the first one.
  fmt::print("\n| repeats K | min of K, A vs B (±5 % / ±10 %) | median of K | mean of K |\n|---|---|---|---|\n");
  for (size_t k_used = 1;; ++k_used) {
    Tally by_min, by_median, by_mean;
    for (const auto& [id, ra] : a.items()) {
      if (!b.contains(id) || !ra["ok"].get<bool>() || !b[id]["ok"].get<bool>()) continue;
      const auto x = ra["repeats_ms"].get<std::vector<double>>(), y = b[id]["repeats_ms"].get<std::vector<double>>();
      if (x.size() < k_used + 1 || y.size() < k_used + 1) continue;
      const std::vector<double> xs(x.begin() + 1, x.begin() + 1 + static_cast<long>(k_used)),
          ys(y.begin() + 1, y.begin() + 1 + static_cast<long>(k_used));
      by_min.add(repeat_label(xs, RepeatStatistic::min), repeat_label(ys, RepeatStatistic::min));
      by_median.add(repeat_label(xs, RepeatStatistic::median), repeat_label(ys, RepeatStatistic::median));
      by_mean.add(repeat_label(xs, RepeatStatistic::mean), repeat_label(ys, RepeatStatistic::mean));
    }
    if (by_min.n == 0) break;
    fmt::print("| {} | {} | {} | {} |\n", k_used, by_min.str(), by_median.str(), by_mean.str());
  }
  return 0;
}

struct Rule {
  int min = 0, max = 0;
  double tolerance = 0;  // each sample alone; 0: fixed `min` repeats
  double ceiling = 0;    // > 0: the kernel's samples together
};

Rule parse_rule(const std::string& spec) {
  Rule r;
  if (spec.rfind("fixed:", 0) == 0) {
    r.min = r.max = std::stoi(spec.substr(6));
  } else if (spec.rfind("kernel:", 0) == 0) {
    if (std::sscanf(spec.c_str() + 7, "%d:%d:%lf", &r.min, &r.max, &r.ceiling) != 3 || !(r.ceiling > 0))
      throw Error("a rule is fixed:N, MIN:MAX:TOLERANCE or kernel:MIN:MAX:CEILING, got '" + spec + "'");
  } else if (std::sscanf(spec.c_str(), "%d:%d:%lf", &r.min, &r.max, &r.tolerance) != 3 || r.tolerance <= 0) {
    throw Error("a rule is fixed:N, MIN:MAX:TOLERANCE or kernel:MIN:MAX:CEILING, got '" + spec + "'");
  }
  if (r.min < 1 || r.max < r.min) throw Error("rule '" + spec + "': need 1 <= MIN <= MAX");
  return r;
}

// The repeats one replayed build takes from `available` under `rule` (in order, as the shuffled rounds would).
std::vector<double> take(const std::vector<double>& available, const Rule& rule, bool& settled) {
  std::vector<double> used(available.begin(), available.begin() + std::min<long>(rule.min, std::ssize(available)));
  settled = false;
  if (rule.tolerance <= 0) return used;
  while (!(settled = repeats_settled(used, RepeatStatistic::min, rule.tolerance)) && std::ssize(used) < rule.max &&
         used.size() < available.size())
    used.push_back(available[used.size()]);
  return used;
}

int replay(int trials, const std::vector<fs::path>& files, std::vector<std::string> specs) {
  std::map<std::string, std::vector<std::vector<double>>> by_kernel;
  size_t repeats = SIZE_MAX;
  for (const auto& file : files) {
    const Json doc = io::load_json_file(file);
    for (const auto& [kernel, samples] : doc.items())
      for (const auto& [id, entry] : samples.items()) {
        auto r = entry.value("repeats_ms", std::vector<double>{});
        if (r.size() < 4) continue;
        repeats = std::min(repeats, r.size());
        by_kernel[kernel].push_back(std::move(r));
      }
  }
  if (by_kernel.empty()) throw Error("no sample with 4 or more repeats in the files given");
  const long half = static_cast<long>(repeats / 2);
  if (specs.empty()) {
    for (int n = 2; n <= half; ++n) specs.push_back(fmt::format("fixed:{}", n));
    for (int min : {2, 3, 4})
      for (double tolerance : {0.01, 0.02, 0.03, 0.05})
        for (int max : {6, 8, 10})
          if (max <= half && min < max) specs.push_back(fmt::format("{}:{}:{}", min, max, tolerance));
    for (double ceiling : {0.9, 0.95, 0.97})
      if (half >= 10) specs.push_back(fmt::format("kernel:3:10:{}", ceiling));
  }
  fmt::print("{} trials; each sample's first {} repeats dealt into two builds of {}\n\n", trials, 2 * half, half);
  fmt::print("| kernel | samples | rule | repeats a sample | split-half ±5 / ±10 % | retest ±5 / ±10 % | settled |\n"
             "|---|---|---|---|---|---|---|\n");
  for (const auto& [kernel, samples] : by_kernel)
    for (const auto& spec : specs) {
      const Rule rule = parse_rule(spec);
      if (rule.max > half) throw Error(fmt::format("rule '{}' takes more than the {} repeats a build has", spec, half));
      Rng rng(fnv1a(kernel));
      std::vector<std::vector<double>> used_all;
      Tally retest;
      size_t spent = 0, settled_n = 0, builds = 0;
      for (int t = 0; t < trials; ++t) {
        std::vector<std::vector<double>> dealt[2];  // per build, each sample's available repeats
        for (const auto& r : samples) {
          std::vector<double> p(r.begin(), r.begin() + 2 * half);
          rng.shuffle(p);
          for (int b = 0; b < 2; ++b) dealt[b].emplace_back(p.begin() + b * half, p.begin() + (b + 1) * half);
        }
        std::vector<double> labels[2];
        for (int b = 0; b < 2; ++b) {
          std::vector<std::vector<double>> used;
          if (rule.ceiling > 0) {  // every sample one more while the kernel's halves agree too rarely
            long n = rule.min;
            const auto first = [&](long k) {
              std::vector<std::vector<double>> out;
              for (const auto& a : dealt[b]) out.emplace_back(a.begin(), a.begin() + k);
              return out;
            };
            while (n < rule.max && split_half_agreement(first(n), RepeatStatistic::min).within10 < rule.ceiling) ++n;
            used = first(n);
            settled_n += split_half_agreement(used, RepeatStatistic::min).within10 >= rule.ceiling ? used.size() : 0;
          } else {
            for (const auto& a : dealt[b]) {
              bool settled = false;
              used.push_back(take(a, rule, settled));
              settled_n += settled;
            }
          }
          for (auto& u : used) {
            spent += u.size(), ++builds;
            labels[b].push_back(repeat_label(u, RepeatStatistic::min));
            used_all.push_back(std::move(u));
          }
        }
        for (size_t i = 0; i < samples.size(); ++i) retest.add(labels[0][i], labels[1][i]);
      }
      const RepeatAgreement halves = split_half_agreement(used_all, RepeatStatistic::min);
      fmt::print("| {} | {} | {} | {:.2f} | {:.1f} / {:.1f} % | {:.1f} / {:.1f} % | {} |\n", kernel, samples.size(), spec,
                 static_cast<double>(spent) / builds, 100 * halves.within5, 100 * halves.within10,
                 100.0 * retest.in5 / retest.n, 100.0 * retest.in10 / retest.n,
                 rule.tolerance > 0 || rule.ceiling > 0 ? fmt::format("{:.0f} %", 100.0 * settled_n / builds)
                                                        : std::string("-"));
    }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() >= 5 && args[0] == "measure")
      return measure(args[1], std::stoi(args[2]), args[3], std::vector<fs::path>(args.begin() + 4, args.end()));
    if (args.size() >= 3 && args[0] == "compare") return compare(args[1], args[2], args.size() > 3 ? std::stoi(args[3]) : 0);
    if (args.size() >= 3 && args[0] == "replay") {
      const auto dash = std::find(args.begin() + 2, args.end(), "--");
      return replay(std::stoi(args[1]), std::vector<fs::path>(args.begin() + 2, dash),
                    dash == args.end() ? std::vector<std::string>{} : std::vector<std::string>(dash + 1, args.end()));
    }
    std::cerr << "usage: repeatability_bench measure OUT.json REPEATS CONFIG.yaml MODEL_DIR... | compare A.json B.json [K]"
                 " | replay TRIALS PROFILED.json... [-- RULE...]\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
