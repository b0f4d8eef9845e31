// The measurement protocol, shared by every backend. A latency measured in one process does not repeat
// in the next one (the level is set per process), so a sample is measured in REPEATS independent
// repeats, each in a fresh worker process, the repeats of all samples interleaved in a shuffled order,
// and its label is a statistic of the repeats.
#pragma once

#include "nnmeter/backend.h"

namespace nnmeter {

// Its keys live in backend_config.yaml next to the backend's own; declared here once, they get defaults,
// validation and `backend NAME profile` flags for every backend, and they never reach the backend itself (backend_only()).
enum class RepeatStatistic { min, median, mean };

struct MeasurementProtocol {
  static constexpr int kMaxRepeats = 100;
  int repeats = 5;
  RepeatStatistic statistic = RepeatStatistic::min;
  // A drift probe (fixed models measured by the same protocol) every this many measurements; 0: none.
  int probe_every = 0;
  // Workers back large allocations with transparent huge pages (glibc's malloc hugetlb tunable).
  bool huge_pages = true;
  // Adaptive repeats (MAX_REPEATS > 0): every sample first gets min_repeats (MIN_REPEATS; 0: REPEATS), then one
  // more repeat per round, in a new shuffled order, while its repeats have not settled (repeats_settled with
  // SETTLE_TOLERANCE), up to max_repeats: repeats go where the noise is.
  int min_repeats = 0, max_repeats = 0;
  double settle_tolerance = 0.02;
  bool adaptive() const { return max_repeats > 0; }
  int first_repeats(int fixed) const { return adaptive() && min_repeats > 0 ? min_repeats : fixed; }

  // Reads the protocol keys of a backend config (defaults for absent keys); throws Error naming the key.
  static MeasurementProtocol from_config(const Json& config, const std::string& where = "backend_config.yaml");
};

const std::vector<BackendParam>& protocol_params();
// True for REPEATS, REPEAT_STATISTIC, ...: keys of the protocol rather than of the backend.
bool is_protocol_key(const std::string& key);
// The config without the protocol keys: what a backend is constructed with.
Json backend_only(const Json& config);
const char* to_string(RepeatStatistic statistic);
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
  Json to_json() const;
};
RepeatAgreement split_half_agreement(const std::vector<std::vector<double>>& repeats_per_sample, RepeatStatistic statistic);

}  // namespace nnmeter
