// CLI conventions: --json on the commands that print data, exit codes (0 ok, 1 runtime error, 2 usage error).
#include "nnmeter/common.h"
#include "support/cli_expect.h"

namespace nnmeter::test {
namespace {

TEST(CliConventions, JsonListsEveryListAskedFor) {
  TempDir home;
  const CliResult r = run_cli({"--json", "--list-backends", "--list-kernels", "--list-predictors", "--list-operators",
                               "--list-testcases"},
                              home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  ASSERT_TRUE(doc["backends"].is_array());
  EXPECT_TRUE(std::any_of(doc["backends"].begin(), doc["backends"].end(),
                          [](const Json& b) { return b["name"] == "onednn_cpu" && b["customized"] == false; }))
      << r.out;
  EXPECT_GE(doc["kernels"].size(), 30u);
  EXPECT_TRUE(doc["predictors"].is_array());
  EXPECT_EQ(doc["operators"][0]["implement"], "onnx") << r.out;
  EXPECT_TRUE(doc["testcases"].is_array());
  // Only what was asked for.
  const Json one = Json::parse(run_cli({"--list-kernels", "--json"}, home.path()).out);
  EXPECT_EQ(one.size(), 1u);
  EXPECT_TRUE(one.contains("kernels"));
}

TEST(CliConventions, CheckEnvAsJson) {
  TempDir home;
  const CliResult r = run_cli({"check-env", "--json"}, home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  EXPECT_FALSE(doc["nn_meter"].get<std::string>().empty());
  EXPECT_GE(doc["cpus"].get<int>(), 1);
  bool onednn = false;
  for (const Json& b : doc["backends"])
    if (b["name"] == "onednn_cpu") {
      onednn = true;
      EXPECT_NE(b["version"], "None");
      EXPECT_EQ(b["version"].get<std::string>().find('\t'), std::string::npos);
    }
  EXPECT_TRUE(onednn) << r.out;
}

TEST(CliConventions, UsageErrorsExitTwoRuntimeErrorsOne) {
  TempDir home;
  for (const std::vector<std::string>& usage : std::vector<std::vector<std::string>>{
           {"--no-such-flag"}, {"predict"}, {"evaluate", "--predictor", "x", "--onnx", "y", "--repeats", "abc"},
           {"no-such-command"}}) {
    const CliResult r = run_cli(usage, home.path());
    EXPECT_EQ(r.exit_code, 2) << usage.front() << ": " << r.err;
  }
  const CliResult runtime = run_cli({"predict", "--predictor", "ghost", "--onnx", (home / "none.onnx").string()}, home.path());
  EXPECT_EQ(runtime.exit_code, 1) << runtime.err;
  EXPECT_EQ(run_cli({"--help"}, home.path()).exit_code, 0);
  EXPECT_EQ(run_cli({"--version"}, home.path()).exit_code, 0);
}

}  // namespace
}  // namespace nnmeter::test
