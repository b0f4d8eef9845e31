#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <set>
#include <tuple>

#include "common/io.h"
#include "common/progress.h"
#include "common/rng.h"
#include "common/worker_process.h"
#include "nnmeter/backend.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "profiling/journal.h"
#include "profiling/sharding.h"
#include "registry/plugin_probe.h"

namespace nnmeter {

namespace {

// A worker is replaced after this many measurements even when none repeats a job, so that no process's
// level weighs on too many samples of one run.
constexpr size_t kMeasurementsPerWorker = 16;

Json paths_to_json(const std::vector<fs::path>& paths) {
  Json out = Json::array();
  for (const auto& p : paths) out.push_back(p.string());
  return out;
}

std::vector<fs::path> paths_from_json(const Json& j) {
  std::vector<fs::path> out;
  if (j.is_array())
    for (const auto& p : j) out.emplace_back(p.get<std::string>());
  return out;
}

// A journal keeps the paths its files had when measured. In a workspace moved or copied elsewhere they are in
// this run's work_dir under the same names: the rule tester's kernel counts read them, and without them a resumed
// rule test found the cases its plans had settled undecided and measured them again.
void relocate(std::vector<fs::path>& files, const fs::path& work_dir) {
  for (auto& f : files) {
    std::error_code ec;
    if (!fs::exists(f, ec) && !work_dir.empty() && fs::exists(work_dir / f.filename(), ec)) f = work_dir / f.filename();
  }
}

// The converted files an earlier repeat recorded, to measure the same conversion again; none (convert anew)
// when any of them is gone: converted models deleted for space.
std::vector<fs::path> reusable_files(const Json& record, const fs::path& work_dir) {
  std::vector<fs::path> files = paths_from_json(record.value("files", Json::array()));
  relocate(files, work_dir);
  for (const auto& f : files) {
    std::error_code ec;
    if (!fs::exists(f, ec)) return {};
  }
  return files;
}

Json stats_to_json(const LatencyStats& s) {
  return {{"samples_ms", s.samples_ms}, {"mean", s.mean}, {"std", s.std}, {"median", s.median},
          {"min", s.min},               {"max", s.max},   {"count", s.count}};
}

LatencyStats stats_from_json(const Json& j) {
  // Journals written before workers refused non-finite latencies hold null (JSON's NaN): read it as
  // missing, so the sample counts as failed later instead of stopping every rerun here.
  const auto number = [&j](const char* key, double fallback) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
  };
  const Json samples = j.contains("samples_ms") ? j["samples_ms"] : Json::array();
  const bool all_numbers =
      samples.is_array() && std::all_of(samples.begin(), samples.end(), [](const Json& v) { return v.is_number(); });
  if (all_numbers && !samples.empty()) {
    LatencyStats s = LatencyStats::from_samples(samples.get<std::vector<double>>());
    // The backend's own summary wins: it may take its statistic across rounds rather than raw samples.
    s.median = number("median", s.median);
    s.mean = number("mean", s.mean);
    s.std = number("std", s.std);
    return s;
  }
  LatencyStats s;
  s.median = number("median", 0.0);
  s.mean = number("mean", s.median);
  s.std = number("std", 0.0);
  s.min = number("min", s.median);
  s.max = number("max", s.median);
  s.count = j.contains("count") && j["count"].is_number_integer() ? j["count"].get<int>() : 1;
  return s;
}

// A job's outcome from the journal records of its repeats.
ProfileOutcome outcome_from_records(const std::string& id, const std::vector<Json>& records, RepeatStatistic statistic) {
  ProfileOutcome o;
  o.id = id;
  for (const Json& r : records) {
    const LatencyStats stats = r.value("ok", false) ? stats_from_json(r) : LatencyStats{};
    if (!(stats.median > 0)) {
      ++o.failed_repeats;
      if (o.error.empty()) o.error = r.value("error", "no valid latency in the journal record");
      continue;
    }
    o.repeats.push_back(stats);
    o.repeats_ms.push_back(o.repeats.back().median);
    o.repeat_times.push_back(r.value("t", 0.0));
    if (o.converted_files.empty()) o.converted_files = paths_from_json(r.value("files", Json::array()));
  }
  o.ok = !o.repeats.empty();
  if (o.ok) {
    // One repeat: its own spread, as before repeats existed; several: the spread between processes.
    const double spread = o.repeats.size() == 1 ? o.repeats.front().std : LatencyStats::from_samples(o.repeats_ms).std;
    o.latency = Latency{repeat_label(o.repeats_ms, statistic), spread};
  }
  return o;
}

// The environment a worker starts with under the protocol. Huge pages: where page faults are expensive
// (virtual machines above all), loading a model is mostly faulting in the fresh pages its weights are
// copied into, and huge pages cut that time while the latencies measured did not move beyond the per-process
// noise (bench/RESULTS-main-job.md). A hugetlb setting the user gave in GLIBC_TUNABLES wins.
std::vector<std::string> worker_environment(const MeasurementProtocol& protocol) {
  if (!protocol.huge_pages) return {};
  const char* given = std::getenv("GLIBC_TUNABLES");
  const std::string tunables = given != nullptr ? given : "";
  if (tunables.find("glibc.malloc.hugetlb") != std::string::npos) return {};
  return {"GLIBC_TUNABLES=" + (tunables.empty() ? "" : tunables + ":") + "glibc.malloc.hugetlb=1"};
}

void append_error_log(const fs::path& error_log, const std::string& id, const std::string& error) {
  std::error_code ec;
  fs::create_directories(error_log.parent_path(), ec);
  std::ofstream(error_log, std::ios::app) << id << ": " << error << "\n";
}

}  // namespace

std::vector<std::map<std::string, ProfileOutcome>> profile_batches(const std::vector<ProfileBatch>& batches,
                                                                   const ProfilerOptions& options) {
  const MeasurementProtocol protocol = MeasurementProtocol::from_config(options.backend_config);
  std::vector<std::unique_ptr<Journal>> journals;
  for (const auto& b : batches) journals.push_back(std::make_unique<Journal>(b.journal, b.base_journal));
  // A run killed mid-write left write_file_atomic's temp files in its folders; this one, which holds their
  // journals now, removes them first. A sharded parent measures nothing here and leaves its shards' alone.
  if (!options.sharding.active()) {
    std::set<fs::path> folders = {options.work_dir};
    for (const auto& b : batches) folders.insert(b.journal.parent_path());
    for (const auto& folder : folders)
      if (const size_t n = io::remove_stale_temp_files(folder))
        spdlog::info("{}: removed {} temp file{} an interrupted run left in {}", options.label, n, n == 1 ? "" : "s",
                     folder.string());
  }

  // Every (batch, job, repeat) not yet journaled, in one seeded shuffled order: drift over the run must not
  // line up with a kernel, a config or a repeat index. Resuming recomputes the same set minus what is done.
  // With adaptive repeats, later rounds add one repeat to each job whose repeats have not settled, each round
  // in its own shuffled order; what a round needs is read from the journal, so a resumed run continues it.
  struct Item {
    size_t batch;
    const ProfileJob* job;
    int repeat;
  };
  auto first_repeats = [&protocol](const ProfileJob& job) {
    return protocol.first_repeats(job.repeats > 0 ? job.repeats : protocol.repeats);
  };
  const bool grows = protocol.adaptive() || options.remeasure_unsettled;  // repeats beyond the first ones
  auto repeat_cap = [&](const ProfileJob& job) {
    const int cap = protocol.adaptive() ? protocol.max_repeats : first_repeats(job);
    return options.remeasure_unsettled ? std::min(2 * cap, MeasurementProtocol::kMaxRepeats) : cap;
  };
  auto repeats_of = [&](size_t b, const ProfileJob& job) {  // journaled so far: 0, 1, ... without a gap
    int n = 0;
    while (journals[b]->records().count(Journal::key(job.id, n))) ++n;
    return n;
  };
  // A job's repeats so far, in the order measured; nullopt once one failed (a failed model is not measured again).
  auto values_of = [&](size_t b, const ProfileJob& job, int n) -> std::optional<std::vector<double>> {
    std::vector<double> values;
    for (int r = 0; r < n; ++r) {
      const Json& rec = journals[b]->records().at(Journal::key(job.id, r));
      if (!rec.value("ok", false)) return std::nullopt;
      values.push_back(stats_from_json(rec).median);
    }
    return values;
  };
  // SETTLE_CEILING: a batch (one kernel's samples) settles as a whole, when the halves of its samples' repeats
  // agree within ±10 % for that share of them.
  const bool by_kernel = protocol.adaptive() && protocol.settle_ceiling > 0 && !options.remeasure_unsettled;
  auto kernel_agreement = [&](size_t b) {
    std::vector<std::vector<double>> all;
    for (const auto& job : batches[b].jobs)
      if (auto values = values_of(b, job, repeats_of(b, job))) all.push_back(std::move(*values));
    return split_half_agreement(all, protocol.statistic);
  };
  auto next_round = [&](int round) {
    std::vector<Item> out;
    for (size_t b = 0; b < batches.size(); ++b) {
      bool batch_complete = true;  // every job has its first repeats
      int deepest = 0, shallowest = std::numeric_limits<int>::max();  // of the jobs still measured (none failed)
      for (const auto& job : batches[b].jobs) {
        const int n = repeats_of(b, job);
        batch_complete = batch_complete && n >= first_repeats(job);
        if (!by_kernel || !values_of(b, job, n)) continue;
        deepest = std::max(deepest, n);
        shallowest = std::min(shallowest, n);
      }
      // By kernel, a round cut short (an interrupted run) is finished before the kernel is judged again: judged on
      // unequal repeats, it could give the samples already measured in that round one repeat more than the rest.
      bool kernel_needs_more = false;
      if (by_kernel && batch_complete && shallowest >= deepest) {
        const RepeatAgreement agreement = kernel_agreement(b);
        kernel_needs_more = agreement.within10 < protocol.settle_ceiling;
        if (kernel_needs_more && agreement.samples > 0 && deepest < protocol.max_repeats)
          spdlog::info("{}: {}: the halves of {} samples' repeats agree within ±10 % for {:.1f} %, below SETTLE_CEILING "
                       "{:.0f} %: each gets another repeat", options.label,
                       batches.size() > 1 ? batches[b].journal.stem().string() : std::string("the samples"),
                       agreement.samples, 100 * agreement.within10, 100 * protocol.settle_ceiling);
      }
      for (const auto& job : batches[b].jobs) {
        const int first = first_repeats(job);
        bool complete = true;
        for (int r = 0; r < first; ++r)
          if (!journals[b]->records().count(Journal::key(job.id, r))) {
            out.push_back({b, &job, r});
            complete = false;
          }
        if (!complete || !grows) continue;
        const int n = repeats_of(b, job);
        if (n >= repeat_cap(job)) continue;
        const auto values = values_of(b, job, n);
        if (!values) continue;
        const bool more = by_kernel ? kernel_needs_more || n < deepest
                                    : !repeats_settled(*values, protocol.statistic, protocol.settle_tolerance);
        if (more) out.push_back({b, &job, n});
      }
    }
    Rng(options.seed + static_cast<uint64_t>(round) * 0x9E3779B97F4A7C15ull).shuffle(out);
    return out;
  };
  std::vector<Item> pending = next_round(0);
  // A sharded build measures nothing here: the phase comes from its shards' journals, or its plan is written.
  while (options.sharding.active() && !pending.empty()) {
    std::sort(pending.begin(), pending.end(), [&](const Item& a, const Item& b) {
      const auto at = [&](const Item& i) { return std::tuple(i.batch, i.job - batches[i.batch].jobs.data(), i.repeat); };
      return at(a) < at(b);
    });
    std::vector<sharding::PhaseJob> todo;
    for (const Item& item : pending) {
      if (todo.empty() || todo.back().job != item.job) todo.push_back({item.batch, item.job, {}});
      todo.back().repeats.push_back(item.repeat);
    }
    std::vector<Journal*> open;
    for (const auto& j : journals) open.push_back(j.get());
    sharding::take_phase(batches, todo, options, open);
    pending = next_round(0);
  }
  size_t total = 0;
  for (size_t b = 0; b < batches.size(); ++b)
    for (const auto& job : batches[b].jobs) total += static_cast<size_t>(std::max(first_repeats(job), repeats_of(b, job)));
  if (pending.size() < total)
    spdlog::info("{}: {} of {} measurements already done, resuming", options.label, total - pending.size(), total);

  // Probes every DRIFT_PROBE_EVERY measurements; a shard, which measures them to compare its level with the
  // others', at its start and end at least.
  const bool probing = options.probes && !options.probes->models.empty();
  if (!pending.empty()) {
    const fs::path executable = options.worker_executable.empty() ? find_worker_executable() : options.worker_executable;
    const Json hello = {{"backend", options.backend},
                        {"config", backend_only(options.backend_config)},
                        {"registry_home", options.registry_home.string()}};
    const fs::path worker_log = batches.front().error_log.parent_path() / "profile_worker.log";
    const std::vector<std::string> environment = worker_environment(protocol);
    std::unique_ptr<WorkerProcess> worker;
    std::set<std::string> served;  // what the current worker has measured
    // One measurement of a model in a worker that has not measured it before (a repeat is independent only
    // in a fresh process), as a journal record without its key fields.
    auto measure_once = [&](const std::string& key, const ProfileJob& job, const std::vector<fs::path>& files) {
      if (!worker || !worker->alive() || served.count(key) || served.size() >= kMeasurementsPerWorker) {
        worker.reset();
        served.clear();
        // --timeout bounds a worker's start too: a backend whose constructor hangs costs the run that long.
        worker = std::make_unique<WorkerProcess>(executable, hello, worker_log, options.timeout_s, environment);
      }
      served.insert(key);
      const Json request = {{"id", job.id},
                            {"onnx", job.model.string()},
                            {"work_dir", options.work_dir.string()},
                            {"files", paths_to_json(files)}};
      Json record = Json::object();
      auto reply = worker->request(request, options.timeout_s);
      if (auto* why = std::get_if<std::string>(&reply)) {
        record["ok"] = false;
        record["error"] = "worker " + *why;
      } else {
        const Json& answer = std::get<Json>(reply);
        record["ok"] = answer.value("ok", false);
        if (record["ok"]) {
          record.update(stats_to_json(stats_from_json(answer)));
          record["files"] = answer.value("files", Json::array());
        } else {
          record["error"] = answer.value("error", "unknown error");
        }
      }
      record["t"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      return record;
    };
    std::optional<Journal> probe_journal;
    if (probing) probe_journal.emplace(options.probes->journal);
    auto measure_probes = [&] {
      for (const ProfileJob& probe : options.probes->models) {
        size_t seq = 0;
        while (probe_journal->records().count(Journal::key(probe.id, static_cast<int>(seq)))) ++seq;
        std::vector<fs::path> files = probe.converted_files;
        if (seq > 0)
          if (auto earlier = reusable_files(probe_journal->records().at(probe.id), options.work_dir); !earlier.empty())
            files = earlier;
        Json record = measure_once("probe:" + probe.id, probe, files);
        record["id"] = probe.id;
        record["repeat"] = seq;
        probe_journal->append(record);
        if (!record["ok"].get<bool>())
          spdlog::warn("drift probe {} failed ({}); the run goes on without it", probe.id, record["error"].get<std::string>());
      }
    };

    size_t measured = 0;
    for (int round = 0; !pending.empty(); pending = next_round(++round)) {
      if (round > 0)
        spdlog::info("{}: {} samples whose repeats have not settled get one more (round {})", options.label, pending.size(),
                     round + 1);
      Progress progress(round == 0 ? options.label : fmt::format("{} (round {})", options.label, round + 1), pending.size(),
                        options.progress);
      for (size_t i = 0; i < pending.size(); ++i, ++measured) {
        if (probing && (protocol.probe_every > 0 ? measured % static_cast<size_t>(protocol.probe_every) == 0 : measured == 0))
          measure_probes();
        const Item& item = pending[i];
        const ProfileBatch& batch = batches[item.batch];
        Journal& journal = *journals[item.batch];
        // Later repeats reuse the files an earlier repeat converted.
        std::vector<fs::path> files = item.job->converted_files;
        if (files.empty())
          for (int r = 0; r < std::max(first_repeats(*item.job), item.repeat) && files.empty(); ++r)
            if (auto it = journal.records().find(Journal::key(item.job->id, r)); it != journal.records().end())
              files = reusable_files(it->second, options.work_dir);
        Json record = measure_once(fmt::format("{}/{}", item.batch, item.job->id), *item.job, files);
        record["id"] = item.job->id;
        record["repeat"] = item.repeat;
        if (!options.plan_id.empty()) record["plan"] = options.plan_id;
        journal.append(record);
        if (!record["ok"].get<bool>()) {
          append_error_log(batch.error_log,
                           item.job->id + (first_repeats(*item.job) > 1 ? fmt::format(" (repeat {})", item.repeat) : ""),
                           record["error"].get<std::string>());
          spdlog::debug("{} {}: failed: {}", options.label, item.job->id, record["error"].get<std::string>());
        }
        progress.advance();
      }
    }
    if (probing) measure_probes();
  }

  // The journal keeps what was measured; the labels take the level out (PROBE_LEVELS normalize). Not in a sharded
  // build: its measurements come from other devices, whose probes are in their shards (SHARD_LEVELS).
  const bool normalize = protocol.normalize_probe_levels && probing && !options.sharding.active();
  const DriftLevel level = normalize ? DriftLevel(read_drift(options.probes->journal)) : DriftLevel({});
  std::vector<std::map<std::string, ProfileOutcome>> out(batches.size());
  std::vector<bool> kernel_settled(batches.size(), false);
  for (size_t b = 0; b < batches.size() && by_kernel; ++b)
    kernel_settled[b] = kernel_agreement(b).within10 >= protocol.settle_ceiling;
  for (size_t b = 0; b < batches.size(); ++b)
    for (const auto& job : batches[b].jobs) {
      std::vector<Json> records;
      const int n = repeats_of(b, job);
      for (int r = 0; r < n; ++r) {
        records.push_back(journals[b]->records().at(Journal::key(job.id, r)));
        if (!level.empty()) scale_record(records.back(), 1 / level.at(records.back().value("t", 0.0)));
      }
      ProfileOutcome& o = out[b][job.id] = outcome_from_records(job.id, records, protocol.statistic);
      relocate(o.converted_files, options.work_dir);
      if (grows) {
        const bool settled = by_kernel ? kernel_settled[b]
                                       : repeats_settled(o.repeats_ms, protocol.statistic, protocol.settle_tolerance);
        o.stopped = settled ? "settled" : n >= repeat_cap(job) ? "max_repeats" : "failed";
      }
    }
  return out;
}

ProfilerOptions ProfilerOptions::of(std::string backend, Json backend_config, const Registry& registry, fs::path work_dir,
                                    std::string label) {
  ProfilerOptions o;
  o.backend = std::move(backend);
  o.backend_config = std::move(backend_config);
  o.registry_home = registry.home();
  o.work_dir = std::move(work_dir);
  o.label = std::move(label);
  return o;
}

std::map<std::string, ProfileOutcome> profile_models(const std::vector<ProfileJob>& jobs, const ProfilerOptions& options,
                                                     const fs::path& journal, const fs::path& error_log) {
  return profile_batches({ProfileBatch{jobs, journal, error_log, {}}}, options).front();
}

int run_profile_worker(int result_fd) {
  set_plugins_load_in_this_process();
  auto answer = [result_fd](const Json& message) {
    const std::string line = message.dump() + "\n";
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(result_fd, line.data() + done, line.size() - done);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  };
  std::string line;
  if (!std::getline(std::cin, line)) return 1;
  std::unique_ptr<Backend> backend;
  try {
    const Json hello = Json::parse(line);
    const Registry registry(hello.at("registry_home").get<std::string>());
    backend = connect_backend(registry, hello.at("backend").get<std::string>(), hello.at("config"));
  } catch (const std::exception& e) {
    answer({{"fatal", e.what()}});
    return 1;
  }
  if (!answer({{"ready", true}})) return 1;
  while (std::getline(std::cin, line)) {
    Json reply;
    try {
      const Json request = Json::parse(line);
      reply["id"] = request.at("id");
      std::vector<fs::path> files = paths_from_json(request.value("files", Json::array()));
      if (files.empty()) {
        const fs::path onnx = request.at("onnx").get<std::string>();
        files = backend->to_backend(onnx, request.at("work_dir").get<std::string>(), onnx.stem().string());
      }
      const LatencyStats stats = backend->profile(files);
      if (stats.count <= 0 || !(stats.median > 0)) throw Error("the backend measured no positive latency");
      // NaN and infinities cannot travel as JSON, and no model runs for an hour: a lost sample, not a result.
      constexpr double kMaxLatencyMs = 3.6e6;
      std::vector<double> values = stats.samples_ms;
      values.insert(values.end(), {stats.median, stats.mean, stats.std, stats.min, stats.max});
      for (const double v : values)
        if (!(std::isfinite(v) && v >= 0 && v <= kMaxLatencyMs))
          throw Error(fmt::format("the backend returned an impossible latency {} ms (not a finite value in [0, {}])", v,
                                  kMaxLatencyMs));
      reply["ok"] = true;
      reply.update(stats_to_json(stats));
      reply["files"] = paths_to_json(files);
    } catch (const std::exception& e) {
      reply["ok"] = false;
      reply["error"] = e.what();
    }
    if (!answer(reply)) return 1;
  }
  return 0;
}

}  // namespace nnmeter
