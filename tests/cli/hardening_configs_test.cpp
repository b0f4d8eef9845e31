// Numbers in workspace configs and flags are checked with their range when loaded, before any work:
// NaN, infinities, overflow, zero and negatives are one-line errors naming the file and the key.
#include "support/cli_expect.h"

namespace nnmeter::test {
namespace {

using Cases = std::vector<std::pair<std::string, std::string>>;  // config text → part of the message

class HardeningConfigs : public ::testing::Test {
 protected:
  void SetUp() override {
    const CliResult r = run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, home);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  fs::path config(const std::string& name) const { return ws / "configs" / name; }

  // Fails with one line holding `message` (and `file`, if given), before any file was written.
  void expect_refused(const std::vector<std::string>& args, const std::string& message, const std::string& file = "") {
    const CliResult r = run_cli(args, home);
    expect_one_line_error(r, message);
    if (!file.empty()) {
      EXPECT_TRUE(contains(r.err, file + ": ")) << r.err;
    }
    EXPECT_FALSE(fs::exists(ws / "predictor_build")) << "work started before the check";
  }

  // Writes each case's text as configs/<file> and runs `args`: each must be refused naming the file.
  void expect_each_refused(const std::string& file, const Cases& cases, const std::vector<std::string>& args) {
    for (const auto& [text, message] : cases) {
      write_text(config(file), text + "\n");
      expect_refused(args, message, file);
    }
  }

  std::vector<std::string> sample_fc() const {
    return {"sample", "--workspace", ws.string(), "--kernel", "fc", "--num", "2", "--seed", "1"};
  }
  std::vector<std::string> build_fc() const {
    return {"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--kernels", "fc"};
  }

  TempDir tmp;
  fs::path home = tmp / "home", ws = tmp / "ws";
};

TEST_F(HardeningConfigs, KernelSettingsOutOfRange) {
  Cases cases;
  for (const auto& [line, message] : Cases{
           {"INIT_SAMPLE_NUM: 4294967297", "KERNELS.fc.INIT_SAMPLE_NUM must be an integer in [1, 100000], got 4294967297"},
           {"INIT_SAMPLE_NUM: 0", "got 0"},
           {"INIT_SAMPLE_NUM: -5", "got -5"},
           {"INIT_SAMPLE_NUM: .nan", "got nan"},
           {"INIT_SAMPLE_NUM: 1.5", "got 1.5"},
           {"ITERATION: 1000", "KERNELS.fc.ITERATION"},
           {"ERROR_THRESHOLD: .nan", "KERNELS.fc.ERROR_THRESHOLD must be a number in (0, 10], got nan"},
           {"ERROR_THRESHOLD: .inf", "got inf"},
           {"ERROR_THRESHOLD: 0", "got 0"},
           {"ERROR_THRESHOLD: -0.1", "got -0.1"}})
    cases.push_back({"KERNELS:\n  fc:\n    " + line, message});
  expect_each_refused("predictorbuild_config.yaml", cases, sample_fc());
}

TEST_F(HardeningConfigs, TopLevelKeysOfPredictorBuildConfig) {
  expect_each_refused("predictorbuild_config.yaml",
                      {{"DETAIL: maybe", "DETAIL must be TRUE or FALSE, got \"maybe\""},
                       {"BATCH_SIZE: 0", "BATCH_SIZE must be an integer in [1, 4096], got 0"},
                       {"BATCH_SIZE: 99999999999999999999", "BATCH_SIZE must be an integer"},
                       {"PRIOR_CONFIG_LIB: {a: 1}", "PRIOR_CONFIG_LIB must be a text value"},
                       {"PRIOR_ROWS: 1.5", "PRIOR_ROWS must be a number in [0, 1], got 1.5"},
                       {"PRIOR_ROWS: .nan", "PRIOR_ROWS must be a number in [0, 1], got nan"},
                       {"PRIOR_ROWS_EXCLUDE: resnet18", "PRIOR_ROWS_EXCLUDE must be a list of names"},
                       {"ALIGNED_CHANNELS: -0.5", "ALIGNED_CHANNELS must be a number in [0, 1], got -0.5"},
                       {"STEM_SAMPLES: 2", "STEM_SAMPLES must be a number in [0, 1], got 2"},
                       {"STEM_SAMPLES: many", "STEM_SAMPLES must be a number in [0, 1], got \"many\""},
                       {"INPUT_RESOLUTIONS: 224", "INPUT_RESOLUTIONS must be a non-empty list of integers in [16, 1024], got 224"},
                       {"INPUT_RESOLUTIONS: [128, 4096]", "INPUT_RESOLUTIONS must be a non-empty list of integers in [16, 1024]"},
                       {"INPUT_RESOLUTIONS: []", "INPUT_RESOLUTIONS must be a non-empty list of integers in [16, 1024]"},
                       {"WIDTH_MULTIPLIERS: [0.5, 0]", "WIDTH_MULTIPLIERS must be a non-empty list of numbers in [0.1, 4], got [0.5,0]"},
                       {"WIDTH_MULTIPLIERS: 1.0", "WIDTH_MULTIPLIERS must be a non-empty list of numbers in [0.1, 4]"},
                       {"SAMPLE_MODELS: models", "SAMPLE_MODELS must be a list of network sets (nn-meter networks list) or paths (files or folders), got \"models\""},
                       {"SAMPLE_MODELS: [a, 3]", "SAMPLE_MODELS must be a list of network sets"}},
                      sample_fc());
  // DETAIL is only read after profiling; `build` must refuse it before sampling anything.
  expect_each_refused("predictorbuild_config.yaml", {{"DETAIL: maybe", "DETAIL"}}, build_fc());
}

// A key nn-meter does not read stays for plugins, silently; one that looks like a typo of a declared key
// (which would keep that key's default without a word) is named with the key it resembles.
TEST_F(HardeningConfigs, LikelyTyposOfConfigKeysAreNamed) {
  write_text(config("predictorbuild_config.yaml"),
             "ALIGNED_CHANEL: 0.5\nprior_rows: 0.2\nMY_PLUGIN_SETTING: 3\nKERNELS:\n  fc:\n    INIT_SAMPLE_NUMS: 2\n");
  const CliResult r = run_cli(sample_fc(), home);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string all = r.out + r.err;
  EXPECT_TRUE(contains(all, "predictorbuild_config.yaml: ALIGNED_CHANEL is not a key nn-meter reads (it keeps its default): "
                            "did you mean ALIGNED_CHANNELS?")) << all;
  EXPECT_TRUE(contains(all, "prior_rows is not a key nn-meter reads (it keeps its default): did you mean PRIOR_ROWS?")) << all;
  EXPECT_TRUE(contains(all, "KERNELS.fc.INIT_SAMPLE_NUMS is not a key nn-meter reads (it keeps its default): did you mean "
                            "KERNELS.fc.INIT_SAMPLE_NUM?")) << all;
  EXPECT_FALSE(contains(all, "MY_PLUGIN_SETTING")) << all;
  write_text(config("ruletest_config.yaml"), "hw: 28\nCIN: 16\n");
  const CliResult rt = run_cli(sample_fc(), home);
  EXPECT_EQ(rt.exit_code, 0) << rt.err;
  EXPECT_TRUE(contains(rt.out + rt.err, "ruletest_config.yaml: hw is not a key nn-meter reads (it keeps its default): did you mean HW?"))
      << rt.out << rt.err;
}

TEST_F(HardeningConfigs, RuleTestConfig) {
  expect_each_refused("ruletest_config.yaml",
                      {{"HW: 100000", "HW must be an integer in [1, 2048], got 100000"},
                       {"EMP_ALPHA: .nan", "EMP_ALPHA must be a number in [0, 100], got nan"},
                       {"CIN: 32768\nHW: 2048", "CIN x HW x HW is"},
                       {"LAYERS_1D: {fc: 1}", "LAYERS_1D must be a list of names"}},
                      sample_fc());
}

TEST_F(HardeningConfigs, BackendConfigValues) {
  const Cases cases = {{"NUM_RUNS: 4294967297", "key 'NUM_RUNS' must be an integer in [1, 1000000], got 4294967297"},
                       {"MIN_TIME_MS: .nan", "key 'MIN_TIME_MS' must be a number in [0, 3600000], got nan"},
                       {"MAX_BUSY: -1", "key 'MAX_BUSY'"}};
  expect_each_refused("backend_config.yaml", cases, {"connect", "--backend", "onednn_cpu", "--workspace", ws.string()});
  expect_each_refused("backend_config.yaml", cases, build_fc());
}

TEST_F(HardeningConfigs, Flags) {
  for (const std::string bad : {"nan", "inf", "0", "-3", "1e300"})
    expect_refused({"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--timeout", bad}, "--timeout must be");
  expect_refused({"sample", "--workspace", ws.string(), "--kernel", "fc", "--num", "2000000000"},
                 "at most 100000 (--num, INIT_SAMPLE_NUM or FINEGRAINED_SAMPLE_NUM), got 2000000000");
  expect_refused({"sample", "--workspace", ws.string(), "--kernel", "fc", "--num", "0"}, "got 0");
  expect_refused({"backend", "onednn_cpu", "profile", "--onnx-path", config("backend_config.yaml").string(), "--num-runs",
                  "-1"},
                 "NUM_RUNS");
}

}  // namespace
}  // namespace nnmeter::test
