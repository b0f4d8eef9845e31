// Adaptive repeats through the real profiler and worker processes, on the chaos backend's reproducible level
// noise: repeats go where the noise is, each sample says why its repeats stopped, and a rerun resumes without
// measuring anything twice. And PROBE_LEVELS normalize on its drift: the labels lose it, the journal keeps it.
#include <fmt/format.h>
#include <algorithm>
#include <sstream>
#include <gtest/gtest.h>

#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "profiling/journal.h"
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
  const auto job = [&](const std::string& id) {
    const fs::path model = tmp / (name + "_models") / (id + ".onnx");
    write_text(model, "model " + id);
    return ProfileJob{id, model, {}};
  };
  for (int i = 0; i < 12; ++i) jobs.push_back(job(fmt::format("model{:02d}", i)));
  if (more_config.contains("DRIFT_PROBE_EVERY"))
    options.probes = ProfilerOptions::Probes{{job("probe_conv"), job("probe_dw")}, tmp / (name + "_probes.jsonl")};
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

// SETTLE_CEILING: a kernel's samples settle together. On the quiet backend its first repeats are enough; under
// level noise every sample gets the same further repeats until their halves agree as often as asked, or the cap.
TEST(AdaptiveRepeats, AKernelsSamplesSettleTogetherOnItsCeiling) {
  TempDir tmp;
  Registry(tmp / "home").register_module(ModuleKind::Backend, make_chaos_package(tmp / "chaos"));
  const Json by_kernel = {{"SETTLE_CEILING", 0.95}};

  const Measured quiet = profile(tmp, "quiet", 0.0, 3, 8, by_kernel);
  EXPECT_EQ(quiet.calls, 12u * 3);
  for (const auto& [id, o] : quiet.outcomes) EXPECT_EQ(o.stopped, "settled") << id;

  for (const double noise : {0.1, 0.3}) {
    const std::string name = fmt::format("noisy{}", noise);
    const Measured noisy = profile(tmp, name, noise, 3, 8, by_kernel);
    std::vector<std::vector<double>> repeats;
    for (const auto& [id, o] : noisy.outcomes) {
      ASSERT_TRUE(o.ok) << id;
      repeats.push_back(o.repeats_ms);
    }
    const size_t n = repeats.front().size();
    for (const auto& r : repeats) EXPECT_EQ(r.size(), n) << name << ": every sample of the kernel gets the same repeats";
    EXPECT_GT(n, 3u) << name << ": the first repeats' halves did not agree often enough";
    EXPECT_EQ(noisy.calls, 12 * n);
    const double agreement = split_half_agreement(repeats, RepeatStatistic::min).within10;
    for (const auto& [id, o] : noisy.outcomes) {
      if (agreement >= 0.95) {
        EXPECT_EQ(o.stopped, "settled") << name << " " << id;
      } else {
        EXPECT_EQ(n, 8u) << name << ": short of the ceiling only at the cap";
        EXPECT_EQ(o.stopped, "max_repeats") << name << " " << id;
      }
    }
    // With one repeat fewer the kernel was short of its ceiling: no repeat was spent past it.
    std::vector<std::vector<double>> fewer;
    for (const auto& r : repeats) fewer.emplace_back(r.begin(), r.end() - 1);
    EXPECT_LT(split_half_agreement(fewer, RepeatStatistic::min).within10, 0.95) << name;

    const Measured again = profile(tmp, name, noise, 3, 8, by_kernel);
    EXPECT_EQ(again.calls, noisy.calls) << name << ": a rerun measures nothing";
    for (const auto& [id, o] : again.outcomes) EXPECT_EQ(o.repeats_ms, noisy.outcomes.at(id).repeats_ms) << id;
  }
}

// A run cut short in the middle of a round, by kernel: the rerun finishes that round, then judges the kernel on
// equal repeats. The journal is written by hand: six samples have their fourth repeat, six were interrupted
// before it, and those six's halves disagree (a slow second repeat), so judged on unequal repeats the kernel is
// short of its ceiling and all twelve get another repeat; judged once the round is finished (the quiet backend
// measures 2 ms), every sample agrees and the kernel settles at four repeats.
TEST(AdaptiveRepeats, AnInterruptedRoundIsFinishedBeforeTheKernelIsJudged) {
  TempDir tmp;
  Registry(tmp / "home").register_module(ModuleKind::Backend, make_chaos_package(tmp / "chaos"));
  const fs::path journal = tmp / "cut.jsonl";
  EXPECT_EQ(profile(tmp, "cut", 0.0, 3, 0).calls, 12u * 3);
  std::vector<Json> records;
  std::istringstream lines(read_text(journal));
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) records.push_back(Json::parse(line));
  for (Json& rec : records) {
    const int sample = std::stoi(rec["id"].get<std::string>().substr(5));
    if (sample < 6 && rec["repeat"] == 1) scale_record(rec, 1.5);
  }
  for (size_t i = 0, n = records.size(); i < n; ++i)
    if (std::stoi(records[i]["id"].get<std::string>().substr(5)) >= 6 && records[i]["repeat"] == 2) {
      Json fourth = records[i];
      fourth["repeat"] = 3;
      records.push_back(fourth);
    }
  std::string text;
  for (const Json& rec : records) text += rec.dump() + "\n";
  write_text(journal, text);

  const Measured resumed = profile(tmp, "cut", 0.0, 3, 8, {{"SETTLE_CEILING", 0.95}});
  EXPECT_EQ(resumed.calls, 12u * 3 + 6) << "only the six samples the interruption cut short were measured";
  for (const auto& [id, o] : resumed.outcomes) {
    EXPECT_EQ(o.repeats_ms.size(), 4u) << id;
    EXPECT_EQ(o.stopped, "settled") << id;
  }
}

// The largest label over the smallest.
double label_span(const std::map<std::string, ProfileOutcome>& outcomes) {
  double lo = 1e300, hi = 0;
  for (const auto& [id, o] : outcomes) {
    EXPECT_TRUE(o.ok) << id;
    lo = std::min(lo, o.latency.value_ms);
    hi = std::max(hi, o.latency.value_ms);
  }
  return hi / lo;
}

TEST(ProbeLevels, NormalizedLabelsShareOneLevelAndTheJournalKeepsTheMeasurements) {
  TempDir tmp;
  Registry(tmp / "home").register_module(ModuleKind::Backend, make_chaos_package(tmp / "chaos"));
  // Twelve samples of one 2 ms model, two fixed repeats each, the level rising 1 % a call (probes included): as
  // measured, the labels spread with the time they were measured; divided by the probes' level, they agree.
  const auto drifting = [](const char* probe_levels) {
    return Json{{"DRIFT", 1.0}, {"DRIFT_PROBE_EVERY", 2}, {"PROBE_LEVELS", probe_levels}};
  };
  const Measured raw = profile(tmp, "raw", 0.0, 2, 0, drifting("off"));
  const Measured normalized = profile(tmp, "normalized", 0.0, 2, 0, drifting("normalize"));
  EXPECT_GT(label_span(raw.outcomes), 1.2);
  EXPECT_LT(label_span(normalized.outcomes), 1.1);

  // The journal holds the latencies as measured: the later repeats higher than their normalized values.
  const Journal journal(tmp / "normalized.jsonl");
  double measured = 0, labelled = 0;
  for (const auto& [id, o] : normalized.outcomes) {
    for (int r = 0; r < 2; ++r) measured += journal.records().at(Journal::key(id, r))["median"].get<double>();
    for (double v : o.repeats_ms) labelled += v;
  }
  EXPECT_GT(measured, 1.1 * labelled);
}

}  // namespace
}  // namespace nnmeter::test
