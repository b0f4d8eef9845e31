// Adaptive repeats through the real profiler and worker processes, on the chaos backend's reproducible level
// noise: repeats go where the noise is, each sample says why its repeats stopped, and a rerun resumes without
// measuring anything twice.
#include <fmt/format.h>
#include <algorithm>
#include <gtest/gtest.h>

#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "support/plugin_fixtures.h"
#include "support/test_support.h"

namespace nnmeter::test {
namespace {

struct Measured {
  std::map<std::string, ProfileOutcome> outcomes;
  size_t calls = 0;  // profile calls the backend saw
};

Measured profile(const TempDir& tmp, const std::string& name, double noise, int min_repeats, int max_repeats,
                 const Json& more_config = Json::object()) {
  ProfilerOptions options;
  options.backend = "chaos";
  options.backend_config = {{"COUNTER", (tmp / (name + ".calls")).string()},
                            {"SPREAD", 0.0},
                            {"LEVEL_NOISE", noise},
                            {"NOISE_STATE", (tmp / (name + ".noise")).string()},
                            {"REPEATS", min_repeats},
                            {"MAX_REPEATS", max_repeats},
                            {"SETTLE_TOLERANCE", 0.02}};
  options.backend_config.update(more_config);
  options.registry_home = tmp / "home";
  options.work_dir = tmp / (name + "_work");
  options.timeout_s = 30;
  options.worker_executable = NNMETER_WORKER_PATH;
  options.label = name;
  options.progress = false;
  std::vector<ProfileJob> jobs;
  for (int i = 0; i < 12; ++i) {
    const std::string id = fmt::format("model{:02d}", i);
    const fs::path model = tmp / (name + "_models") / (id + ".onnx");
    write_text(model, "model " + id);
    jobs.push_back({id, model, {}});
  }
  Measured run;
  run.outcomes = profile_models(jobs, options, tmp / (name + ".jsonl"), tmp / (name + "_errors.log"));
  run.calls = count_lines(tmp / (name + ".calls"));
  return run;
}

TEST(AdaptiveRepeats, RepeatsGoWhereTheNoiseIs) {
  TempDir tmp;
  Registry(tmp / "home").register_module(ModuleKind::Backend, make_chaos_package(tmp / "chaos"));

  // A quiet backend: every sample settles on its first repeats.
  const Measured quiet = profile(tmp, "quiet", 0.0, 3, 8);
  EXPECT_EQ(quiet.calls, 12u * 3);
  for (const auto& [id, o] : quiet.outcomes) {
    EXPECT_EQ(o.repeats_ms.size(), 3u) << id;
    EXPECT_EQ(o.stopped, "settled") << id;
  }

  // A level that moves ±30 % between processes: the samples that have not settled get more, up to the cap.
  const Measured noisy = profile(tmp, "noisy", 0.3, 3, 8);
  size_t more = 0, total = 0;
  for (const auto& [id, o] : noisy.outcomes) {
    ASSERT_TRUE(o.ok) << id;
    EXPECT_GE(o.repeats_ms.size(), 3u) << id;
    EXPECT_LE(o.repeats_ms.size(), 8u) << id;
    total += o.repeats_ms.size();
    more += o.repeats_ms.size() > 3;
    if (o.stopped == "max_repeats") {
      EXPECT_EQ(o.repeats_ms.size(), 8u) << id;
      EXPECT_FALSE(repeats_settled(o.repeats_ms, RepeatStatistic::min, 0.02)) << id;
    } else {
      EXPECT_EQ(o.stopped, "settled") << id;
      EXPECT_TRUE(repeats_settled(o.repeats_ms, RepeatStatistic::min, 0.02)) << id;
    }
  }
  EXPECT_GT(more, 0u) << "some sample needed more than its first repeats";
  EXPECT_EQ(noisy.calls, total) << "every call is one journaled repeat";

  // Run again on the same journal: everything is there, nothing is measured again, the same outcomes.
  const Measured again = profile(tmp, "noisy", 0.3, 3, 8);
  EXPECT_EQ(again.calls, noisy.calls);
  for (const auto& [id, o] : again.outcomes) {
    EXPECT_EQ(o.repeats_ms, noisy.outcomes.at(id).repeats_ms) << id;
    EXPECT_EQ(o.stopped, noisy.outcomes.at(id).stopped) << id;
  }
}

// A heavy tail (a third of the calls 3x slower, another process's burst): the minimum of the repeats shrugs it
// off, and the samples the tail hit get the repeats that show it.
TEST(AdaptiveRepeats, TheMinimumShrugsOffAHeavyTail) {
  TempDir tmp;
  Registry(tmp / "home").register_module(ModuleKind::Backend, make_chaos_package(tmp / "chaos"));
  const Measured tailed = profile(tmp, "tailed", 0.0, 3, 8, {{"HEAVY_TAIL", 0.33}});
  size_t hit = 0, more = 0;
  for (const auto& [id, o] : tailed.outcomes) {
    ASSERT_TRUE(o.ok) << id;
    EXPECT_DOUBLE_EQ(o.latency.value_ms, 2.0) << id << ": the label is the quiet level";
    EXPECT_EQ(o.stopped, "settled") << id;
    const bool slow_first = std::count(o.repeats_ms.begin(), o.repeats_ms.begin() + 3, 6.0) >= 2;
    hit += std::count(o.repeats_ms.begin(), o.repeats_ms.end(), 6.0) > 0;
    more += o.repeats_ms.size() > 3;
    EXPECT_EQ(o.repeats_ms.size() > 3, slow_first) << id << ": more repeats exactly where two of the first three were slow";
  }
  EXPECT_GT(hit, 0u) << "the tail hit some repeats";
  EXPECT_GT(more, 0u) << "and some samples needed more repeats to settle";
}

}  // namespace
}  // namespace nnmeter::test
