#include "nnmeter/protocol.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace nnmeter {

namespace {

constexpr int kMaxProbeEvery = 1000000;

}  // namespace

const std::vector<BackendParam>& protocol_params() {
  using T = BackendParam::Type;
  static const std::vector<BackendParam> params = {
      {"REPEATS", T::Int, 5,
       "Independent repeats of every measurement, each in a fresh worker process (the latency level is set per "
       "process; one process's rounds agree with each other but not with the next process)",
       1, MeasurementProtocol::kMaxRepeats},
      {"REPEAT_STATISTIC", T::String, "min",
       "The latency recorded from the repeats: min, median or mean (the minimum repeats best between runs)",
       std::nullopt, std::nullopt},
      {"DRIFT_PROBE_EVERY", T::Int, 0,
       "Measure the drift probes (fixed models) at the start and after every this many measurements, to report "
       "slow drift of the device over a long run; 0: no probes",
       0, kMaxProbeEvery},
      {"MIN_REPEATS", T::Int, 0,
       "With MAX_REPEATS: the repeats every sample gets before its repeats are judged settled; 0: REPEATS", 0,
       MeasurementProtocol::kMaxRepeats},
      {"MAX_REPEATS", T::Int, 0,
       "Adaptive repeats: a sample whose repeats have not settled (SETTLE_TOLERANCE) is repeated again, in a later "
       "shuffled round, up to this many times; 0: every sample gets exactly REPEATS",
       0, MeasurementProtocol::kMaxRepeats},
      {"SETTLE_TOLERANCE", T::Float, 0.02,
       "With MAX_REPEATS: repeats have settled when the two lowest agree within this fraction (REPEAT_STATISTIC "
       "min), or the label moves by less than it with the last repeat (median, mean)",
       0.0001, 1.0},
      {"SETTLE_CEILING", T::Float, 0.0,
       "With MAX_REPEATS: the samples of a kernel settle together: each gets one more repeat, in a later shuffled round, "
       "while fewer than this share of them have repeats whose halves agree within 10 % (e.g. 0.95); 0: each sample "
       "settles alone (SETTLE_TOLERANCE)",
       0.0, 1.0},
      {"SHARD_LEVELS", T::String, "off",
       "A build measured in shards (nn-meter build --shard): normalize divides each shard's labels by its level (its "
       "drift probes against the median of the shards), putting devices that run at different speeds on one level; "
       "off keeps the labels as measured (each shard's level is reported either way)",
       std::nullopt, std::nullopt},
      {"PROBE_LEVELS", T::String, "off",
       "With DRIFT_PROBE_EVERY: normalize divides every repeat by the drift probes' level at the time it was measured "
       "(their measurements smoothed and interpolated), so that samples measured before and after the machine's level "
       "moved are labelled on one level; off keeps the labels as measured (the drift is reported either way)",
       std::nullopt, std::nullopt},
      {"HUGE_PAGES", T::Bool, true,
       "Worker processes back large allocations with transparent huge pages (where the system offers them on "
       "request): loading and converting a model then touches a few large pages instead of thousands of small "
       "ones, which costs more than measuring many kernels; false: the system's default pages",
       std::nullopt, std::nullopt}};
  return params;
}

bool is_protocol_key(const std::string& key) {
  const auto& params = protocol_params();
  return std::any_of(params.begin(), params.end(), [&](const BackendParam& p) { return p.name == key; });
}

Json backend_only(const Json& config) {
  if (!config.is_object()) return config;
  Json out = Json::object();
  for (const auto& [key, value] : config.items())
    if (!is_protocol_key(key)) out[key] = value;
  return out;
}

const char* to_string(RepeatStatistic statistic) {
  switch (statistic) {
    case RepeatStatistic::min:
      return "min";
    case RepeatStatistic::median:
      return "median";
    case RepeatStatistic::mean:
      return "mean";
  }
  return "min";
}

namespace {

// A key's declaration in protocol_params(): its default and range come from there only.
const BackendParam& declared(const std::string& key) {
  const auto& params = protocol_params();
  const auto it = std::find_if(params.begin(), params.end(), [&](const BackendParam& p) { return p.name == key; });
  if (it == params.end()) throw Error("internal: no protocol key " + key);
  return *it;
}

}  // namespace

const Json& MeasurementProtocol::declared_default(const char* key) { return declared(key).default_value; }

std::optional<RepeatStatistic> repeat_statistic(const std::string& name) {
  for (const RepeatStatistic s : {RepeatStatistic::min, RepeatStatistic::median, RepeatStatistic::mean})
    if (name == to_string(s)) return s;
  return std::nullopt;
}

MeasurementProtocol MeasurementProtocol::from_config(const Json& config, const std::string& where) {
  MeasurementProtocol p;
  if (!config.is_object()) return p;
  const auto given = [&](const char* key) { return config.contains(key) && !config[key].is_null(); };
  auto integer = [&](const char* key, int& out) {
    if (!given(key)) return;
    const BackendParam& d = declared(key);
    const Json& v = config[key];
    if (!v.is_number_integer() || v.get<long long>() < *d.min || v.get<long long>() > *d.max)
      throw Error(fmt::format("{}: {} must be an integer from {} to {}, got {}", where, key, static_cast<long long>(*d.min),
                              static_cast<long long>(*d.max), v.dump()));
    out = v.get<int>();
  };
  auto number = [&](const char* key, double& out) {
    if (!given(key)) return;
    const BackendParam& d = declared(key);
    const Json& v = config[key];
    if (!v.is_number() || !(v.get<double>() >= *d.min) || v.get<double>() > *d.max)
      throw Error(fmt::format("{}: {} must be a number in [{}, {}], got {}", where, key, *d.min, *d.max, v.dump()));
    out = v.get<double>();
  };
  integer("REPEATS", p.repeats);
  integer("DRIFT_PROBE_EVERY", p.probe_every);
  integer("MIN_REPEATS", p.min_repeats);
  integer("MAX_REPEATS", p.max_repeats);
  number("SETTLE_TOLERANCE", p.settle_tolerance);
  number("SETTLE_CEILING", p.settle_ceiling);
  if (p.settle_ceiling > 0 && !p.adaptive())
    throw Error(fmt::format("{}: SETTLE_CEILING needs MAX_REPEATS (the most repeats a sample may get)", where));
  if (p.adaptive() && p.first_repeats(p.repeats) > p.max_repeats)
    throw Error(fmt::format("{}: {} ({}) must not exceed MAX_REPEATS ({})", where,
                            p.min_repeats > 0 ? "MIN_REPEATS" : "REPEATS", p.first_repeats(p.repeats), p.max_repeats));
  if (given("HUGE_PAGES")) {
    if (!config["HUGE_PAGES"].is_boolean())
      throw Error(fmt::format("{}: HUGE_PAGES must be true or false, got {}", where, config["HUGE_PAGES"].dump()));
    p.huge_pages = config["HUGE_PAGES"].get<bool>();
  }
  // normalize or off; absent: off.
  const auto normalize = [&](const char* key) {
    if (!given(key)) return false;
    const Json& v = config[key];
    // YAML reads a bare `off` as false.
    const std::string s = v.is_string() ? v.get<std::string>() : v.is_boolean() && !v.get<bool>() ? "off" : "";
    if (s != "normalize" && s != "off") throw Error(fmt::format("{}: {} must be normalize or off, got {}", where, key, v.dump()));
    return s == "normalize";
  };
  p.normalize_shard_levels = normalize("SHARD_LEVELS");
  p.normalize_probe_levels = normalize("PROBE_LEVELS");
  if (given("REPEAT_STATISTIC")) {
    const Json& v = config["REPEAT_STATISTIC"];
    const auto s = repeat_statistic(v.is_string() ? v.get<std::string>() : "");
    if (!s) throw Error(fmt::format("{}: REPEAT_STATISTIC must be min, median or mean, got {}", where, v.dump()));
    p.statistic = *s;
  }
  return p;
}

}  // namespace nnmeter
