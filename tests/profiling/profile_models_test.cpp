// The profiler's promises: isolation (a crash or hang costs one sample), durability and resume.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

using test::TempDir;

class ProfileModels : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path pkg = tmp / "chaos";
    fs::create_directories(pkg);
    fs::copy_file(NNMETER_CHAOS_PLUGIN, pkg / "backend.so");
    test::write_text(pkg / "meta.yaml", "builtinName: chaos\npackageLocation: .\nclassModule: backend\nclassName: chaosBackend\n");
    Registry(tmp / "home").register_module(ModuleKind::Backend, pkg / "meta.yaml");
    options.backend = "chaos";
    options.backend_config = {{"COUNTER", (tmp / "calls.txt").string()}, {"REPEATS", 1}};
    options.registry_home = tmp / "home";
    options.work_dir = tmp / "work";
    options.worker_executable = NNMETER_WORKER_PATH;
    options.label = "test";
    options.timeout_s = 3;
    for (const std::string id : {"AAAAAA", "BCRASH", "CCCCCC", "DHANGX", "EFAILX", "FFFFFF"}) {
      const fs::path model = tmp / "models" / (id + ".onnx");
      test::write_text(model, "model " + id);
      jobs.push_back({id, model, {}});
    }
  }

  TempDir tmp;
  ProfilerOptions options;
  std::vector<ProfileJob> jobs;
};

TEST_F(ProfileModels, CrashHangAndErrorCostOneSampleEach) {
  const fs::path journal = tmp / "results" / "journal.jsonl";
  const fs::path error_log = tmp / "results" / "profile_error.log";
  const auto outcomes = profile_models(jobs, options, journal, error_log);
  ASSERT_EQ(outcomes.size(), jobs.size());
  for (const std::string id : {"AAAAAA", "CCCCCC", "FFFFFF"}) {
    EXPECT_TRUE(outcomes.at(id).ok) << id << ": " << outcomes.at(id).error;
    EXPECT_DOUBLE_EQ(outcomes.at(id).latency.value_ms, 2.0);
    ASSERT_EQ(outcomes.at(id).repeats.size(), 1u);
    EXPECT_EQ(outcomes.at(id).repeats.front().count, 3);
  }
  EXPECT_FALSE(outcomes.at("BCRASH").ok);
  // A plain build reports SIGSEGV; AddressSanitizer's SEGV handler turns it into exit code 1, or into
  // SIGABRT with abort_on_error=1 (as CI runs it). Any of them must name how the worker ended.
  const std::string& crash = outcomes.at("BCRASH").error;
  EXPECT_NE(crash.find("worker ended without answering"), std::string::npos) << crash;
  EXPECT_TRUE(crash.find("crashed with signal ") != std::string::npos || crash.find("exit code") != std::string::npos)
      << crash;
  EXPECT_FALSE(outcomes.at("DHANGX").ok);
  EXPECT_NE(outcomes.at("DHANGX").error.find("timed out after 3 s"), std::string::npos) << outcomes.at("DHANGX").error;
  EXPECT_FALSE(outcomes.at("EFAILX").ok);
  EXPECT_NE(outcomes.at("EFAILX").error.find("cannot run this model"), std::string::npos) << outcomes.at("EFAILX").error;
  EXPECT_EQ(test::count_lines(journal), jobs.size());
  const std::string errors = test::read_text(error_log);
  EXPECT_EQ(test::count_lines(error_log), 3u) << errors;
  EXPECT_NE(errors.find("BCRASH: "), std::string::npos);
}

// --timeout (timeout_s) bounds a worker's start too: a backend whose constructor hangs stops the run after it,
// with one line saying so, and nothing is measured.
TEST_F(ProfileModels, AWorkerWhoseBackendHangsAtStartIsGivenUpAfterTheTimeout) {
  ::setenv("NNMETER_CHAOS_HANG", "constructor", 1);
  options.timeout_s = 2;
  const fs::path journal = tmp / "results" / "journal.jsonl";
  const std::string error = test::error_of([&] { profile_models(jobs, options, journal, tmp / "results" / "errors.log"); });
  ::unsetenv("NNMETER_CHAOS_HANG");
  EXPECT_NE(error.find("the profiling worker did not start: timed out after 2 s"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(tmp / "calls.txt"));
  EXPECT_EQ(test::count_lines(journal), 0u);
}

TEST_F(ProfileModels, ResumeNeverProfilesAnIdTwiceAndSurvivesATornRecord) {
  const fs::path journal = tmp / "results" / "journal.jsonl";
  const fs::path error_log = tmp / "results" / "profile_error.log";
  std::vector<ProfileJob> first(jobs.begin(), jobs.begin() + 1);
  profile_models(first, options, journal, error_log);
  EXPECT_EQ(test::count_lines(tmp / "calls.txt"), 1u);
  // A process killed mid-append leaves half a line: it is cut off, and the finished record is kept.
  {
    std::ofstream torn(journal, std::ios::app);
    torn << "{\"id\": \"CCCCCC\", \"ok\": tr";
  }
  const auto outcomes = profile_models({jobs[0], jobs[2]}, options, journal, error_log);
  EXPECT_TRUE(outcomes.at("AAAAAA").ok);
  EXPECT_TRUE(outcomes.at("CCCCCC").ok);
  const std::string calls = test::read_text(tmp / "calls.txt");
  EXPECT_EQ(test::count_lines(tmp / "calls.txt"), 2u) << calls;  // AAAAAA was not profiled again
  EXPECT_EQ(test::count_lines(journal), 2u);
  profile_models({jobs[0], jobs[2]}, options, journal, error_log);
  EXPECT_EQ(test::count_lines(tmp / "calls.txt"), 2u);
}

// "<model> <pid>" lines of the chaos backend's counter, in calling order.
std::vector<std::pair<std::string, std::string>> calls(const fs::path& counter) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream in(test::read_text(counter));
  for (std::string model, pid; in >> model >> pid;) out.emplace_back(fs::path(model).stem().string(), pid);
  return out;
}

TEST_F(ProfileModels, RepeatsRunInFreshProcessesAndKeepEveryValue) {
  options.backend_config["REPEATS"] = 3;
  const std::vector<ProfileJob> ok = {jobs[0], jobs[2], jobs[5]};
  const auto outcomes = profile_models(ok, options, tmp / "j.jsonl", tmp / "e.log");
  const auto made = calls(tmp / "calls.txt");
  ASSERT_EQ(made.size(), 9u);
  std::map<std::string, std::set<std::string>> pids;
  for (const auto& [model, pid] : made) pids[model].insert(pid);
  for (const auto& job : ok) {
    EXPECT_EQ(pids[job.id].size(), 3u) << job.id << ": two repeats ran in one process";
    const ProfileOutcome& o = outcomes.at(job.id);
    EXPECT_TRUE(o.ok);
    EXPECT_EQ(o.repeats_ms, (std::vector<double>{2.0, 2.0, 2.0}));
    EXPECT_EQ(o.repeat_times.size(), 3u);
    EXPECT_DOUBLE_EQ(o.latency.value_ms, 2.0);
  }
  EXPECT_EQ(test::count_lines(tmp / "j.jsonl"), 9u);
}

TEST_F(ProfileModels, RaisingRepeatsMeasuresOnlyTheMissingOnes) {
  const std::vector<ProfileJob> ok = {jobs[0], jobs[2]};
  options.backend_config["REPEATS"] = 2;
  profile_models(ok, options, tmp / "j.jsonl", tmp / "e.log");
  EXPECT_EQ(calls(tmp / "calls.txt").size(), 4u);
  options.backend_config["REPEATS"] = 3;
  const auto outcomes = profile_models(ok, options, tmp / "j.jsonl", tmp / "e.log");
  EXPECT_EQ(calls(tmp / "calls.txt").size(), 6u);
  EXPECT_EQ(outcomes.at("AAAAAA").repeats_ms.size(), 3u);
  profile_models(ok, options, tmp / "j.jsonl", tmp / "e.log");
  EXPECT_EQ(calls(tmp / "calls.txt").size(), 6u);
}

// Later repeats measure the conversion the first one recorded; when those files are gone (the workspace was
// moved or copied, its converted models deleted for space) they convert the model anew instead of failing.
TEST_F(ProfileModels, LaterRepeatsConvertAgainWhenTheRecordedFilesAreGone) {
  const std::vector<ProfileJob> one = {jobs[0]};
  profile_models(one, options, tmp / "j.jsonl", tmp / "e.log");
  fs::rename(tmp / "models", tmp / "moved");
  std::vector<ProfileJob> moved = one;
  moved[0].model = tmp / "moved" / "AAAAAA.onnx";
  options.backend_config["REPEATS"] = 2;
  const auto outcomes = profile_models(moved, options, tmp / "j.jsonl", tmp / "e.log");
  EXPECT_TRUE(outcomes.at("AAAAAA").ok) << outcomes.at("AAAAAA").error;
  const std::string counted = test::read_text(tmp / "calls.txt");
  ASSERT_EQ(test::count_lines(tmp / "calls.txt"), 2u) << counted;
  EXPECT_NE(counted.find((tmp / "moved" / "AAAAAA.onnx").string()), std::string::npos) << counted;
}

// A workspace moved elsewhere: the journal's files are found under the same names in this run's work_dir, and the
// outcomes name them there (the rule tester reads its kernel counts from them); nothing is measured again.
TEST_F(ProfileModels, AMovedWorkspaceFindsItsJournaledFilesInItsWorkDir) {
  const std::vector<ProfileJob> one = {jobs[0]};
  options.work_dir = tmp / "models";
  const auto first = profile_models(one, options, tmp / "j.jsonl", tmp / "e.log");
  ASSERT_EQ(first.at("AAAAAA").converted_files, std::vector<fs::path>{tmp / "models" / "AAAAAA.onnx"});
  fs::rename(tmp / "models", tmp / "moved");
  options.work_dir = tmp / "moved";
  std::vector<ProfileJob> moved = one;
  moved[0].model = tmp / "moved" / "AAAAAA.onnx";
  const auto again = profile_models(moved, options, tmp / "j.jsonl", tmp / "e.log");
  EXPECT_EQ(again.at("AAAAAA").converted_files, std::vector<fs::path>{tmp / "moved" / "AAAAAA.onnx"});
  EXPECT_EQ(test::count_lines(tmp / "calls.txt"), 1u);
}

TEST_F(ProfileModels, TheMeasuringOrderIsShuffledBySeedAcrossBatches) {
  options.backend_config["REPEATS"] = 2;
  const std::vector<ProfileJob> a = {jobs[0], jobs[2]}, b = {jobs[5]};
  auto order = [&](uint64_t seed, const std::string& run) {
    options.seed = seed;
    const fs::path counter = tmp / (run + ".txt");
    options.backend_config["COUNTER"] = counter.string();
    const auto out = profile_batches({{a, tmp / run / "a.jsonl", tmp / run / "e.log"}, {b, tmp / run / "b.jsonl", tmp / run / "e.log"}},
                                     options);
    EXPECT_EQ(out.size(), 2u);
    EXPECT_TRUE(out[1].at("FFFFFF").ok);
    EXPECT_EQ(test::count_lines(tmp / run / "b.jsonl"), 2u);  // each batch keeps its own journal
    std::vector<std::string> models;
    for (const auto& [model, pid] : calls(counter)) models.push_back(model);
    return models;
  };
  const auto first = order(7, "one");
  EXPECT_EQ(first.size(), 6u);
  EXPECT_EQ(order(7, "two"), first);  // resumable: the same seed gives the same order
  bool differs = false;
  for (uint64_t seed = 8; seed < 16 && !differs; ++seed) differs = order(seed, "s" + std::to_string(seed)) != first;
  EXPECT_TRUE(differs) << "the order does not depend on the seed";
}

// A journal written before workers refused non-finite latencies may hold `null` for an "ok" record: the
// repeat counts as failed, the run goes on.
TEST_F(ProfileModels, AnOkRecordWithoutALatencyIsAFailedRepeat) {
  test::write_text(tmp / "j.jsonl", "{\"id\": \"AAAAAA\", \"ok\": true, \"median\": null, \"samples_ms\": [null]}\n");
  const auto outcomes = profile_models({jobs[0], jobs[2]}, options, tmp / "j.jsonl", tmp / "e.log");
  EXPECT_FALSE(outcomes.at("AAAAAA").ok);
  EXPECT_EQ(outcomes.at("AAAAAA").failed_repeats, 1);
  EXPECT_NE(outcomes.at("AAAAAA").error.find("no valid latency"), std::string::npos) << outcomes.at("AAAAAA").error;
  EXPECT_TRUE(outcomes.at("CCCCCC").ok);
}

TEST_F(ProfileModels, UnknownBackendFailsTheRunWithOneLine) {
  options.backend = "ghost";
  try {
    profile_models(jobs, options, tmp / "j.jsonl", tmp / "e.log");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown backend 'ghost'"), std::string::npos) << e.what();
  }
}

// HUGE_PAGES (the default) reaches the worker as glibc's hugetlb tunable, added to what the user has in
// GLIBC_TUNABLES; false leaves the environment alone, and so does a hugetlb setting of the user's own.
TEST_F(ProfileModels, WorkersGetHugePagesUnlessTheConfigOrTheUserSaysOtherwise) {
  const char* saved = std::getenv("GLIBC_TUNABLES");
  const std::string saved_value = saved != nullptr ? saved : "";
  const std::vector<ProfileJob> one = {jobs.front()};
  int run = 0;
  auto tunables_seen = [&](const Json& extra, const char* user_tunables) {
    if (user_tunables != nullptr) ::setenv("GLIBC_TUNABLES", user_tunables, 1);
    else ::unsetenv("GLIBC_TUNABLES");
    const fs::path log = tmp / fmt::format("env{}.txt", ++run);
    ProfilerOptions o = options;
    o.backend_config["ENV_LOG"] = log.string();
    o.backend_config.update(extra);
    const auto outcomes = profile_models(one, o, tmp / fmt::format("journal{}.jsonl", run), tmp / "errors.log");
    EXPECT_TRUE(outcomes.at("AAAAAA").ok) << outcomes.at("AAAAAA").error;
    return test::read_text(log);
  };
  EXPECT_EQ(tunables_seen(Json::object(), nullptr), "[glibc.malloc.hugetlb=1]\n");
  EXPECT_EQ(tunables_seen({{"HUGE_PAGES", true}}, "glibc.malloc.arena_max=2"),
            "[glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1]\n");
  EXPECT_EQ(tunables_seen({{"HUGE_PAGES", false}}, nullptr), "[]\n");
  EXPECT_EQ(tunables_seen(Json::object(), "glibc.malloc.hugetlb=0"), "[glibc.malloc.hugetlb=0]\n");
  if (saved != nullptr) ::setenv("GLIBC_TUNABLES", saved_value.c_str(), 1);
  else ::unsetenv("GLIBC_TUNABLES");
}

// Drift is read against the median of a probe's first three measurements and reported at the median of its last
// three: a first process 29 % slow, or one slow process at the end, does not make a steady device look drifted.
TEST(Drift, OneOutlyingProbeMeasurementNeitherSetsTheReferenceNorTheEnd) {
  TempDir tmp;
  const fs::path journal = tmp / "drift_probes.jsonl";
  std::string lines;
  const std::vector<double> steady = {1.29, 1.00, 1.01, 0.99, 1.02, 1.00, 1.01, 1.30};  // ms, one a minute
  for (size_t i = 0; i < steady.size(); ++i)
    lines += Json{{"id", "dw"}, {"repeat", i}, {"ok", true}, {"median", steady[i]}, {"t", 1000.0 + 60.0 * i}}.dump() + "\n";
  lines += Json{{"id", "dw"}, {"repeat", 8}, {"ok", false}, {"t", 2000.0}}.dump() + "\n";  // a failed probe: skipped
  for (int i = 0; i < 4; ++i)  // a probe that drifts: 2.0 ms, then 2.2 ms for good
    lines += Json{{"id", "conv"}, {"repeat", i}, {"ok", true}, {"median", i < 2 ? 2.0 : 2.2}, {"t", 1000.0 + 600.0 * i}}.dump() +
             "\n";
  test::write_text(journal, lines);

  const std::vector<DriftSeries> drift = read_drift(journal);
  ASSERT_EQ(drift.size(), 2u);
  const DriftSeries& conv = drift[0];
  const DriftSeries& dw = drift[1];
  ASSERT_EQ(dw.probe, "dw");
  ASSERT_EQ(dw.ratio.size(), steady.size());
  EXPECT_NEAR(dw.ratio[1], 1.00 / 1.01, 1e-12);  // the reference: median(1.29, 1.00, 1.01)
  EXPECT_NEAR(dw.end_ratio(), 1.01 / 1.01, 1e-12);  // median(1.00, 1.01, 1.30) / 1.01
  EXPECT_DOUBLE_EQ(dw.span_minutes(), 7);
  EXPECT_NEAR(conv.end_ratio(), 1.1, 1e-12);  // median(2.0, 2.2, 2.2) / median(2.0, 2.0, 2.2)
  const std::string text = describe_drift(drift);
  EXPECT_NE(text.find("conv: +10.0% after 30 min (4 measurements, range +0.0%..+10.0%)"), std::string::npos) << text;
  EXPECT_NE(text.find("dw: +0.0% after 7 min (8 measurements, range -2.0%..+28.7%)"), std::string::npos) << text;
  EXPECT_TRUE(read_drift(tmp / "none.jsonl").empty());
}

// The level a repeat is divided by (PROBE_LEVELS normalize): smoothed so that one process's off level does not
// move it, interpolated in time between probe measurements, held flat outside them, averaged over the probes.
TEST(Drift, TheLevelIsSmoothedInterpolatedAndHeldFlat) {
  DriftSeries conv;  // 1.0 until minute 3, then 1.2; the measurement at minute 1 came out 1.5 (a slow process)
  conv.probe = "conv";
  conv.start_t = 1000;
  conv.minutes = {0, 1, 2, 3, 4, 5, 6};
  conv.ratio = {1.0, 1.5, 1.0, 1.0, 1.2, 1.2, 1.2};
  DriftSeries dw = conv;  // steady
  dw.probe = "dw";
  dw.ratio = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
  const DriftLevel level({conv, dw});
  ASSERT_FALSE(level.empty());
  EXPECT_NEAR(level.at(1060), 1.0, 1e-12);                  // the outlier is smoothed away
  EXPECT_NEAR(level.at(1240), std::sqrt(1.2), 1e-12);        // the geometric mean of 1.2 and 1.0
  EXPECT_NEAR(level.at(1210), std::sqrt(1.1), 1e-12);        // halfway between minutes 3 (1.0) and 4 (1.2)
  EXPECT_NEAR(level.at(500), 1.0, 1e-12);                   // before the first measurement
  EXPECT_NEAR(level.at(9000), std::sqrt(1.2), 1e-12);        // after the last
  EXPECT_DOUBLE_EQ(level.at(0), 1.0);                       // a repeat of unknown time
  DriftSeries once = conv;
  once.minutes = {0};
  once.ratio = {1.0};
  EXPECT_TRUE(DriftLevel({once}).empty());
  EXPECT_DOUBLE_EQ(DriftLevel({}).at(1100), 1.0);
}

}  // namespace
}  // namespace nnmeter
