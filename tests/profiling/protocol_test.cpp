// The measurement protocol's keys, the label of a sample's repeats and the split-half repeatability.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "nnmeter/profiling.h"
#include "nnmeter/protocol.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

std::vector<BackendParam> own_params() { return {{"NUM_RUNS", BackendParam::Type::Int, 10, "runs", 1, 1000}}; }

TEST(Protocol, KeysAreEveryBackendsAndNeverReachTheBackend) {
  const Json resolved = resolve_backend_config(own_params(), Json{{"REPEATS", 3}}, "cfg.yaml");
  EXPECT_EQ(resolved["REPEATS"], 3);
  EXPECT_EQ(resolved["REPEAT_STATISTIC"], "min");
  EXPECT_EQ(resolved["HUGE_PAGES"], true);
  EXPECT_TRUE(MeasurementProtocol::from_config(resolved).huge_pages);
  EXPECT_FALSE(MeasurementProtocol::from_config(Json{{"HUGE_PAGES", false}}).huge_pages);
  EXPECT_EQ(resolved["NUM_RUNS"], 10);
  EXPECT_EQ(backend_only(resolved), (Json{{"NUM_RUNS", 10}}));
  // A plugin that declares nothing still gets its own keys as written, and the protocol's defaults.
  const Json plain = resolve_backend_config({}, Json{{"ANYTHING", 1}}, "cfg.yaml");
  EXPECT_EQ(plain["ANYTHING"], 1);
  EXPECT_EQ(plain["REPEATS"], 5);
  EXPECT_EQ(backend_only(plain), (Json{{"ANYTHING", 1}}));
  const std::string yaml = default_backend_config_yaml(own_params());
  EXPECT_NE(yaml.find("\nREPEATS: 5\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("\nREPEAT_STATISTIC: min\n"), std::string::npos) << yaml;
}

TEST(Protocol, BadValuesAreOneLineErrorsNamingTheKey) {
  const std::vector<std::pair<Json, std::string>> cases = {
      {Json{{"REPEATS", 0}}, "cfg.yaml: REPEATS must be an integer from 1 to 100, got 0"},
      {Json{{"REPEATS", 101}}, "cfg.yaml: REPEATS must be an integer from 1 to 100, got 101"},
      {Json{{"REPEATS", 2.5}}, "cfg.yaml: REPEATS must be an integer from 1 to 100, got 2.5"},
      {Json{{"REPEATS", "five"}}, "cfg.yaml: REPEATS must be an integer from 1 to 100, got \"five\""},
      {Json{{"REPEAT_STATISTIC", "max"}}, "cfg.yaml: REPEAT_STATISTIC must be min, median or mean, got \"max\""},
      {Json{{"DRIFT_PROBE_EVERY", -1}}, "cfg.yaml: DRIFT_PROBE_EVERY must be an integer from 0 to 1000000, got -1"},
      {Json{{"HUGE_PAGES", "yes"}}, "cfg.yaml: HUGE_PAGES must be true or false, got \"yes\""}};
  for (const auto& [config, message] : cases) {
    try {
      resolve_backend_config(own_params(), config, "cfg.yaml");
      ADD_FAILURE() << config.dump();
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

TEST(Protocol, AdaptiveRepeatsKeysAndTheirMistakes) {
  const MeasurementProtocol fixed = MeasurementProtocol::from_config(Json{{"REPEATS", 5}});
  EXPECT_FALSE(fixed.adaptive());
  EXPECT_EQ(fixed.first_repeats(5), 5);
  const MeasurementProtocol a =
      MeasurementProtocol::from_config(Json{{"REPEATS", 3}, {"MAX_REPEATS", 10}, {"SETTLE_TOLERANCE", 0.01}});
  EXPECT_TRUE(a.adaptive());
  EXPECT_EQ(a.first_repeats(3), 3);
  EXPECT_DOUBLE_EQ(a.settle_tolerance, 0.01);
  EXPECT_EQ(MeasurementProtocol::from_config(Json{{"MIN_REPEATS", 2}, {"MAX_REPEATS", 6}}).first_repeats(5), 2);
  auto error = [](const Json& config) {
    try {
      MeasurementProtocol::from_config(config, "cfg.yaml");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(Json{{"MIN_REPEATS", 8}, {"MAX_REPEATS", 4}}), "cfg.yaml: MIN_REPEATS (8) must not exceed MAX_REPEATS (4)");
  EXPECT_EQ(error(Json{{"REPEATS", 8}, {"MAX_REPEATS", 4}}), "cfg.yaml: REPEATS (8) must not exceed MAX_REPEATS (4)");
  EXPECT_NE(error(Json{{"SETTLE_TOLERANCE", 0}}).find("SETTLE_TOLERANCE must be a number in [0.0001, 1], got 0"), std::string::npos);
  EXPECT_NE(error(Json{{"SETTLE_TOLERANCE", -0.1}}).find("SETTLE_TOLERANCE"), std::string::npos);
  EXPECT_NE(error(Json{{"MAX_REPEATS", "many"}}).find("MAX_REPEATS must be an integer"), std::string::npos);
  EXPECT_DOUBLE_EQ(
      MeasurementProtocol::from_config(Json{{"MAX_REPEATS", 10}, {"SETTLE_CEILING", 0.95}}).settle_ceiling, 0.95);
  EXPECT_EQ(error(Json{{"SETTLE_CEILING", 0.95}}),
            "cfg.yaml: SETTLE_CEILING needs MAX_REPEATS (the most repeats a sample may get)");
  EXPECT_EQ(error(Json{{"MAX_REPEATS", 10}, {"SETTLE_CEILING", 95}}),
            "cfg.yaml: SETTLE_CEILING must be a number in [0, 1], got 95");
  EXPECT_NE(error(Json{{"MAX_REPEATS", 10}, {"SETTLE_CEILING", "high"}}).find("SETTLE_CEILING"), std::string::npos);
  // The declared params reject the same through every backend's config.
  EXPECT_THROW(resolve_backend_config(own_params(), Json{{"SETTLE_TOLERANCE", "tight"}}, "cfg.yaml"), Error);
}

// One declaration per key (protocol_params()): a default-constructed protocol holds the declared defaults, and
// from_config takes exactly the declared range of every numeric key.
TEST(Protocol, EveryKeysDefaultAndRangeAreTheDeclaredOnes) {
  const MeasurementProtocol defaults;
  const Json declared = resolve_backend_config({}, Json::object(), "cfg.yaml");
  EXPECT_EQ(defaults.repeats, declared["REPEATS"].get<int>());
  EXPECT_EQ(to_string(defaults.statistic), declared["REPEAT_STATISTIC"].get<std::string>());
  EXPECT_EQ(defaults.probe_every, declared["DRIFT_PROBE_EVERY"].get<int>());
  EXPECT_EQ(defaults.min_repeats, declared["MIN_REPEATS"].get<int>());
  EXPECT_EQ(defaults.max_repeats, declared["MAX_REPEATS"].get<int>());
  EXPECT_DOUBLE_EQ(defaults.settle_tolerance, declared["SETTLE_TOLERANCE"].get<double>());
  EXPECT_DOUBLE_EQ(defaults.settle_ceiling, declared["SETTLE_CEILING"].get<double>());
  EXPECT_EQ(defaults.huge_pages, declared["HUGE_PAGES"].get<bool>());
  EXPECT_EQ(defaults.normalize_shard_levels, declared["SHARD_LEVELS"] == "normalize");
  EXPECT_EQ(defaults.normalize_probe_levels, declared["PROBE_LEVELS"] == "normalize");
  size_t ranged = 0;
  for (const BackendParam& p : protocol_params()) {
    if (!p.min || !p.max) continue;
    ++ranged;
    const bool integer = p.type == BackendParam::Type::Int;
    const auto with = [&](double v) {
      Json config = {{"MAX_REPEATS", MeasurementProtocol::kMaxRepeats}};
      config[p.name] = integer ? Json(static_cast<long long>(v)) : Json(v);
      return config;
    };
    EXPECT_NO_THROW(MeasurementProtocol::from_config(with(*p.min))) << p.name;
    EXPECT_NO_THROW(MeasurementProtocol::from_config(with(*p.max))) << p.name;
    std::vector<double> outside = {*p.min - 1, *p.max + 1};
    if (!integer && *p.min > 0) outside.push_back(*p.min / 2);  // a float's lower bound is its own, not 0
    for (const double v : outside)
      EXPECT_NE(test::error_of([&] { MeasurementProtocol::from_config(with(v), "cfg.yaml"); })
                    .find("cfg.yaml: " + p.name + " must be"),
                std::string::npos)
          << p.name << " " << v;
  }
  EXPECT_EQ(ranged, 6u);
}

// SHARD_LEVELS and PROBE_LEVELS: normalize or off.
TEST(Protocol, LevelsAreNormalizeOrOff) {
  for (const char* key : {"SHARD_LEVELS", "PROBE_LEVELS"}) {
    const auto normalized = [&](const Json& config) {
      const MeasurementProtocol p = MeasurementProtocol::from_config(config, "cfg.yaml");
      return std::string(key) == "SHARD_LEVELS" ? p.normalize_shard_levels : p.normalize_probe_levels;
    };
    EXPECT_FALSE(normalized(Json::object())) << key;
    EXPECT_TRUE(normalized(Json{{key, "normalize"}})) << key;
    EXPECT_FALSE(normalized(Json{{key, "off"}})) << key;
    EXPECT_FALSE(normalized(Json{{key, false}})) << key;  // YAML reads a bare `off` as false.
    for (const Json& bad : {Json("normalise"), Json(true), Json(1)}) {
      try {
        normalized(Json{{key, bad}});
        ADD_FAILURE() << key << " " << bad.dump();
      } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), fmt::format("cfg.yaml: {} must be normalize or off, got {}", key, bad.dump()));
      }
    }
  }
}

TEST(Protocol, RepeatsSettleWhenTheStatisticStopsMoving) {
  // min: the two lowest within the tolerance of each other.
  EXPECT_FALSE(repeats_settled({2.0}, RepeatStatistic::min, 0.02));
  EXPECT_TRUE(repeats_settled({2.5, 2.0, 2.03}, RepeatStatistic::min, 0.02));
  EXPECT_FALSE(repeats_settled({2.5, 2.0, 2.1}, RepeatStatistic::min, 0.02));
  EXPECT_TRUE(repeats_settled({2.5, 2.0, 2.1}, RepeatStatistic::min, 0.06));
  // median / mean: the last repeat moved the label by no more than the tolerance.
  EXPECT_TRUE(repeats_settled({2.0, 2.2, 2.1, 2.1}, RepeatStatistic::median, 0.02));
  EXPECT_FALSE(repeats_settled({2.0, 2.0, 3.0}, RepeatStatistic::mean, 0.02));
}

TEST(Protocol, LabelIsTheChosenStatisticOfTheRepeats) {
  const std::vector<double> r = {3.0, 1.0, 2.0, 6.0};
  EXPECT_DOUBLE_EQ(repeat_label(r, RepeatStatistic::min), 1.0);
  EXPECT_DOUBLE_EQ(repeat_label(r, RepeatStatistic::median), 2.5);
  EXPECT_DOUBLE_EQ(repeat_label(r, RepeatStatistic::mean), 3.0);
  EXPECT_DOUBLE_EQ(repeat_label({}, RepeatStatistic::min), 0.0);
  EXPECT_EQ(MeasurementProtocol::from_config(Json{{"REPEAT_STATISTIC", "median"}}).statistic, RepeatStatistic::median);
}

TEST(Protocol, SplitHalfAgreementComparesAlternatingHalves) {
  // Halves {r0, r2, ...} and {r1, r3, ...}: minima 1.0/1.04 (4 % apart), 1.0/1.08 (8 %), 1.0/1.2 (20 %).
  const std::vector<std::vector<double>> repeats = {
      {1.0, 1.04, 1.1, 1.3}, {1.0, 1.08, 1.2, 1.5}, {1.2, 1.0, 1.3, 1.25}, {5.0}};
  const RepeatAgreement a = split_half_agreement(repeats, RepeatStatistic::min);
  EXPECT_EQ(a.samples, 3u);  // one repeat cannot be split
  EXPECT_NEAR(a.within5, 1.0 / 3, 1e-12);
  EXPECT_NEAR(a.within10, 2.0 / 3, 1e-12);
  EXPECT_NEAR(a.median_deviation, 0.08, 1e-12);
  EXPECT_EQ(split_half_agreement({}, RepeatStatistic::min).samples, 0u);
}

}  // namespace
}  // namespace nnmeter
