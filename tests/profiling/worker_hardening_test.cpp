// Profiling against hostile backends and neighbours: an impossible latency is one lost sample, a second
// run on the same journal is refused naming the first, and workers die with their parent.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "common/worker_process.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "profiling/journal.h"
#include "support/plugin_fixtures.h"

namespace nnmeter {
namespace {

using test::TempDir;

TEST(WorkerHardening, ImpossibleLatencyIsALostSampleNotAStoppedRun) {
  TempDir tmp;
  Registry(tmp / "home").register_module(ModuleKind::Backend, test::make_chaos_package(tmp / "chaos"));
  ProfilerOptions options;
  options.backend = "chaos";
  options.backend_config = {{"COUNTER", (tmp / "calls.txt").string()}, {"REPEATS", 1}};
  options.registry_home = tmp / "home";
  options.work_dir = tmp / "work";
  options.timeout_s = 30;
  options.worker_executable = NNMETER_WORKER_PATH;
  options.label = "test";
  options.progress = false;
  std::vector<ProfileJob> jobs;
  for (const std::string id : {"AAAAAA", "BHUGEX", "CCCCCC"}) {
    const fs::path model = tmp / "models" / (id + ".onnx");
    test::write_text(model, "model " + id);
    jobs.push_back({id, model, {}});
  }
  const fs::path journal = tmp / "results" / "journal.jsonl";
  const fs::path error_log = tmp / "results" / "profile_error.log";
  auto outcomes = profile_models(jobs, options, journal, error_log);
  EXPECT_TRUE(outcomes.at("AAAAAA").ok);
  EXPECT_TRUE(outcomes.at("CCCCCC").ok);
  ASSERT_FALSE(outcomes.at("BHUGEX").ok);
  EXPECT_TRUE(test::contains(outcomes.at("BHUGEX").error, "impossible latency")) << outcomes.at("BHUGEX").error;
  EXPECT_TRUE(test::contains(test::read_text(error_log), "BHUGEX: ")) << test::read_text(error_log);
  EXPECT_FALSE(test::contains(test::read_text(journal), "null")) << test::read_text(journal);

  // A rerun resumes: the lost sample is not profiled again, and nothing stops.
  const size_t calls = test::count_lines(tmp / "calls.txt");
  outcomes = profile_models(jobs, options, journal, error_log);
  EXPECT_EQ(test::count_lines(tmp / "calls.txt"), calls);
  EXPECT_FALSE(outcomes.at("BHUGEX").ok);
}

TEST(WorkerHardening, OneWriterPerJournal) {
  TempDir tmp;
  const fs::path path = tmp / "journal.jsonl";
  {
    Journal first(path);
    first.append({{"id", "A"}});
    const std::string error = test::error_of([&] { Journal second(path); });
    EXPECT_TRUE(test::contains(error, "is in use by another nn-meter run (PID " + std::to_string(::getpid()) + ")"))
        << error;
  }
  Journal again(path);  // released with its owner
  EXPECT_EQ(again.records().size(), 1u);
}

// An onednn_cpu workspace with one relu sample, ready to profile.
void create_relu_workspace(const fs::path& home, const fs::path& ws) {
  ASSERT_EQ(test::run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, home).exit_code, 0);
  ASSERT_EQ(test::run_cli({"sample", "--workspace", ws.string(), "--kernel", "relu", "--num", "1", "--seed", "1"}, home)
                .exit_code,
            0);
}

TEST(WorkerHardening, SecondProfileRunOnAWorkspaceIsRefused) {
  TempDir tmp;
  const fs::path home = tmp / "home", ws = tmp / "ws";
  ASSERT_NO_FATAL_FAILURE(create_relu_workspace(home, ws));
  // This process plays the run that is already profiling.
  const Journal running(ws / "predictor_build" / "results" / "profile_journal_relu.jsonl");
  const test::CliResult r =
      test::run_cli({"profile", "--workspace", ws.string(), "--backend", "onednn_cpu", "--kernel", "relu"}, home);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(test::contains(r.err, "in use by another nn-meter run (PID " + std::to_string(::getpid()) + ")")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(ws / "predictor_build" / "results" / "profiled_relu.json"));
}

// A run killed mid-write leaves write_file_atomic's temp files; the run that resumes in the same folders
// removes them (its own pattern only) and says how many.
TEST(WorkerHardening, AResumedRunRemovesTheTempFilesAKilledWriterLeft) {
  TempDir tmp;
  const fs::path home = tmp / "home", ws = tmp / "ws";
  ASSERT_NO_FATAL_FAILURE(create_relu_workspace(home, ws));
  const fs::path build = ws / "predictor_build";
  const std::vector<fs::path> left = {test::kill_mid_write(build / "converted" / "killed.onnx"),
                                      test::kill_mid_write(build / "results" / "killed.json")};
  const fs::path other = build / "converted" / ".tmp-notours";
  test::write_text(other, "another program's");
  const test::CliResult r =
      test::run_cli({"profile", "--workspace", ws.string(), "--backend", "onednn_cpu", "--kernel", "relu"}, home);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(test::contains(r.out, "removed 1 temp file an interrupted run left in " + (build / "converted").string()))
      << r.out;
  EXPECT_TRUE(test::contains(r.out, "removed 1 temp file an interrupted run left in " + (build / "results").string()))
      << r.out;
  for (const auto& f : left) EXPECT_FALSE(fs::exists(f)) << f;
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(build / "results" / "profiled_relu.json"));
}

// Only async-signal-safe calls happen in the forked children.
TEST(WorkerHardening, WorkerExitsWhenItsParentIsNotTheExpectedOne) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    die_with_parent(::getppid() + 1);  // as if the parent died and the child was reparented before the call
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
}

TEST(WorkerHardening, WorkerDiesWithItsParent) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    const pid_t self = ::getpid();
    const pid_t worker = ::fork();
    if (worker == 0) {
      die_with_parent(self);
      for (;;) ::pause();  // a plugin that hangs
    }
    (void)!::write(pipe_fds[1], &worker, sizeof worker);
    ::_exit(0);  // the run is killed while its worker hangs
  }
  ::close(pipe_fds[1]);
  pid_t worker = 0;
  ASSERT_EQ(::read(pipe_fds[0], &worker, sizeof worker), static_cast<ssize_t>(sizeof worker));
  ::close(pipe_fds[0]);
  ASSERT_EQ(::waitpid(parent, nullptr, 0), parent);
  // SIGKILL arrives when the parent exits; a leftover worker would stay sleeping here for good.
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    const std::string stat = test::read_text("/proc/" + std::to_string(worker) + "/stat");
    gone = stat.empty() || stat.find(") Z") != std::string::npos;
    if (!gone) ::usleep(10000);
  }
  if (!gone) ::kill(worker, SIGKILL);
  EXPECT_TRUE(gone);
}

// The library finds the worker built with it (this test binary is neither nn-meter nor next to it), a
// NN_METER_WORKER that names no file is one actionable line, and the CLI no longer hosts workers.
TEST(WorkerHardening, TheLibraryFindsItsOwnWorkerProgram) {
  const char* saved = std::getenv("NN_METER_WORKER");
  const std::string saved_value = saved != nullptr ? saved : "";
  ::unsetenv("NN_METER_WORKER");
  const fs::path found = find_worker_executable();
  EXPECT_EQ(found.filename(), "nn-meter-worker");
  EXPECT_TRUE(fs::equivalent(found, NNMETER_WORKER_PATH)) << found;
  ::setenv("NN_METER_WORKER", "/nonexistent/nn-meter-worker", 1);
  const std::string msg = test::error_of([] { find_worker_executable(); });
  EXPECT_NE(msg.find("NN_METER_WORKER=/nonexistent/nn-meter-worker is not a file"), std::string::npos) << msg;
  if (saved != nullptr) {
    ::setenv("NN_METER_WORKER", saved_value.c_str(), 1);
  } else {
    ::unsetenv("NN_METER_WORKER");
  }
  TempDir tmp;
  const auto cli = test::run_cli({"profile-worker", "--result-fd", "3"}, tmp / "home");
  EXPECT_EQ(cli.exit_code, 2) << cli.out << cli.err;
}

}  // namespace
}  // namespace nnmeter
