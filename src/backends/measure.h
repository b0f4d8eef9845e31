// Latency measurement on a shared machine. The timer covers one call of `run` (the whole pipeline, inputs
// already in place, outputs not read back). Repeatability comes from rounds: each round is warm and
// long enough to amortize the timer, its statistic is the median of its runs, and the reported value
// is the median across rounds. Rounds during which other processes used the pinned CPUs are measured
// again, so interference is waited out instead of averaged in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "nnmeter/backend.h"
#include "nnmeter/latency.h"

namespace nnmeter::backends {

struct MeasureSettings {
  int threads = 1;
  int warmup_runs = 10;
  int runs = 20;          // measured runs per round (at least)
  int rounds = 5;
  double min_time_ms = 20;  // per round: keep running until both `runs` and this are reached
  double max_time_ms = 1000;  // per round and for the warm-up: stop early past this (0: never), see measure()
  bool pin = true;          // pin the measuring threads to the least busy CPUs
  double max_busy = 0.10;   // max share of the pinned CPUs other processes may use during a round
  int max_retries = 10;     // rounds re-measured at most, in total
  size_t cold_fill_bytes = 0;  // COLD_CACHE_FILL_MB: scratch written before each cold run
};

// The measurement parameters every in-process backend declares (WARMUP_RUNS, NUM_RUNS, NUM_ROUNDS,
// MIN_TIME_MS, MAX_TIME_MS, COLD_CACHE, COLD_CACHE_FILL_MB, PIN_CPU, MAX_BUSY, MAX_RETRIES), so their configs read alike.
std::vector<BackendParam> measurement_params();
// The settings of a config resolved against measurement_params(), for `threads` measuring threads.
MeasureSettings measure_settings(const Json& config, int threads);
// `config` with COLD_CACHE off: the warm_profiling capability of the backends that declare these params.
Json warm_caches(Json config);

struct Measurement {
  LatencyStats stats;                // one sample per round: the round's median run, ms
  std::vector<double> run_samples_ms;  // every accepted run, in order
  double run_cv = 0;                 // coefficient of variation over all accepted runs
  double first_run_ms = 0;           // the first (cold) call, before warm-up
  int discarded_rounds = 0;
  std::vector<int> cpus;             // CPUs the threads were pinned to; empty when not pinned
};

// `before_each_timed_run`, when given, runs untimed before every timed run (not before the cold run or
// the warm-up runs).
Measurement measure(const std::function<void()>& run, const MeasureSettings& settings,
                    const std::function<void()>& before_each_timed_run = {});

struct ByteRange {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// Writes back and evicts every cache line of the ranges from all cache levels of every core (CLFLUSHOPT,
// or CLFLUSH on CPUs without it). Cost grows with the ranges, not with the size of the caches.
void evict_from_caches(const std::vector<ByteRange>& ranges);

// Writes `bytes` of a scratch buffer the process keeps (split over `threads` OpenMP threads), so every
// cache level, the TLBs and the page-walk caches hold other, modified data: the state the layers before it
// leave a kernel in inside a large network. Without it a kernel measured alone after an eviction finds empty
// caches and warm TLBs, and runs faster than it does there; a small network's own data stays cached from
// layer to layer, which the eviction alone matches better (docs/profiling.md).
void fill_caches_with_scratch(size_t bytes, int threads);

// Rewrites every cache line of the ranges with its own value, split over `threads` OpenMP threads, so
// the lines sit modified in those cores' caches, as a producer leaves its output.
void write_back_into_cache(const std::vector<ByteRange>& ranges, int threads);

// Fixed-seed inputs (uniform in [-1, 1)) for the named input shapes: what the profilers time with.
std::vector<Tensor> random_inputs(const std::vector<std::pair<std::string, Shape>>& specs, uint32_t seed = 0);

// The p-th percentile (0..100) by linear interpolation; 0 for no samples.
double percentile(std::vector<double> samples, double p);

}  // namespace nnmeter::backends
