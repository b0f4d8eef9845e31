// The profiler's promises: isolation (a crash or hang costs one sample), durability and resume.
#include <gtest/gtest.h>

#include <fstream>

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
    options.backend_config = {{"COUNTER", (tmp / "calls.txt").string()}};
    options.registry_home = tmp / "home";
    options.work_dir = tmp / "work";
    options.worker_executable = NNMETER_CLI_PATH;
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
    EXPECT_DOUBLE_EQ(outcomes.at(id).stats.median, 2.0);
    EXPECT_EQ(outcomes.at(id).stats.count, 3);
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

TEST_F(ProfileModels, UnknownBackendFailsTheRunWithOneLine) {
  options.backend = "ghost";
  try {
    profile_models(jobs, options, tmp / "j.jsonl", tmp / "e.log");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown backend 'ghost'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nnmeter
