// A build sharded over two "devices" through the real binary on onednn_cpu, as a Slurm array would run it (the
// array itself: tests/slurm/): plan, shards, merge, next phase, and the same samples as a single-host build.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "common/io.h"
#include "support/test_support.h"

namespace nnmeter::test {
namespace {

fs::path make_workspace(const TempDir& tmp, const std::string& name, const std::string& more_backend_config = "") {
  const fs::path ws = tmp / name;
  CliResult created = run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home");
  EXPECT_EQ(created.exit_code, 0) << created.err;
  // A threshold no predictor meets: the build goes on to a fine-grained round, a second phase to measure.
  write_text(ws / "configs" / "predictorbuild_config.yaml",
             "DETAIL: TRUE\nIMPLEMENT: onnx\nBATCH_SIZE: 1\nKERNELS:\n  relu:\n    INIT_SAMPLE_NUM: 12\n"
             "    FINEGRAINED_SAMPLE_NUM: 2\n    ITERATION: 2\n    ERROR_THRESHOLD: 0.000001\n");
  write_text(ws / "configs" / "backend_config.yaml",
             "NUM_THREADS: 1\nWARMUP_RUNS: 1\nNUM_RUNS: 3\nNUM_ROUNDS: 2\nMIN_TIME_MS: 1\nMAX_RETRIES: 0\nREPEATS: 2\n" + more_backend_config);
  return ws;
}

std::vector<std::string> build(const fs::path& ws, std::vector<std::string> more) {
  std::vector<std::string> args = {"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--no-ruletest"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::set<std::string> ids(const fs::path& file, const std::string& kernel) {
  std::set<std::string> out;
  const Json doc = io::load_json_file(file);  // kept: a range-for over a temporary's member dangles
  for (const auto& [id, entry] : doc[kernel].items()) out.insert(id + entry["config"].dump());
  return out;
}

TEST(ShardedBuild, PlanShardsMergeUntilThePredictorIsWritten) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "sharded");
  const fs::path home = tmp / "home";

  CliResult plan = run_cli(build(ws, {"--plan-only"}), home);
  ASSERT_EQ(plan.exit_code, 0) << plan.out << plan.err;
  EXPECT_TRUE(contains(plan.out, "Plan ")) << plan.out;
  const auto prior = [](const fs::path& w) { return ids(w / "predictor_build" / "results" / "relu_prior.json", "relu"); };
  const size_t models = prior(ws).size();  // 12 drawn, less any that is a layer of the sealed test split
  EXPECT_GE(models, 10u);
  EXPECT_TRUE(contains(plan.out, fmt::format("prior samples, {} measurements of {} models (expected ", 2 * models, models)))
      << plan.out;
  EXPECT_TRUE(fs::exists(ws / "predictor_build" / "shards" / "plan.json"));
  EXPECT_FALSE(fs::exists(ws / "predictor_build" / "predictor")) << "planning trains nothing";

  // Merging before every shard is done names the missing shard and changes nothing.
  ASSERT_EQ(run_cli(build(ws, {"--shard", "1/2"}), home).exit_code, 0);
  CliResult early = run_cli(build(ws, {"--shards", "2"}), home);
  EXPECT_EQ(early.exit_code, 1) << early.out << early.err;
  EXPECT_TRUE(contains(early.err, "shard 2/2")) << early.err;

  int phases = 0, code = 3;
  for (; code == 3 && phases < 4; ++phases) {
    if (phases > 0) ASSERT_EQ(run_cli(build(ws, {"--shard", "1/2"}), home).exit_code, 0);
    CliResult shard = run_cli(build(ws, {"--shard", "2/2", "--json"}), home);
    ASSERT_EQ(shard.exit_code, 0) << shard.err;
    EXPECT_EQ(Json::parse(shard.out)["shard"], "2/2") << shard.out;
    CliResult merged = run_cli(build(ws, {"--shards", "2"}), home);
    code = merged.exit_code;
    ASSERT_TRUE(code == 0 || code == 3) << merged.out << merged.err;
    if (code == 3) EXPECT_TRUE(contains(merged.out, "fine-grained round 1")) << merged.out;
  }
  EXPECT_EQ(code, 0);
  EXPECT_EQ(phases, 2) << "the prior samples, then one fine-grained round";
  EXPECT_TRUE(fs::exists(ws / "predictor_build" / "predictor" / "relu.json"));

  // The same samples as one host measuring the whole build.
  const fs::path single = make_workspace(tmp, "single");
  CliResult alone = run_cli(build(single, {}), home);
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_EQ(prior(ws), prior(single));
  EXPECT_EQ(prior(ws).size(), models);
}

TEST(ShardedBuild, ProbeLevelsAreNotAppliedAndTheBuildSaysSo) {
  NNMETER_RELEASE_RUN_ONLY();
  // The shards' probes level nothing on the merging host: a key that would silently do nothing is named.
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "ws", "DRIFT_PROBE_EVERY: 4\nPROBE_LEVELS: normalize\n");
  const fs::path home = tmp / "home";
  CliResult plan = run_cli(build(ws, {"--plan-only"}), home);
  ASSERT_EQ(plan.exit_code, 0) << plan.out << plan.err;
  const std::string said = plan.out + plan.err;
  EXPECT_TRUE(contains(said, "PROBE_LEVELS normalize does not apply to a sharded build")) << said;
  EXPECT_TRUE(contains(said, "SHARD_LEVELS normalize")) << said;
  // A build on one host is normalized and says nothing of the kind.
  const fs::path single = make_workspace(tmp, "single", "DRIFT_PROBE_EVERY: 4\nPROBE_LEVELS: normalize\n");
  CliResult alone = run_cli(build(single, {}), home);
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_FALSE(contains(alone.out + alone.err, "does not apply to a sharded build")) << alone.err;
  EXPECT_TRUE(contains(alone.out + alone.err, "PROBE_LEVELS normalize")) << alone.out << alone.err;
}

TEST(ShardedBuild, ShardArgumentsThatCannotMeanAnythingAreUsageErrors) {
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "ws");
  for (const std::string& bad : {"5/4", "0/0", "x/y", "1", "1/", "2/x"}) {
    CliResult r = run_cli(build(ws, {"--shard", bad}), tmp / "home");
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "K/N")) << r.err;
  }
  CliResult both = run_cli(build(ws, {"--plan-only", "--shards", "2"}), tmp / "home");
  EXPECT_EQ(both.exit_code, 2) << both.err;
  CliResult no_plan = run_cli(build(ws, {"--shard", "1/2"}), tmp / "home");
  EXPECT_EQ(no_plan.exit_code, 1);
  EXPECT_TRUE(contains(no_plan.err, "--plan-only")) << no_plan.err;
}

}  // namespace
}  // namespace nnmeter::test
