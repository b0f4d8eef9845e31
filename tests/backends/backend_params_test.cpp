// A backend's declared parameters resolved against its config: defaults, types and ranges.
#include <gtest/gtest.h>

#include <cmath>

#include "common/io.h"
#include "nnmeter/backend.h"
#include "nnmeter/registry.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

std::vector<BackendParam> params() {
  return {{"NUM_THREADS", BackendParam::Type::Int, 1, "threads", 1, 64},
          {"MIN_TIME_MS", BackendParam::Type::Float, 10.0, "minimum measuring time", {}, {}},
          {"PIN", BackendParam::Type::Bool, true, "pin to a core", {}, {}},
          {"ISA", BackendParam::Type::String, "", "instruction set cap", {}, {}}};
}

// Values the backend would silently turn into others: out of the declared range, NaN, infinities, and
// integers a 32-bit int cannot hold when no range is declared.
TEST(BackendParams, RangesAndNonFiniteValuesAreRefused) {
  const auto error = [](const Json& config) {
    return test::error_of([&] { resolve_backend_config(params(), config, "cfg.yaml"); });
  };
  EXPECT_EQ(error({{"NUM_THREADS", 65}}), "cfg.yaml: key 'NUM_THREADS' must be an integer in [1, 64], got 65");
  EXPECT_EQ(error({{"NUM_THREADS", 0}}), "cfg.yaml: key 'NUM_THREADS' must be an integer in [1, 64], got 0");
  EXPECT_EQ(error({{"MIN_TIME_MS", std::nan("")}}), "cfg.yaml: key 'MIN_TIME_MS' must be a number (finite), got nan");
  EXPECT_EQ(error({{"MIN_TIME_MS", HUGE_VAL}}), "cfg.yaml: key 'MIN_TIME_MS' must be a number (finite), got inf");
  EXPECT_EQ(error({{"MIN_TIME_MS", 1e300}}), "");
  std::vector<BackendParam> unbounded = params();
  unbounded[0].min = unbounded[0].max = std::nullopt;
  EXPECT_EQ(test::error_of([&] { resolve_backend_config(unbounded, Json{{"NUM_THREADS", 4294967297}}, "cfg.yaml"); }),
            "cfg.yaml: key 'NUM_THREADS' must be an integer of 32 bits, got 4294967297");
}

TEST(BackendParams, DefaultsAreFilledAndTypesChecked) {
  const Json resolved = resolve_backend_config(params(), Json{{"NUM_THREADS", 2}, {"MIN_TIME_MS", 5}}, "cfg.yaml");
  EXPECT_EQ(resolved["NUM_THREADS"], 2);
  EXPECT_DOUBLE_EQ(resolved["MIN_TIME_MS"].get<double>(), 5.0);
  EXPECT_EQ(resolved["PIN"], true);
  EXPECT_EQ(resolved["ISA"], "");
  try {
    resolve_backend_config(params(), Json{{"NUM_THREAD", 2}}, "cfg.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cfg.yaml: unknown key 'NUM_THREAD' (known keys: NUM_THREADS, MIN_TIME_MS, PIN, ISA, REPEATS, "
                                   "REPEAT_STATISTIC, DRIFT_PROBE_EVERY, MIN_REPEATS, MAX_REPEATS, SETTLE_TOLERANCE, SETTLE_CEILING, "
                                   "SHARD_LEVELS, PROBE_LEVELS, HUGE_PAGES)");
  }
  try {
    resolve_backend_config(params(), Json{{"NUM_THREADS", "two"}}, "cfg.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cfg.yaml: key 'NUM_THREADS' must be int but is \"two\"");
  }
  EXPECT_THROW(resolve_backend_config(params(), Json::array(), "cfg.yaml"), Error);
}

TEST(BackendParams, DefaultYamlRoundTripsThroughValidation) {
  const std::string yaml = default_backend_config_yaml(params());
  EXPECT_NE(yaml.find("# threads (int)\nNUM_THREADS: 1\n"), std::string::npos) << yaml;
  const Json loaded = io::yaml_to_json(yaml, "default");
  EXPECT_EQ(resolve_backend_config(params(), loaded, "default"), resolve_backend_config(params(), Json::object(), "d"));
}

}  // namespace
}  // namespace nnmeter

namespace nnmeter {
namespace {

// The rule tester asks a backend how to profile warm instead of rewriting a key it guesses: the in-process
// engines declare it (their COLD_CACHE off, everything else kept); device backends run warm already.
TEST(BackendCapabilities, InProcessEnginesDeclareWarmProfiling) {
  for (const auto& info : builtin_backends()) {
    const bool in_process = info.name == "onednn_cpu" || info.name == "xnnpack_cpu";
    EXPECT_EQ(static_cast<bool>(info.warm_profiling), in_process) << info.name;
    if (!in_process) continue;
    const Json warm = info.warm_profiling({{"COLD_CACHE", true}, {"NUM_RUNS", 7}});
    EXPECT_EQ(warm, (Json{{"COLD_CACHE", false}, {"NUM_RUNS", 7}})) << info.name;
  }
}

}  // namespace
}  // namespace nnmeter
