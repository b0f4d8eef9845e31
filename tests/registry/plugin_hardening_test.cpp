// A plugin that crashes while loading, constructing or reporting its version must not take register,
// check-env, connect or the commands that read its declared parameters down: they run it in a child and
// report one line naming the plugin and the signal.
#include "support/cli_expect.h"
#include "support/plugin_fixtures.h"

namespace nnmeter::test {
namespace {

class HardeningPlugins : public ::testing::Test {
 protected:
  void SetUp() override {
    meta = make_chaos_package(pkg);
  }

  CliResult run(const std::vector<std::string>& args, const std::string& crash = "") {
    std::map<std::string, std::string> env;
    if (!crash.empty()) env["NNMETER_CHAOS_CRASH"] = crash;
    return run_cli(args, home, env);
  }

  // A plain build reports the signal; under AddressSanitizer its SEGV handler ends the child with exit
  // code 1 (or SIGABRT with abort_on_error=1).
  static bool names_the_crash(const std::string& text) {
    return contains(text, "crashed with signal ") || contains(text, "exit code");
  }

  TempDir tmp;
  fs::path home = tmp / "home", pkg = tmp / "pkg", meta;
};

TEST_F(HardeningPlugins, RegisterSurvivesACrashWhileLoadingOrConstructing) {
  for (const std::string stage : {"static", "constructor"}) {
    const CliResult r = run({"register", "--backend", meta.string()}, stage);
    expect_one_line_error(r, "Registration failed: the backend plugin 'chaos' (" + pkg.string() + ")");
    EXPECT_TRUE(names_the_crash(r.err)) << r.err;
    EXPECT_FALSE(fs::exists(home / "config" / "registry.yaml"));
  }
  const CliResult ok = run({"register", "--backend", meta.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(HardeningPlugins, CheckEnvAndConnectSurviveACrashingPlugin) {
  ASSERT_EQ(run({"register", "--backend", meta.string()}).exit_code, 0);
  ASSERT_EQ(run({"create", "--customized-workspace", (tmp / "ws").string(), "--backend", "chaos"}).exit_code, 0);

  CliResult r = run({"check-env"}, "get_version");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "onednn_cpu:\t")) << r.out;
  EXPECT_TRUE(contains(r.out, "chaos:\tCheckFailed (the backend plugin 'chaos' ended without answering")) << r.out;
  EXPECT_TRUE(names_the_crash(r.out)) << r.out;
  r = run({"check-env"});
  EXPECT_TRUE(contains(r.out, "chaos:\tchaos 1\n")) << r.out;

  r = run({"connect", "--backend", "chaos", "--workspace", (tmp / "ws").string()}, "constructor");
  expect_one_line_error(r, "the backend plugin 'chaos' ended without answering");
  EXPECT_TRUE(names_the_crash(r.err)) << r.err;
  r = run({"connect", "--backend", "chaos", "--workspace", (tmp / "ws").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "chaos ready\n");
}

// benchmark, profile, build and evaluate read the backend's declared parameters before starting: that load
// of the plugin happens in a child too.
TEST_F(HardeningPlugins, ReadingDeclaredParametersSurvivesACrashingPlugin) {
  ASSERT_EQ(run({"register", "--backend", meta.string()}).exit_code, 0);
  const fs::path model = tmp / "m.onnx";
  write_text(model, "not read: the plugin crashes first");
  for (const std::string stage : {"static", "constructor"}) {
    const CliResult r = run({"benchmark", "--backend", "chaos", "--onnx", model.string()}, stage);
    expect_one_line_error(r, "the backend plugin 'chaos' (" + pkg.string() + ") ended without answering");
    EXPECT_TRUE(names_the_crash(r.err)) << r.err;
  }
}

}  // namespace
}  // namespace nnmeter::test
