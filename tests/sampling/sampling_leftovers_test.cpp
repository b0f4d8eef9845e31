// A sampling run killed between writing its models and its results file leaves models nothing refers to
// and temporary files; the next run on the workspace removes them and keeps everything referenced.
#include <gtest/gtest.h>

#include "common/io.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

TEST(SamplingLeftovers, NextRunRemovesUnreferencedFilesOfTheKernel) {
  test::TempDir home, dir;
  const fs::path ws = dir / "ws";
  ASSERT_EQ(test::run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, home.path()).exit_code, 0);
  auto sample = [&](const std::string& kernel, const std::string& seed) {
    const auto r = test::run_cli({"sample", "--workspace", ws.string(), "--kernel", kernel, "--num", "1", "--seed", seed},
                                 home.path());
    EXPECT_EQ(r.exit_code, 0) << r.err;
  };
  sample("relu", "1");
  sample("add", "1");
  const fs::path kernels = ws / "predictor_build" / "kernels";
  std::vector<fs::path> kept;
  for (const auto& e : fs::directory_iterator(kernels)) kept.push_back(e.path());
  ASSERT_EQ(kept.size(), 2u);

  const fs::path orphan = kernels / "relu_prior_ZZZZZZ.onnx";
  const fs::path temp = kernels / ".relu_prior_QQQQQQ.onnx.tmp.4242.0";
  const fs::path other = kernels / "add_prior_YYYYYY.onnx";  // another kernel's: left for its own next run
  for (const auto& p : {orphan, temp, other}) test::write_text(p, "partial");
  sample("relu", "2");
  EXPECT_FALSE(fs::exists(orphan));
  EXPECT_FALSE(fs::exists(temp));
  EXPECT_TRUE(fs::exists(other));
  for (const auto& p : kept) EXPECT_TRUE(fs::exists(p)) << p;
}

TEST(KernelDataToCsv, ImpossibleLabelsAreSkippedWithACount) {
  test::TempDir home, dir;
  const fs::path ws = dir / "ws";
  ASSERT_EQ(test::run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, home.path()).exit_code, 0);
  ASSERT_EQ(test::run_cli({"sample", "--workspace", ws.string(), "--kernel", "relu", "--num", "6", "--seed", "1"},
                          home.path())
                .exit_code,
            0);
  const fs::path results = ws / "predictor_build" / "results";
  const Json sampled = io::load_json_file(results / "relu_prior.json")["relu"];
  ASSERT_GE(sampled.size(), 2u);
  const std::vector<Json> bad = {"nan", "inf", "-1 +- 0", "not a number", 0.0, -3.0};
  Json profiled = Json::object();
  size_t i = 0;
  for (const auto& [id, entry] : sampled.items())
    profiled["relu"][id]["latency"] = i + 1 < sampled.size() ? bad[i++ % bad.size()] : Json("2.5 +- 0.1");
  io::save_json_file(results / "profiled_relu.json", profiled);

  const auto r = test::run_cli({"kernel-data", "to-csv", "--workspace", ws.string(), "--kernel", "relu"}, home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(test::contains(r.out + r.err, "skipped " + std::to_string(sampled.size() - 1) + " entries of 'relu'"))
      << r.out << r.err;
  const std::string csv = test::read_text(results / "collection" / "Data_relu_prior.csv");
  EXPECT_EQ(test::count_lines(results / "collection" / "Data_relu_prior.csv"), 2u) << csv;
  for (const std::string word : {"nan", "inf", ",-"}) EXPECT_FALSE(test::contains(csv, word)) << csv;
}

}  // namespace
}  // namespace nnmeter
