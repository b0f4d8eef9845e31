// The measurement protocol, shared by every backend. A latency measured in one process does not repeat in the
// next one (the level is set per process), so a sample is measured in REPEATS independent repeats, each in a
// fresh worker process, the repeats of all samples interleaved in a shuffled order, and its label is a
// statistic of the repeats. This header declares the protocol's keys; the statistics of the repeats are in
// nnmeter/profiling.h.
#pragma once

#include <optional>

#include "nnmeter/backend_config.h"

namespace nnmeter {

// Its keys live in backend_config.yaml next to the backend's own; declared here once, they get defaults,
// validation and `backend NAME profile` flags for every backend, and they never reach the backend itself (backend_only()).
enum class RepeatStatistic { min, median, mean };
// "min", "median" or "mean" as a statistic; nullopt for any other text.
std::optional<RepeatStatistic> repeat_statistic(const std::string& name);

// Each key's default and range are declared once, in protocol_params(); the members take their defaults from there.
struct MeasurementProtocol {
  static constexpr int kMaxRepeats = 100;
  int repeats = declared_default("REPEATS").get<int>();
  RepeatStatistic statistic = *repeat_statistic(declared_default("REPEAT_STATISTIC").get<std::string>());
  // A drift probe (fixed models measured by the same protocol) every this many measurements; 0: none.
  int probe_every = declared_default("DRIFT_PROBE_EVERY").get<int>();
  // Workers back large allocations with transparent huge pages (glibc's malloc hugetlb tunable).
  bool huge_pages = declared_default("HUGE_PAGES").get<bool>();
  // Adaptive repeats (MAX_REPEATS > 0): every sample first gets min_repeats (MIN_REPEATS; 0: REPEATS), then one
  // more repeat per round, in a new shuffled order, while its repeats have not settled (repeats_settled with
  // SETTLE_TOLERANCE), up to max_repeats: repeats go where the noise is.
  int min_repeats = declared_default("MIN_REPEATS").get<int>();
  int max_repeats = declared_default("MAX_REPEATS").get<int>();
  double settle_tolerance = declared_default("SETTLE_TOLERANCE").get<double>();
  // SETTLE_CEILING (> 0, with MAX_REPEATS): the samples of a kernel settle together instead, every one of them
  // getting one more repeat per round while their split-half agreement within ±10 % is below this share. A rule
  // per sample stops on two repeats that agree by chance; on a quiet machine that made labels repeat no better
  // than fixed repeats of the same cost (bench/RESULTS-adaptive-repeats.md), while a kernel's ceiling, taken
  // over all its samples, tells how many repeats that kernel needs.
  double settle_ceiling = declared_default("SETTLE_CEILING").get<double>();
  // SHARD_LEVELS normalize: a sharded build's labels are divided by their shard's level (docs/sharding.md).
  bool normalize_shard_levels = declared_default("SHARD_LEVELS") == "normalize";
  // PROBE_LEVELS normalize: each repeat is divided by the drift probes' level when it was measured (DriftLevel in
  // nnmeter/profiling.h), so samples measured before and after the machine slowed share one level.
  bool normalize_probe_levels = declared_default("PROBE_LEVELS") == "normalize";
  bool adaptive() const { return max_repeats > 0; }
  int first_repeats(int fixed) const { return adaptive() && min_repeats > 0 ? min_repeats : fixed; }

  // Reads the protocol keys of a backend config (defaults for absent keys); throws Error naming the key.
  static MeasurementProtocol from_config(const Json& config, const std::string& where = "backend_config.yaml");
  // A key's default as protocol_params() declares it.
  static const Json& declared_default(const char* key);
};

const std::vector<BackendParam>& protocol_params();
// True for REPEATS, REPEAT_STATISTIC, ...: keys of the protocol rather than of the backend.
bool is_protocol_key(const std::string& key);
// The config without the protocol keys: what a backend is constructed with.
Json backend_only(const Json& config);
const char* to_string(RepeatStatistic statistic);
}  // namespace nnmeter
