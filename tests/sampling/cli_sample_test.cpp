// nn-meter sample / kernel-data to-csv end to end through the real binary, including a registered kernel
// plugin (the example in examples/plugins/custom_kernel) and the bad-input paths.
#include <gtest/gtest.h>

#include "common/io.h"
#include "kernels/kernel_test_util.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

using test::run_cli;

struct CliWorkspace {
  test::TempDir home, dir;
  fs::path ws = dir / "ws";
  CliWorkspace() {
    auto r = run_cli({"create", "--tflite-workspace", ws.string()}, home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  fs::path kernels() const { return ws / "predictor_build/kernels"; }
  fs::path results() const { return ws / "predictor_build/results"; }
};

size_t count_files(const fs::path& dir) {
  if (!fs::exists(dir)) return 0;
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

void expect_one_line_failure(const test::CliResult& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(CliSample, PriorThenFinegrainedThenCsv) {
  CliWorkspace w;
  auto r = run_cli({"sample", "--workspace", w.ws.string(), "--kernel", "conv-bn-relu", "--num", "5", "--seed", "3"},
                   w.home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Generated 5 conv-bn-relu kernel models"), std::string::npos) << r.out;
  EXPECT_EQ(count_files(w.kernels()), 5u);
  const fs::path prior = w.results() / "conv-bn-relu_prior.json";
  Json data = io::load_json_file(prior);
  ASSERT_EQ(data["conv-bn-relu"].size(), 5u);
  for (const auto& [id, item] : data["conv-bn-relu"].items())
    EXPECT_NO_THROW(test::checked_output_shapes(test::parse_model(test::read_text(item["model"].get<std::string>()))));

  // The same seed again: every config is a duplicate, nothing new is written.
  r = run_cli({"--json", "sample", "--workspace", w.ws.string(), "--kernel", "conv-bn-relu", "--num", "5", "--seed", "3",
               "--mark", "again"},
              w.home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["written"], 0);
  EXPECT_EQ(count_files(w.kernels()), 5u);

  r = run_cli({"sample", "--workspace", w.ws.string(), "--kernel", "conv-bn-relu", "--sampling-mode", "finegrained",
               "--configs", prior.string(), "--num", "2", "--seed", "4"},
              w.home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json fine = io::load_json_file(w.results() / "conv-bn-relu_finegrained.json");
  EXPECT_GE(fine["conv-bn-relu"].size(), 5u);
  EXPECT_LE(fine["conv-bn-relu"].size(), 10u);

  Json latencies;
  for (const auto& [id, item] : data["conv-bn-relu"].items()) latencies["conv-bn-relu"][id]["latency"] = "2.5 +- 0.1";
  io::save_json_file(w.results() / "profiled_conv-bn-relu.json", latencies);
  r = run_cli({"kernel-data", "to-csv", "--workspace", w.ws.string(), "--kernel", "conv-bn-relu"}, w.home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string csv = test::read_text(w.results() / "collection/Data_conv-bn-relu_prior.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "model_path,HW,CIN,COUT,KERNEL_SIZE,STRIDES,feature_0,feature_1,latency");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
}

TEST(CliSample, BadInputsFailWithOneLineAndNoFiles) {
  CliWorkspace w;
  const std::vector<std::string> base = {"sample", "--workspace", w.ws.string(), "--seed", "1"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, w.home.path());
  };
  auto r = with({"--kernel", "conv-bn-relux", "--num", "3"});
  expect_one_line_failure(r, "unknown kernel 'conv-bn-relux'");
  EXPECT_NE(r.err.find("dwconv-bn-hswish"), std::string::npos);
  expect_one_line_failure(with({"--kernel", "relu", "--num", "0"}), "sample_num must be a positive integer");
  expect_one_line_failure(with({"--kernel", "relu", "--num=-4"}), "sample_num must be a positive integer");
  expect_one_line_failure(with({"--kernel", "relu", "--num", "3", "--prior-config-lib", (w.dir / "missing").string()}),
                          "cannot read prior config CSV");
  test::write_text(w.dir / "bad.json", R"([{"HW": 7, "CIN": 0}])");
  expect_one_line_failure(with({"--kernel", "relu", "--sampling-mode", "finegrained", "--configs", (w.dir / "bad.json").string()}),
                          "CIN = 0");
  test::write_text(w.dir / "bad2.json", R"([{"HW": 7, "CIN": 10000000}])");
  expect_one_line_failure(
      with({"--kernel", "relu", "--sampling-mode", "finegrained", "--configs", (w.dir / "bad2.json").string()}),
      "CIN = 10000000 is out of range");
  test::write_text(w.dir / "bad3.json", R"([{"HW": 7, "CIN": "many", "COUT": 3, "KERNEL_SIZE": 3, "STRIDES": 1}])");
  expect_one_line_failure(
      with({"--kernel", "conv-bn", "--sampling-mode", "finegrained", "--num", "2", "--configs", (w.dir / "bad3.json").string()}),
      "CIN must be an integer");
  expect_one_line_failure(with({"--kernel", "relu", "--sampling-mode", "finegrained"}), "needs --configs");
  EXPECT_FALSE(fs::exists(w.ws / "predictor_build/kernels"));
  EXPECT_EQ(count_files(w.results()), 0u);
}

TEST(CliSample, CustomKernelPluginRunsThroughTheSamePath) {
  CliWorkspace w;
  const fs::path plugin_dir = fs::path(NNMETER_EXAMPLE_KERNEL_PLUGIN).parent_path();
  test::write_text(w.dir / "meta.yaml", "builtin_name: mykernel\nimplement: onnx\npackage_location: " +
                                            plugin_dir.string() +
                                            "\nclass_module: kernel_script\nclass_name: MyKernel\n"
                                            "sampler_module: config_sampler\nsampler_name: MySampler\n"
                                            "parser_module: feature_parser\nparser_name: MyParser\n");
  auto r = run_cli({"register", "--kernel", (w.dir / "meta.yaml").string()}, w.home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  r = run_cli({"--list-kernels"}, w.home.path());
  EXPECT_NE(r.out.find("* mykernel"), std::string::npos) << r.out;

  r = run_cli({"sample", "--workspace", w.ws.string(), "--kernel", "mykernel", "--num", "4", "--seed", "9"}, w.home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Json data = io::load_json_file(w.results() / "mykernel_prior.json");
  ASSERT_GE(data["mykernel"].size(), 1u);
  for (const auto& [id, item] : data["mykernel"].items()) {
    EXPECT_EQ(fs::path(item["model"].get<std::string>()).filename(), "mykernel_prior_" + id + ".onnx");
    EXPECT_NO_THROW(test::checked_output_shapes(test::parse_model(test::read_text(item["model"].get<std::string>()))));
  }
  Json latencies;
  for (const auto& [id, item] : data["mykernel"].items()) latencies["mykernel"][id]["latency"] = 1.5;
  io::save_json_file(w.dir / "lat.json", latencies);
  r = run_cli({"kernel-data", "to-csv", "--workspace", w.ws.string(), "--kernel", "mykernel", "--latencies",
               (w.dir / "lat.json").string(), "--output", (w.dir / "my.csv").string()},
              w.home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_text(w.dir / "my.csv").rfind("model_path,", 0), 0u);
}

}  // namespace
}  // namespace nnmeter
