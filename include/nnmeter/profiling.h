// Converting and profiling models on a backend, safely: every model runs in an isolated worker process
// with a timeout (a backend that crashes or hangs costs one sample, never the run), and every outcome is
// appended to a journal and synced to disk before the next model starts, so nothing measured is lost and
// an interrupted run resumes where it stopped without profiling any ID twice.
#pragma once

#include <map>
#include <optional>

#include "nnmeter/common.h"
#include "nnmeter/latency.h"
#include "nnmeter/protocol.h"

namespace nnmeter {

class Registry;

// One model to profile, as nn-Meter's results files describe it.
struct ProfileJob {
  std::string id;
  fs::path model;                         // the ONNX file
  std::vector<fs::path> converted_files;  // already converted backend files, if any
  int repeats = 0;                        // independent repeats; 0: the protocol's REPEATS
};

struct ProfileOutcome {
  std::string id;
  bool ok = false;             // at least one repeat measured
  Latency latency;             // when ok: the protocol's statistic of the repeats +- their standard deviation
  std::vector<double> repeats_ms;     // each measured repeat's central value, in measuring order
  std::vector<LatencyStats> repeats;  // each measured repeat as the backend reported it
  std::vector<double> repeat_times;   // when each measured repeat ended (seconds since the epoch; 0: unknown)
  int failed_repeats = 0;
  std::vector<fs::path> converted_files;
  std::string error;  // the first failed repeat's reason (plugin error, crash with signal, timeout)
  // With adaptive repeats, why the repeats stopped: "settled", "max_repeats" (never settled) or "failed";
  // "" with a fixed REPEATS.
  std::string stopped;
};

// A build measured on several devices at once (docs/sharding.md). Each phase of measurements (the prior samples,
// a fine-grained round, the rule test, the calibration networks) is written as a plan; `nn-meter build --shard K/N`
// measures shard K of it on its own device (measure_shard), and the build that merges them goes on from there.
struct Sharding {
  enum class Mode {
    off,    // measure here
    plan,   // write the plan of the first phase with anything to measure, then stop (MeasurementPlanned)
    merge,  // take each phase from the journals of its `shards` shards; plan the first phase that has none
  };
  Mode mode = Mode::off;
  int shards = 0;                 // merge: how many shards measured each plan
  fs::path root;                  // plan.json and one folder per plan's shards
  std::vector<ProfileJob> probes;  // measured by every shard, to compare the devices' levels
  bool active() const { return mode != Mode::off; }
};

// What a sharded build stopped at: the plan written for the next phase (`file`), to be measured by the shards.
class MeasurementPlanned : public Error {
 public:
  MeasurementPlanned(const std::string& what, Json plan_summary) : Error(what), summary(std::move(plan_summary)) {}
  Json summary;  // {"plan", "phase", "measurements", "models", "file", "expected_s"}
};

struct ProfilerOptions {
  std::string backend;                 // backend name (builtin or registered)
  Json backend_config = Json::object();  // as read from backend_config.yaml
  fs::path registry_home;              // where registered plugins are looked up
  fs::path work_dir;                   // converted models go here
  double timeout_s = 300;              // per model, conversion and profiling together; a worker's start too
  fs::path worker_executable;          // nn-meter-worker; empty: find_worker_executable()
  std::string label;                   // shown in progress lines, e.g. the kernel name
  bool progress = true;                // progress line on a terminal (never when stderr is not a tty)
  uint64_t seed = 1;                   // of the shuffled measuring order
  // Fixed models measured at the start, after every DRIFT_PROBE_EVERY measurements and at the end of a
  // run, one record each in `journal` (its "repeat" counts the probe's measurements), to see slow drift.
  struct Probes {
    std::vector<ProfileJob> models;
    fs::path journal;
  };
  std::optional<Probes> probes;
  // Samples whose repeats have not settled (SETTLE_TOLERANCE) get one more repeat per shuffled round, up to
  // twice the protocol's cap (MAX_REPEATS, or REPEATS without adaptive repeats): `nn-meter build
  // --remeasure-noisy`. A fixed cap keeps a rerun a resume: it measures only what the cap still allows.
  bool remeasure_unsettled = false;
  Sharding sharding;
  std::string plan_id;  // a shard's: written into every record, so that the merge refuses another plan's journal

  // What every run sets: the backend with its config, where registered plugins are and where converted models
  // go, and the progress label; the rest keep the defaults above until a caller sets them.
  static ProfilerOptions of(std::string backend, Json backend_config, const Registry& registry, fs::path work_dir,
                            std::string label);
  // timeout_s, worker_executable, progress and sharding from a caller's settings that hold them under these names
  // (EvaluateSettings, the rule tester's and the builder's settings).
  template <class Settings>
  ProfilerOptions& run_as(const Settings& settings) {
    timeout_s = settings.timeout_s;
    worker_executable = settings.worker_executable;
    progress = settings.progress;
    sharding = settings.sharding;
    return *this;
  }
};

// One set of models with its own journal and error log (e.g. one kernel's samples). Several batches
// profiled together share one shuffled order, so slow drift of the device spreads over all of them.
struct ProfileBatch {
  std::vector<ProfileJob> jobs;
  fs::path journal;
  fs::path error_log;
  fs::path base_journal;  // read, never written: its records count as measured (a shard's view of the build's journal)
};


// Profiles every repeat of every job not yet in `journal` (REPEATS of options.backend_config, each
// repeat in a worker process that measures no other repeat of that job), appending one durable record per
// repeat, and returns the outcome of every job (from the journal for repeats done earlier). Failures also
// go to `error_log` with their reason, one line each.
std::map<std::string, ProfileOutcome> profile_models(const std::vector<ProfileJob>& jobs, const ProfilerOptions& options,
                                                     const fs::path& journal, const fs::path& error_log);
// The same for several batches in one shuffled order; one outcome map per batch.
std::vector<std::map<std::string, ProfileOutcome>> profile_batches(const std::vector<ProfileBatch>& batches,
                                                                   const ProfilerOptions& options);

// Measures shard `shard` of `shards` (1-based) of the plan in `root` (Sharding::root): the plan's jobs are dealt to
// the shards by expected time, and this shard's go into its own journals under root/<plan id>/<shard>-of-<shards>/,
// which a restart resumes and a second process on the same shard cannot open.
// Returns {"plan", "phase", "shard", "models", "folder"}.
struct ShardRun {
  std::string backend;  // must be the plan's
  fs::path registry_home;
  fs::path worker_executable;
  bool progress = true;
  // The shard's own --timeout: a device slower than the one that planned needs its own; absent: the plan's.
  std::optional<double> timeout_s;
};
Json measure_shard(const fs::path& root, int shard, int shards, const ShardRun& run);

// Slow drift of the device over a run, from a probe journal: per probe, each measurement relative to the
// median of the probe's first three (one measurement is one process's level, which may be far off).
struct DriftSeries {
  std::string probe;
  double start_t = 0;            // when the probe was first measured (seconds since the epoch)
  std::vector<double> minutes;  // since the probe's first measurement
  std::vector<double> ratio;    // latency / the median of the first three latencies
  double span_minutes() const { return minutes.empty() ? 0 : minutes.back(); }
  double end_ratio() const;     // the median of the last three ratios: where the run ended
  // Each ratio as the median of the three measurements around it (at the ends the first and last three): one
  // measurement is one process's level, which the repeats in other processes outvote; a move of the device's
  // level lasts for two measurements or more.
  std::vector<double> smoothed() const;
};
std::vector<DriftSeries> read_drift(const fs::path& probe_journal);
// "conv 3x3: +2.1% after 42 min (5 measurements, range -1.0%..+3.4%)" (the end against the start, each the median of
// three measurements), one line per probe; "" when there is nothing.
std::string describe_drift(const std::vector<DriftSeries>& drift);

// The device's level at any moment of a run, from its drift probes (PROBE_LEVELS normalize divides each repeat
// by it): per probe, its ratios smoothed by a running median of three (one measurement is one process's level)
// and interpolated linearly in time, held flat before the first and after the last; the geometric mean of the
// probes. 1 where nothing is known: no probe with two measurements, or a repeat of unknown time (t 0).
class DriftLevel {
 public:
  explicit DriftLevel(const std::vector<DriftSeries>& drift);
  bool empty() const { return series_.empty(); }
  double at(double t) const;

 private:
  std::vector<std::pair<std::vector<double>, std::vector<double>>> series_;  // per probe: times, smoothed ratios
};

// The worker side, run by `nn-meter-worker profile-worker`: reads requests on stdin, answers on `result_fd`.
int run_profile_worker(int result_fd);

// ---------------------------------------------------------------------------------------------------------
// The statistics of a sample's repeats

// The label of a sample from its repeats (each a repeat's own central value).
double repeat_label(const std::vector<double>& repeats_ms, RepeatStatistic statistic);
// Whether a sample's label can be final: min — the two lowest repeats agree within `tolerance` (the minimum was
// reached twice); median, mean — the label of all repeats is within `tolerance` of the label without the last.
// Fewer than two repeats never settle.
bool repeats_settled(const std::vector<double>& repeats_ms, RepeatStatistic statistic, double tolerance);

// How well the measurement repeats itself: each sample's repeats are split into two halves (alternating,
// in measuring order), each half gives its own label, and the two labels agree within ±5 % / ±10 % (of the
// smaller) for these shares of the samples. Samples with fewer than two repeats are left out. It is the
// ceiling for any predictor judged against one such label, and a conservative one: each half has half
// the repeats of the full label.
struct RepeatAgreement {
  size_t samples = 0;
  double within5 = 0, within10 = 0;
  double median_deviation = 0;  // median |a - b| / min(a, b) over the samples
  // The samples ranked by one half's labels against the other's: the ceiling of any ranking score.
  std::optional<double> kendall_tau;
  Json to_json() const;
};
RepeatAgreement split_half_agreement(const std::vector<std::vector<double>>& repeats_per_sample, RepeatStatistic statistic);

}  // namespace nnmeter
