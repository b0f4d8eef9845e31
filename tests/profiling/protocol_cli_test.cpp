// `nn-meter benchmark` and `backend NAME profile` measure by the repeat protocol: every repeat in its own
// process, each shown, then the label; the protocol's keys are flags and config keys of every backend.
#include <gtest/gtest.h>

#include "networks/architectures.h"
#include "common/io.h"
#include "nnmeter/latency.h"
#include "support/test_support.h"

namespace nnmeter::test {
namespace {

class ProtocolCli : public ::testing::Test {
 protected:
  void SetUp() override { write_text(model, networks::build("mobilenet_v2", 32).model.SerializeAsString()); }
  TempDir tmp;
  const fs::path model = tmp / "mbv2.onnx";
  const std::vector<std::string> quick = {"--warmup-runs", "0", "--num-runs", "2", "--num-rounds", "1",
                                          "--min-time-ms", "0", "--max-retries", "0"};
};

TEST_F(ProtocolCli, BackendProfileShowsEveryRepeatAndTheLabel) {
  std::vector<std::string> args = {"backend", "onednn_cpu", "profile", "--onnx-path", model.string(), "--repeats", "3"};
  args.insert(args.end(), quick.begin(), quick.end());
  const CliResult r = run_cli(args, tmp / "home");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"(nn-Meter) repeat 1: median ", "(nn-Meter) repeat 2: median ", "(nn-Meter) repeat 3: median "})
    EXPECT_TRUE(contains(r.out, line)) << r.out;
  EXPECT_FALSE(contains(r.out, "repeat 4:")) << r.out;
  EXPECT_TRUE(contains(r.out, "(min of 3 repeats in fresh processes, ")) << r.out;

  args.push_back("--repeat-statistic");
  args.push_back("median");
  args.insert(args.begin(), "--json");
  const CliResult j = run_cli(args, tmp / "home");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const Json result = Json::parse(j.out)["result"];
  EXPECT_EQ(result["statistic"], "median");
  const auto repeats = result["repeats_ms"].get<std::vector<double>>();
  ASSERT_EQ(repeats.size(), 3u);
  EXPECT_DOUBLE_EQ(result["latency_ms"].get<double>(), LatencyStats::from_samples(repeats).median);
  EXPECT_EQ(result["repeats"].size(), 3u);
}

TEST_F(ProtocolCli, BenchmarkPrintsOneLinePerRepeat) {
  const CliResult r = run_cli({"benchmark", "--onnx", model.string(), "--repeats", "2", "--runs", "2", "--rounds", "1",
                               "--warmup", "0"},
                              tmp / "home");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(nn-Meter) repeat 1: count=1 min=")) << r.out;
  EXPECT_TRUE(contains(r.out, "(nn-Meter) repeat 2: count=1 min=")) << r.out;
  EXPECT_TRUE(contains(r.out, "(nn-Meter) Latency: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "min of 2 repeats in fresh processes")) << r.out;
  const CliResult bad = run_cli({"benchmark", "--onnx", model.string(), "--repeats", "500"}, tmp / "home");
  EXPECT_EQ(bad.exit_code, 2);  // a flag's value out of range is a usage error, like a mistyped flag
  EXPECT_TRUE(contains(bad.err, "REPEATS must be an integer from 1 to 100, got 500")) << bad.err;
}

TEST_F(ProtocolCli, FlagValuesThatFailValidationAreUsageErrors) {
  for (const std::vector<std::string>& flags : {std::vector<std::string>{"--repeats", "0"},
                                                std::vector<std::string>{"--num-threads", "0"},
                                                std::vector<std::string>{"--repeat-statistic", "max"}}) {
    std::vector<std::string> args = {"backend", "onednn_cpu", "profile", "--onnx-path", model.string()};
    args.insert(args.end(), flags.begin(), flags.end());
    const CliResult r = run_cli(args, tmp / "home");
    EXPECT_EQ(r.exit_code, 2) << flags[0] << ": " << r.err;
    EXPECT_TRUE(contains(r.err, "command-line flags: ")) << r.err;
  }
  // The same value from a config file is the file's error: exit 1, naming the file.
  const fs::path config = tmp / "cfg.yaml";
  write_text(config, "REPEATS: 0\n");
  const CliResult r = run_cli({"backend", "onednn_cpu", "profile", "--onnx-path", model.string(), "--config", config.string()},
                              tmp / "home");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, config.string() + ": REPEATS must be an integer from 1 to 100, got 0")) << r.err;
}

TEST_F(ProtocolCli, WorkspaceConfigCarriesTheProtocolKeys) {
  const fs::path ws = tmp / "ws";
  ASSERT_EQ(run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home").exit_code, 0);
  const std::string yaml = read_text(ws / "configs" / "backend_config.yaml");
  for (const char* key : {"\nREPEATS: 5\n", "\nREPEAT_STATISTIC: min\n", "\nDRIFT_PROBE_EVERY: 0\n"})
    EXPECT_TRUE(contains(yaml, key)) << yaml;
  write_text(ws / "configs" / "backend_config.yaml", "REPEATS: 0\n");
  const CliResult r = run_cli({"connect", "--backend", "onednn_cpu", "--workspace", ws.string()}, tmp / "home");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "REPEATS must be an integer from 1 to 100, got 0")) << r.err;
}

}  // namespace
}  // namespace nnmeter::test
