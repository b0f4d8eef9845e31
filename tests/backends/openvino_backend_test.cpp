// openvino_cpu / openvino_vpu: the benchmark_app report parser on the 2021 (one Latency line) and
// 2022+ (four lines) forms, and the runs against a stand-in benchmark_app that records its argv.
#include <gtest/gtest.h>

#include "backends/fake_tool.h"
#include "backends/openvino/benchmark_app_output.h"
#include "backends/openvino/openvino_backend.h"

namespace nnmeter::openvino {
namespace {

using test::contains;

std::string fixture(const std::string& name) { return test::read_text(test::fixture_path(name)); }

TEST(BenchmarkAppOutput, FourLineLatencyBlock) {
  const auto r = parse_benchmark_app_output(fixture("benchmark_app_2023.txt"));
  EXPECT_EQ(r.stats.count, 200);
  EXPECT_DOUBLE_EQ(r.stats.median, 2.03);
  EXPECT_DOUBLE_EQ(r.stats.mean, 2.05);
  EXPECT_DOUBLE_EQ(r.stats.min, 1.95);
  EXPECT_DOUBLE_EQ(r.stats.max, 2.71);
  EXPECT_DOUBLE_EQ(*r.throughput_fps, 484.68);
  EXPECT_DOUBLE_EQ(*r.duration_ms, 412.64);
  EXPECT_DOUBLE_EQ(*r.first_inference_ms, 11.84);
  EXPECT_FALSE(r.one_line);
}

TEST(BenchmarkAppOutput, OneLineLatencyOf2021) {
  const auto r = parse_benchmark_app_output(fixture("benchmark_app_2021.txt"));
  EXPECT_TRUE(r.one_line);
  EXPECT_EQ(r.stats.count, 50);
  EXPECT_DOUBLE_EQ(r.stats.median, 23.17);
  EXPECT_DOUBLE_EQ(r.stats.mean, 23.17);  // the only value printed
  EXPECT_DOUBLE_EQ(*r.throughput_fps, 43.16);
}

TEST(BenchmarkAppOutput, PercentileAndMicroseconds) {
  const auto r = parse_benchmark_app_output(fixture("benchmark_app_percentile_us.txt"));
  EXPECT_EQ(r.stats.count, 1000);
  EXPECT_DOUBLE_EQ(r.stats.median, 0.9124);
  EXPECT_DOUBLE_EQ(r.stats.mean, 0.8503);
  EXPECT_DOUBLE_EQ(r.stats.max, 1.3205);
}

TEST(BenchmarkAppOutput, UnparsableReportIsAnErrorCarryingTheRawLine) {
  std::string e = test::error_of([] {
    parse_benchmark_app_output("[ INFO ] Count:            200 iterations\n[ INFO ] Latency:\n[ INFO ]    Median:        2,03 ms\n");
  });
  EXPECT_TRUE(contains(e, "'[ INFO ]    Median:        2,03 ms'")) << e;
  e = test::error_of([] { parse_benchmark_app_output("Count: 5 iterations\nLatency: fast\n"); });
  EXPECT_TRUE(contains(e, "'Latency: fast'")) << e;
  e = test::error_of([] {
    parse_benchmark_app_output("[Step 2/11] Loading OpenVINO Runtime\n[ ERROR ] Device with \"MYRIAD\" name is not registered\n");
  });
  EXPECT_TRUE(contains(e, "[ ERROR ] Device with \"MYRIAD\" name is not registered")) << e;
  e = test::error_of([] { parse_benchmark_app_output("Latency:    2.0 ms\n"); });
  EXPECT_TRUE(contains(e, "no 'Count: N iterations' line")) << e;
}

struct FakeOpenvino : test::FakeTool {
  fs::path model = dir() / "model.onnx";
  FakeOpenvino() : FakeTool("fake_benchmark_app.sh", "benchmark_app", "FAKE_BENCHMARK_APP_LOG") {
    test::write_text(model, "stand-in: only its path is passed");
    set("FAKE_BENCHMARK_APP_OUTPUT", test::fixture_path("benchmark_app_2023.txt").string());
  }
  std::unique_ptr<Backend> backend(bool vpu, Json config = Json::object()) const {
    config["BENCHMARK_APP"] = program().string();
    const BackendInfo info = backend_info(vpu);
    return info.create(resolve_backend_config(info.params, config, "test"));
  }
};

TEST(OpenvinoBackend, ProfileRunsBenchmarkAppByArgv) {
  FakeOpenvino f;
  const LatencyStats s = f.backend(true, {{"NUM_RUNS", 100}, {"NUM_THREADS", 2}, {"DATA_TYPE", "FP16"}})->profile({f.model});
  EXPECT_DOUBLE_EQ(s.median, 2.03);
  EXPECT_EQ(s.count, 200);
  ASSERT_EQ(f.calls().size(), 1u);
  EXPECT_EQ(f.calls()[0], "-m|" + f.model.string() + "|-d|MYRIAD|-niter|100|-api|sync|-nireq|1|-nthreads|2|-infer_precision|FP16");
  f.backend(false)->profile({f.model});
  EXPECT_EQ(f.calls()[1], "-m|" + f.model.string() + "|-d|CPU|-niter|50|-api|sync|-nireq|1");
}

TEST(OpenvinoBackend, ConnectionRunsATestModelOnTheDevice) {
  FakeOpenvino f;
  const std::string msg = f.backend(true)->test_connection();
  EXPECT_TRUE(contains(msg, "benchmark_app ran a test model on MYRIAD (2.030 ms)")) << msg;
  EXPECT_TRUE(contains(f.calls().at(0), "|-d|MYRIAD|-niter|1|")) << f.calls()[0];
  f.set("FAKE_BENCHMARK_APP_DEVICE", "missing");
  const std::string e = test::error_of([&] { f.backend(true)->test_connection(); });
  EXPECT_TRUE(contains(e, "openvino_vpu on MYRIAD: ")) << e;
  EXPECT_TRUE(contains(e, "[ ERROR ] Device with \"MYRIAD\" name is not registered in the OpenVINO Runtime")) << e;
  EXPECT_EQ(f.backend(false)->get_version(), "2023.0.0-10926-b4452d56304-releases/2023/0");
}

TEST(OpenvinoBackend, MissingToolUnparsableOutputAndDryRun) {
  FakeOpenvino f;
  const BackendInfo info = backend_info(false);
  auto missing = info.create(resolve_backend_config(info.params, {{"BENCHMARK_APP", (f.dir() / "nope").string()}}, "test"));
  EXPECT_FALSE(missing->is_available());
  std::string e = test::error_of([&] { missing->profile({f.model}); });
  EXPECT_TRUE(contains(e, "is not installed or not on PATH: install OpenVINO")) << e;

  const fs::path garbled = f.dir() / "garbled.txt";
  test::write_text(garbled, "[ INFO ] Count:            200 iterations\n[ INFO ] Latency:\n[ INFO ]    Median:        n/a ms\n");
  f.set("FAKE_BENCHMARK_APP_OUTPUT", garbled.string());
  e = test::error_of([&] { f.backend(false)->profile({f.model}); });
  EXPECT_TRUE(contains(e, "[ INFO ]    Median:        n/a ms")) << e;

  const size_t before = f.calls().size();
  EXPECT_EQ(f.backend(false, {{"DRY_RUN", true}})->profile({f.model}).count, 0);
  EXPECT_EQ(f.calls().size(), before);
  e = test::error_of([&] { f.backend(false, {{"API", "fast"}}); });
  EXPECT_TRUE(contains(e, "API must be sync or async")) << e;
}

TEST(OpenvinoBackend, ConvertKeepsTheOnnxModel) {
  FakeOpenvino f;
  test::TempDir work;
  const std::string e = test::error_of([&] { f.backend(false)->to_backend(f.model, work.path(), ""); });
  EXPECT_TRUE(contains(e, "is not an ONNX model")) << e;
}

}  // namespace
}  // namespace nnmeter::openvino
