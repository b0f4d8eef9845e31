#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>

#include "common/progress.h"
#include "nnmeter/backend.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "profiling/journal.h"
#include "profiling/worker_process.h"

namespace nnmeter {

namespace {

constexpr double kStartupTimeoutS = 120;

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

ProfileOutcome outcome_from_record(const Json& r) {
  ProfileOutcome o;
  o.id = r.at("id").get<std::string>();
  o.ok = r.value("ok", false);
  if (o.ok) o.stats = stats_from_json(r);
  o.converted_files = paths_from_json(r.value("files", Json::array()));
  o.error = r.value("error", "");
  return o;
}

void append_error_log(const fs::path& error_log, const std::string& id, const std::string& error) {
  std::error_code ec;
  fs::create_directories(error_log.parent_path(), ec);
  std::ofstream(error_log, std::ios::app) << id << ": " << error << "\n";
}

}  // namespace

fs::path find_worker_executable() {
  if (const char* env = std::getenv("NN_METER_WORKER"); env != nullptr && *env != '\0') {
    if (!fs::is_regular_file(env)) throw Error(std::string("NN_METER_WORKER=") + env + " is not a file");
    return env;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    if (self.filename() == "nn-meter") return self;
    if (fs::is_regular_file(self.parent_path() / "nn-meter")) return self.parent_path() / "nn-meter";
  }
  throw Error("cannot find the nn-meter executable that runs profiling workers: set NN_METER_WORKER to its path");
}

std::map<std::string, ProfileOutcome> profile_models(const std::vector<ProfileJob>& jobs, const ProfilerOptions& options,
                                                     const fs::path& journal_path, const fs::path& error_log) {
  Journal journal(journal_path);
  std::vector<const ProfileJob*> pending;
  for (const auto& job : jobs)
    if (!journal.records().count(job.id)) pending.push_back(&job);
  if (pending.size() < jobs.size())
    spdlog::info("{}: {} of {} models already profiled, resuming", options.label, jobs.size() - pending.size(), jobs.size());

  if (!pending.empty()) {
    const fs::path executable = options.worker_executable.empty() ? find_worker_executable() : options.worker_executable;
    const Json hello = {{"backend", options.backend},
                        {"config", options.backend_config},
                        {"registry_home", options.registry_home.string()}};
    const fs::path worker_log = error_log.parent_path() / "profile_worker.log";
    std::unique_ptr<WorkerProcess> worker;
    Progress progress(options.label, pending.size(), options.progress);
    for (const ProfileJob* job : pending) {
      if (!worker || !worker->alive())
        worker = std::make_unique<WorkerProcess>(executable, hello, worker_log, kStartupTimeoutS);
      const Json request = {{"id", job->id},
                            {"onnx", job->model.string()},
                            {"work_dir", options.work_dir.string()},
                            {"files", paths_to_json(job->converted_files)}};
      Json record = {{"id", job->id}};
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
      journal.append(record);
      if (!record["ok"].get<bool>()) {
        append_error_log(error_log, job->id, record["error"].get<std::string>());
        spdlog::debug("{} {}: failed: {}", options.label, job->id, record["error"].get<std::string>());
      }
      progress.advance();
    }
  }

  std::map<std::string, ProfileOutcome> out;
  for (const auto& job : jobs) out[job.id] = outcome_from_record(journal.records().at(job.id));
  return out;
}

int run_profile_worker(int result_fd) {
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
