// Converting and profiling models on a backend, safely: every model runs in an isolated worker process
// with a timeout (a backend that crashes or hangs costs one sample, never the run), and every outcome is
// appended to a journal and synced to disk before the next model starts, so nothing measured is lost and
// an interrupted run resumes where it stopped without profiling any ID twice.
#pragma once

#include <map>
#include <optional>

#include "nnmeter/common.h"
#include "nnmeter/latency.h"

namespace nnmeter {

class Registry;

// One model to profile, as nn-Meter's results files describe it.
struct ProfileJob {
  std::string id;
  fs::path model;                         // the ONNX file
  std::vector<fs::path> converted_files;  // already converted backend files, if any
};

struct ProfileOutcome {
  std::string id;
  bool ok = false;
  LatencyStats stats;  // when ok
  std::vector<fs::path> converted_files;
  std::string error;  // when !ok: why (plugin error, crash with signal, timeout)
};

struct ProfilerOptions {
  std::string backend;                 // backend name (builtin or registered)
  Json backend_config = Json::object();  // as read from backend_config.yaml
  fs::path registry_home;              // where registered plugins are looked up
  fs::path work_dir;                   // converted models go here
  double timeout_s = 300;              // per model, conversion and profiling together
  fs::path worker_executable;          // the nn-meter binary; empty: find_worker_executable()
  std::string label;                   // shown in progress lines, e.g. the kernel name
  bool progress = true;                // progress line on a terminal (never when stderr is not a tty)
};

// The nn-meter binary that hosts workers: $NN_METER_WORKER, else this process if it is nn-meter, else
// nn-meter next to this process's executable. Throws Error if none exists.
fs::path find_worker_executable();

// Profiles every job not yet in `journal`, appending one durable record per job, and returns the outcome
// of every job (from the journal for those done earlier). Failures also go to `error_log` with their
// reason, one line each.
std::map<std::string, ProfileOutcome> profile_models(const std::vector<ProfileJob>& jobs, const ProfilerOptions& options,
                                                     const fs::path& journal, const fs::path& error_log);

// The worker side, run by `nn-meter profile-worker`: reads requests on stdin, answers on `result_fd`.
int run_profile_worker(int result_fd);

}  // namespace nnmeter
