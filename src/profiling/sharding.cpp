#include "profiling/sharding.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "common/hash.h"
#include "common/io.h"
#include "onnx_io/graph.h"

namespace nnmeter::sharding {

namespace {

constexpr const char* kPlanFormat = "nn-meter measurement plan";
constexpr int kPlanVersion = 1;
constexpr const char* kPlanFile = "plan.json";
constexpr const char* kProbeJournal = "drift_probes.jsonl";

// The expected seconds of one measurement: a fixed part (a fresh worker process, loading and converting the
// model, the warm-up and the protocol's minimum round time) and a part that grows with the model's work. Fitted by
// least squares on the per-repeat times of a onednn_cpu build of 120 samples (conv, dwconv, fc, relu) on a 2-core
// VM (bench/RESULTS-sharding.md); only the ratio of the two matters for dealing, so a slower device deals the same.
constexpr double kFixedSeconds = 0.14;
constexpr double kWorkPerSecond = 1.8e9;  // multiply-adds (or element visits) per second of a measurement

// A model's work: multiply-adds of its convolutions and matrix products, one per input and output element of
// every other runtime node. A model the front end cannot load costs its fixed part only (it will fail fast).
double model_work(const fs::path& onnx) {
  try {
    const onnx_io::Graph g = onnx_io::load_graph(onnx, {"the shard planner", onnx_io::runtime_ops()});
    const auto elements = [](const Shape& s) {
      double n = 1;
      for (const auto d : s) n *= static_cast<double>(std::max<int64_t>(d, 1));
      return n;
    };
    double work = 0;
    for (const onnx_io::Node& node : g.nodes) {
      if (node.outputs.empty() || node.inputs.empty() || node.inputs[0] < 0) continue;
      const double out = elements(g.value(node.outputs[0]).shape);
      const Shape& in = g.value(node.inputs[0]).shape;
      if ((node.op == "Conv" || node.op == "ConvTranspose") && node.inputs.size() > 1 && node.inputs[1] >= 0) {
        const Shape& w = g.value(node.inputs[1]).shape;  // [Cout, Cin/groups, k...]: one output's multiply-adds
        work += out * elements(Shape(w.begin() + std::min<size_t>(1, w.size()), w.end()));
      } else if ((node.op == "Gemm" || node.op == "MatMul") && !in.empty()) {
        work += out * static_cast<double>(std::max<int64_t>(in.back(), 1));
      } else {
        for (const int i : node.inputs)
          if (i >= 0 && !g.is_const(i)) work += elements(g.value(i).shape);
        work += out;
      }
    }
    return work;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string shard_name(int shard, int shards) { return fmt::format("{}/{}", shard, shards); }

fs::path shard_dir(const fs::path& root, const std::string& plan, int shard, int shards) {
  return root / plan / fmt::format("{}-of-{}", shard, shards);
}

// Batches of one phase may keep journals of one name in different folders.
std::string journal_name(size_t batch, const std::string& journal) {
  return fmt::format("{}-{}", batch, fs::path(journal).filename().string());
}

Json paths_json(const std::vector<fs::path>& paths) {
  Json out = Json::array();
  for (const auto& p : paths) out.push_back(p.string());
  return out;
}

ProfileJob job_from_json(const Json& j) {
  ProfileJob job{j.at("id").get<std::string>(), j.at("model").get<std::string>(), {}, j.value("repeats", 0)};
  for (const auto& f : j.value("converted_files", Json::array())) job.converted_files.emplace_back(f.get<std::string>());
  return job;
}

Json load_plan(const fs::path& root) {
  const fs::path file = root / kPlanFile;
  if (!fs::exists(file))
    throw Error("no measurement plan in " + root.string() + ": write one with nn-meter build ... --plan-only");
  Json plan = io::load_json_file(file);
  if (!plan.is_object() || plan.value("format", "") != kPlanFormat || plan.value("version", 0) != kPlanVersion ||
      !plan.contains("batches") || !plan["batches"].is_array())
    throw Error(file.string() + " is not a measurement plan of this nn-meter (format '" + kPlanFormat + "' version " +
                std::to_string(kPlanVersion) + "): write it again with nn-meter build ... --plan-only");
  return plan;
}

// Every job of a plan with its batch, in the plan's order, and each one's shard for `shards` shards.
struct PlannedJob {
  size_t batch;
  Json job;
};
std::vector<PlannedJob> planned_jobs(const Json& plan) {
  std::vector<PlannedJob> out;
  for (size_t b = 0; b < plan["batches"].size(); ++b)
    for (const auto& job : plan["batches"][b].at("jobs")) out.push_back({b, job});
  return out;
}
std::vector<int> shards_of(const std::vector<PlannedJob>& jobs, int shards) {
  std::vector<double> costs;
  for (const auto& j : jobs) costs.push_back(j.job.value("cost_s", 1.0));
  return deal(costs, shards);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Each shard's level: per drift probe, the median of the shard's measurements against the median of the shards'
// medians, averaged geometrically over the probes. Empty when a shard measured no probe.
std::map<int, double> shard_levels(const std::map<int, std::map<std::string, std::vector<double>>>& probes) {
  std::set<std::string> names;
  for (const auto& [shard, by_probe] : probes)
    for (const auto& [probe, values] : by_probe) names.insert(probe);
  std::map<int, double> log_sum;
  size_t used = 0;
  for (const auto& probe : names) {
    std::map<int, double> medians;
    for (const auto& [shard, by_probe] : probes)
      if (auto it = by_probe.find(probe); it != by_probe.end() && !it->second.empty()) medians[shard] = median(it->second);
    if (medians.size() != probes.size()) continue;
    std::vector<double> all;
    for (const auto& [shard, m] : medians) all.push_back(m);
    const double reference = median(all);
    for (const auto& [shard, m] : medians) log_sum[shard] += std::log(m / reference);
    ++used;
  }
  std::map<int, double> levels;
  if (used > 0)
    for (const auto& [shard, sum] : log_sum) levels[shard] = std::exp(sum / static_cast<double>(used));
  return levels;
}

// Merges the shards' journals of `plan` into `journals` (the build's, by batch), or throws naming the shard.
void merge(const Json& plan, const ProfilerOptions& options, const std::vector<Journal*>& journals) {
  const std::string id = plan["id"].get<std::string>(), phase = plan.value("phase", "");
  const int shards = options.sharding.shards;
  const std::vector<PlannedJob> jobs = planned_jobs(plan);
  const std::vector<int> shard_of = shards_of(jobs, shards);
  const fs::path& root = options.sharding.root;
  std::map<std::pair<size_t, std::string>, int> owner;  // (batch, job id) → shard
  for (size_t i = 0; i < jobs.size(); ++i) owner[{jobs[i].batch, jobs[i].job.at("id").get<std::string>()}] = shard_of[i];

  const auto resume_hint = [&](int shard) {
    return fmt::format("run it (nn-meter build ... --shard {}) and merge again", shard_name(shard, shards));
  };
  // (batch, shard) → the shard's journal of that batch; probe id → values, per shard.
  std::map<std::pair<size_t, int>, std::unique_ptr<Journal>> shard_journals;
  std::map<int, std::map<std::string, std::vector<double>>> probes;
  for (int shard = 1; shard <= shards; ++shard) {
    const fs::path dir = shard_dir(root, id, shard, shards);
    const bool has_jobs = std::find(shard_of.begin(), shard_of.end(), shard) != shard_of.end();
    if (!fs::is_directory(dir)) {
      if (!has_jobs) continue;
      throw Error(fmt::format("shard {} of plan {} ({}) has measured nothing (no folder {}): {}", shard_name(shard, shards),
                              id, phase, dir.string(), resume_hint(shard)));
    }
    const auto open = [&](const fs::path& file) {
      try {
        return std::make_unique<Journal>(file);
      } catch (const Error& e) {
        throw Error(fmt::format("shard {}: {}", shard_name(shard, shards), e.what()));
      }
    };
    for (size_t b = 0; b < plan["batches"].size(); ++b) {
      const fs::path file = dir / journal_name(b, plan["batches"][b].at("journal").get<std::string>());
      if (!fs::exists(file)) continue;
      auto journal = open(file);
      for (const auto& [key, record] : journal->records()) {
        const std::string job = record.at("id").get<std::string>();
        if (record.value("plan", "") != id)
          throw Error(fmt::format("{} holds measurements of plan '{}', not of plan {} ({}): it is another build's journal; "
                                  "move it away and run shard {} again",
                                  file.string(), record.value("plan", ""), id, phase, shard_name(shard, shards)));
        const auto it = owner.find({b, job});
        if (it == owner.end() || it->second != shard)
          throw Error(fmt::format("{} holds {} (repeat {}), which plan {} deals to {}: the shards of this plan were run "
                                  "with different shard counts or journals were moved; move {} away and run the shards "
                                  "again",
                                  file.string(), job, record.value("repeat", 0), id,
                                  it == owner.end() ? "no shard" : "shard " + shard_name(it->second, shards),
                                  dir.string()));
      }
      if (!journal->rewritten().empty())
        throw Error(fmt::format("shard {} measured {} twice ({}): its journal is not one run's; move {} away and run the "
                                "shard again",
                                shard_name(shard, shards), journal->rewritten().front(), file.string(), dir.string()));
      shard_journals[{b, shard}] = std::move(journal);
    }
    if (fs::exists(dir / kProbeJournal)) {
      const auto probe_journal = open(dir / kProbeJournal);
      for (const auto& [key, record] : probe_journal->records())
        if (record.value("ok", false) && record.contains("median") && record["median"].is_number())
          probes[shard][record.at("id").get<std::string>()].push_back(record["median"].get<double>());
    }
  }

  // Every planned repeat not yet in the build's journal must be in its own shard's journal.
  std::map<int, std::pair<size_t, std::string>> missing;  // shard → (count, an example)
  std::map<int, size_t> planned;
  std::vector<std::vector<Json>> merged(journals.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const size_t b = jobs[i].batch;
    const std::string job = jobs[i].job.at("id").get<std::string>();
    const int shard = shard_of[i];
    const auto it = shard_journals.find({b, shard});
    for (const auto& r : jobs[i].job.at("todo")) {
      ++planned[shard];
      const std::string key = Journal::key(job, r.get<int>());
      if (journals[b]->records().count(key)) continue;  // merged before (a merge that was interrupted)
      if (it == shard_journals.end() || !it->second->records().count(key)) {
        auto& [count, example] = missing[shard];
        if (count++ == 0) example = fmt::format("{} repeat {}", job, r.get<int>());
      }
    }
  }
  for (const auto& [shard, gap] : missing)
    throw Error(fmt::format("shard {} of plan {} ({}) lacks {} of its {} measurements (e.g. {}): {}", shard_name(shard, shards),
                            id, phase, gap.first, planned[shard], gap.second, resume_hint(shard)));

  const MeasurementProtocol protocol = MeasurementProtocol::from_config(options.backend_config);
  std::map<int, double> levels = shard_levels(probes);
  if (levels.size() > 1) {
    for (const auto& [shard, level] : levels)
      spdlog::info("{}: shard {} measured {:+.1f}% against the median of the shards (drift probes){}", phase,
                   shard_name(shard, shards), 100 * (level - 1),
                   protocol.normalize_shard_levels ? fmt::format("; its labels divided by {:.3f}", level) : "");
  } else if (shards > 1) {
    spdlog::info("{}: the shards measured no common drift probe, so their levels cannot be compared", phase);
  }
  if (!protocol.normalize_shard_levels || levels.size() <= 1) levels.clear();

  size_t count = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const size_t b = jobs[i].batch;
    const auto it = shard_journals.find({b, shard_of[i]});
    if (it == shard_journals.end()) continue;
    const std::string job = jobs[i].job.at("id").get<std::string>();
    // Every repeat of the job this shard measured (adaptive repeats beyond the planned ones too), in order.
    for (int r = 0; r < MeasurementProtocol::kMaxRepeats * 2; ++r) {
      const std::string key = Journal::key(job, r);
      const auto rec = it->second->records().find(key);
      if (rec == it->second->records().end() || journals[b]->records().count(key)) continue;
      Json record = rec->second;
      record["shard"] = shard_name(shard_of[i], shards);
      if (auto level = levels.find(shard_of[i]); level != levels.end()) {
        scale_record(record, 1 / level->second);
        record["shard_level"] = level->second;
      }
      if (!record.value("ok", false))
        std::ofstream(plan["batches"][b].value("error_log", ""), std::ios::app)
            << job << " (repeat " << r << ", shard " << shard_name(shard_of[i], shards) << "): "
            << record.value("error", "unknown error") << "\n";
      merged[b].push_back(std::move(record));
    }
  }
  for (size_t b = 0; b < journals.size(); ++b) {
    journals[b]->append_all(merged[b]);
    count += merged[b].size();
  }
  spdlog::info("{}: merged {} measurements of plan {} from {} shard{}", phase, count, id, shards, shards == 1 ? "" : "s");
}

}  // namespace

std::vector<int> deal(const std::vector<double>& costs, int shards) {
  std::vector<size_t> order(costs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
  std::vector<double> load(static_cast<size_t>(std::max(shards, 1)), 0.0);
  std::vector<int> out(costs.size(), 1);
  for (const size_t i : order) {
    const size_t least = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    load[least] += costs[i];
    out[i] = static_cast<int>(least) + 1;
  }
  return out;
}

void take_phase(const std::vector<ProfileBatch>& batches, const std::vector<PhaseJob>& todo, const ProfilerOptions& options,
                const std::vector<Journal*>& journals) {
  const Sharding& sharding = options.sharding;
  // The plan's identity: what is to be measured, where it goes and how; a plan that covers every measurement
  // still to do is this phase's (a merge interrupted half-way finds its plan again).
  // SHARD_LEVELS is the merge's choice, not the measurement's: it may change between the shards and the merge.
  Json config = options.backend_config;
  if (config.is_object()) config.erase("SHARD_LEVELS");
  Json identity = {{"phase", options.label}, {"backend", options.backend}, {"config", config}};
  Json wanted = Json::array();
  std::set<std::string> todo_keys;
  for (const PhaseJob& t : todo) {
    wanted.push_back({batches[t.batch].journal.string(), t.job->id, t.job->model.string(), t.repeats});
    for (const int r : t.repeats) todo_keys.insert(batches[t.batch].journal.string() + "\n" + Journal::key(t.job->id, r));
  }
  identity["todo"] = wanted;
  const fs::path file = sharding.root / kPlanFile;
  if (fs::exists(file)) {
    const Json current = load_plan(sharding.root);
    bool covers = current.value("phase", "") == options.label && current.value("backend", "") == options.backend &&
                  current.value("measured_config", Json()) == config;
    if (covers) {
      std::set<std::string> planned;
      for (const auto& batch : current["batches"])
        for (const auto& job : batch.at("jobs"))
          for (const auto& r : job.at("todo"))
            planned.insert(batch.at("journal").get<std::string>() + "\n" + Journal::key(job.at("id").get<std::string>(), r.get<int>()));
      covers = std::includes(planned.begin(), planned.end(), todo_keys.begin(), todo_keys.end());
    }
    if (covers && sharding.mode == Sharding::Mode::merge) return merge(current, options, journals);
    if (covers) {
      const Json summary = current.value("summary", Json::object());
      throw MeasurementPlanned(fmt::format("plan {} ({}) is written: {}", current["id"].get<std::string>(),
                                           options.label, file.string()),
                               summary);
    }
  }

  const std::string id = fmt::format("{:016x}", fnv1a(identity.dump()));
  std::map<fs::path, double> seconds;  // per model: one measurement's expected time
  const auto expected = [&](const fs::path& model) {
    auto it = seconds.find(model);
    if (it == seconds.end()) it = seconds.emplace(model, kFixedSeconds + model_work(model) / kWorkPerSecond).first;
    return it->second;
  };
  Json plan_batches = Json::array();
  for (const auto& b : batches)
    plan_batches.push_back({{"journal", b.journal.string()}, {"error_log", b.error_log.string()}, {"jobs", Json::array()}});
  size_t measurements = 0;
  double total_s = 0;
  for (const PhaseJob& t : todo) {
    const double cost = static_cast<double>(t.repeats.size()) * expected(t.job->model);
    plan_batches[t.batch]["jobs"].push_back({{"id", t.job->id},
                                             {"model", t.job->model.string()},
                                             {"converted_files", paths_json(t.job->converted_files)},
                                             {"repeats", t.job->repeats},
                                             {"todo", t.repeats},
                                             {"cost_s", cost}});
    measurements += t.repeats.size();
    total_s += cost;
  }
  Json probes = Json::array();
  const std::vector<ProfileJob>& probe_jobs = options.probes ? options.probes->models : sharding.probes;
  for (const ProfileJob& p : probe_jobs)
    probes.push_back({{"id", p.id}, {"model", p.model.string()}, {"converted_files", paths_json(p.converted_files)}});
  // What more devices would buy: the expected time of the largest shard for a few shard counts.
  std::vector<double> costs;
  for (const auto& batch : plan_batches)
    for (const auto& job : batch["jobs"]) costs.push_back(job["cost_s"].get<double>());
  Json devices = Json::array();
  for (const int n : {1, 2, 4, 8, 16, 32, 64}) {
    std::vector<double> load(static_cast<size_t>(n), 0.0);
    const std::vector<int> shard_of = deal(costs, n);
    for (size_t i = 0; i < costs.size(); ++i) load[static_cast<size_t>(shard_of[i] - 1)] += costs[i];
    devices.push_back({{"shards", n}, {"largest_s", *std::max_element(load.begin(), load.end())},
                       {"mean_s", total_s / n}});
  }
  const Json summary = {{"plan", id},
                        {"phase", options.label},
                        {"measurements", measurements},
                        {"models", todo.size()},
                        {"expected_s", total_s},
                        {"devices", devices},
                        {"file", file.string()}};
  const Json plan = {{"format", kPlanFormat},
                     {"version", kPlanVersion},
                     {"id", id},
                     {"phase", options.label},
                     {"backend", options.backend},
                     {"backend_config", options.backend_config},
                     {"measured_config", config},
                     {"seed", options.seed},
                     {"timeout_s", options.timeout_s},
                     {"remeasure_unsettled", options.remeasure_unsettled},
                     {"batches", plan_batches},
                     {"probes", probes},
                     {"summary", summary}};
  io::save_json_file(file, plan);
  throw MeasurementPlanned(fmt::format("plan {} ({}): {} measurements of {} models written to {}", id, options.label,
                                       measurements, todo.size(), file.string()),
                           summary);
}

}  // namespace nnmeter::sharding

namespace nnmeter {

Json measure_shard(const fs::path& root, int shard, int shards, const ShardRun& run) {
  using namespace sharding;
  if (shards < 1 || shard < 1 || shard > shards)
    throw Error(fmt::format("shard {}/{} does not exist: K/N needs 1 <= K <= N", shard, shards));
  const Json plan = load_plan(root);
  const std::string id = plan.at("id").get<std::string>();
  const std::vector<PlannedJob> jobs = planned_jobs(plan);
  const std::vector<int> shard_of = shards_of(jobs, shards);
  const fs::path dir = shard_dir(root, id, shard, shards);
  if (!run.backend.empty() && run.backend != plan.value("backend", ""))
    throw Error(fmt::format("plan {} measures on backend {}, not {}", id, plan.value("backend", ""), run.backend));

  std::vector<ProfileBatch> batches;
  for (size_t b = 0; b < plan["batches"].size(); ++b) {
    const Json& pb = plan["batches"][b];
    ProfileBatch batch;
    batch.journal = dir / journal_name(b, pb.at("journal").get<std::string>());
    batch.error_log = dir / "profile_error.log";
    batch.base_journal = pb.at("journal").get<std::string>();
    batches.push_back(std::move(batch));
  }
  size_t mine = 0;
  for (size_t i = 0; i < jobs.size(); ++i)
    if (shard_of[i] == shard) {
      batches[jobs[i].batch].jobs.push_back(job_from_json(jobs[i].job));
      ++mine;
    }
  ProfilerOptions options;
  options.backend = plan.at("backend").get<std::string>();
  options.backend_config = plan.at("backend_config");
  options.registry_home = run.registry_home;
  options.work_dir = dir / "converted";
  options.label = fmt::format("shard {} of {}", shard_name(shard, shards), plan.value("phase", ""));
  options.timeout_s = run.timeout_s.value_or(plan.value("timeout_s", 300.0));
  options.worker_executable = run.worker_executable;
  options.progress = run.progress;
  options.seed = plan.value("seed", uint64_t{1}) ^ fnv1a(shard_name(shard, shards));
  options.remeasure_unsettled = plan.value("remeasure_unsettled", false);
  options.plan_id = id;
  ProfilerOptions::Probes probes{{}, dir / kProbeJournal};
  for (const auto& p : plan.value("probes", Json::array())) probes.models.push_back(job_from_json(p));
  if (!probes.models.empty()) options.probes = probes;
  spdlog::info("{}: {} of the plan's {} models, in {}", options.label, mine, jobs.size(), dir.string());
  profile_batches(batches, options);
  return {{"plan", id}, {"phase", plan.value("phase", "")}, {"shard", shard_name(shard, shards)}, {"models", mine},
          {"folder", dir.string()}};
}

}  // namespace nnmeter
