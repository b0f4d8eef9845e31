// tflite_cpu / tflite_gpu: the benchmark_model parser on recorded outputs of several TFLite builds, and
// the adb sequence against a stand-in adb that records its argv and plays back a recorded device.
#include <gtest/gtest.h>

#include "backends/tflite/benchmark_output.h"
#include "backends/tflite/tflite_backend.h"
#include "backends/fake_tool.h"

namespace nnmeter::tflite {
namespace {

using test::contains;

std::string fixture(const std::string& name) { return test::read_text(test::fixture_path(name)); }

TEST(BenchmarkModelOutput, RecentBuildTakesTheTimedPhaseWithItsMedian) {
  const auto r = parse_benchmark_model_output(fixture("benchmark_model_recent.txt"));
  EXPECT_EQ(r.stats.count, 1000);
  EXPECT_DOUBLE_EQ(r.stats.mean, 63.7432);
  EXPECT_DOUBLE_EQ(r.stats.std, 60.716);
  EXPECT_DOUBLE_EQ(r.stats.min, 49.088);
  EXPECT_DOUBLE_EQ(r.stats.max, 686.105);
  EXPECT_DOUBLE_EQ(r.stats.median, 51.891);
  EXPECT_TRUE(r.stats.samples_ms.empty());
  ASSERT_TRUE(r.warmup);
  EXPECT_EQ(r.warmup->count, 9);
  EXPECT_DOUBLE_EQ(r.warmup->mean, 58.1474);
  EXPECT_DOUBLE_EQ(*r.init_ms, 119.515);
  EXPECT_DOUBLE_EQ(*r.first_inference_ms, 87.112);
  EXPECT_DOUBLE_EQ(*r.memory_init_mb, 3.27734);
  EXPECT_DOUBLE_EQ(*r.memory_overall_mb, 36.0117);
  EXPECT_TRUE(r.stats_line.starts_with("INFO: count=1000 first=52162"));
}

TEST(BenchmarkModelOutput, Tf2BuildWithoutPrefixOrPercentilesUsesTheAverageAsCentre) {
  const auto r = parse_benchmark_model_output(fixture("benchmark_model_tf2.txt"));
  EXPECT_EQ(r.stats.count, 50);
  EXPECT_DOUBLE_EQ(r.stats.mean, 79.732);
  EXPECT_DOUBLE_EQ(r.stats.median, 79.732);
  EXPECT_DOUBLE_EQ(r.stats.std, 1.929);
  EXPECT_DOUBLE_EQ(*r.init_ms, 38.467);
  EXPECT_DOUBLE_EQ(*r.memory_init_mb, 55.4961);
  EXPECT_DOUBLE_EQ(*r.memory_overall_mb, 55.4961);
}

TEST(BenchmarkModelOutput, LegacyBuildWithAverageSummary) {
  const auto r = parse_benchmark_model_output(fixture("benchmark_model_legacy.txt"));
  EXPECT_EQ(r.stats.count, 50);
  EXPECT_DOUBLE_EQ(r.stats.mean, 79.7609);
  EXPECT_DOUBLE_EQ(r.stats.min, 77.385);
  EXPECT_DOUBLE_EQ(*r.init_ms, 38.467);
  EXPECT_FALSE(r.memory_overall_mb);
  EXPECT_EQ(r.warmup->count, 6);
}

TEST(BenchmarkModelOutput, OpProfilingTablesDoNotReplaceTheModelLatency) {
  const auto r = parse_benchmark_model_output(fixture("benchmark_model_op_profiling.txt"));
  EXPECT_EQ(r.stats.count, 508);
  EXPECT_DOUBLE_EQ(r.stats.mean, 1.9662);
  // Only the operator profile: its whole-graph line is what there is (nn-Meter's own parser reads it).
  const auto only = parse_benchmark_model_output("Timings (microseconds): count=50 first=79449 curr=81350 min=77385 max=88213 avg=79732 std=1929\n");
  EXPECT_DOUBLE_EQ(only.stats.mean, 79.732);
  EXPECT_EQ(only.stats.count, 50);
}

TEST(BenchmarkModelOutput, UnparsableOutputIsAnErrorCarryingTheRawLine) {
  const std::string bad = "INFO: count=50 first=1 curr=2 min=abc max=9 avg=5 std=1";
  std::string e = test::error_of([&] { parse_benchmark_model_output("STARTING!\n" + bad + "\n"); });
  EXPECT_TRUE(contains(e, bad)) << e;
  EXPECT_TRUE(contains(e, "'min='")) << e;
  e = test::error_of([] { parse_benchmark_model_output("count=0 first=1 curr=1 min=1 max=1 avg=1 std=0\n"); });
  EXPECT_TRUE(contains(e, "impossible count")) << e;
  e = test::error_of([] { parse_benchmark_model_output("count=5 first=1 curr=1 min=9 max=1 avg=5 std=0\n"); });
  EXPECT_TRUE(contains(e, "inconsistent")) << e;
  e = test::error_of([] {
    parse_benchmark_model_output("Loaded model m.tflite\nERROR: Didn't find op for builtin opcode 'HARD_SWISH' version '1'\n"
                                 "ERROR: Registration failed.\nFailed to construct interpreter\n");
  });
  EXPECT_TRUE(contains(e, "ERROR: Didn't find op for builtin opcode 'HARD_SWISH'")) << e;
  e = test::error_of([] { parse_benchmark_model_output(""); });
  EXPECT_TRUE(contains(e, "(no output)")) << e;
}

// The stand-in adb with a model file to push.
struct FakeDevice : test::FakeTool {
  fs::path model = dir() / "model.tflite";

  FakeDevice() : FakeTool("fake_adb.sh", "adb", "FAKE_ADB_LOG") {
    test::write_text(model, "TFL3 not a real model: the stand-in device only receives it");
    set("FAKE_ADB_OUTPUT", test::fixture_path("benchmark_model_recent.txt").string());
  }
  std::unique_ptr<Backend> backend(bool gpu, Json config) const {
    config["ADB"] = program().string();
    const BackendInfo info = backend_info(gpu);
    return info.create(resolve_backend_config(info.params, config, "test"));
  }
};

TEST(TfliteBackend, ProfilePushesRunsParsesAndRemoves) {
  FakeDevice d;
  auto b = d.backend(false, {{"DEVICE_SERIAL", "emulator-5554"}, {"REMOTE_MODEL_DIR", "/data/local/tmp/bench"}});
  const LatencyStats s = b->profile({d.model});
  EXPECT_EQ(s.count, 1000);
  EXPECT_DOUBLE_EQ(s.median, 51.891);
  EXPECT_DOUBLE_EQ(s.mean, 63.7432);
  const std::vector<std::string> expected = {
      "-s|emulator-5554|push|" + d.model.string() + "|/data/local/tmp/bench/model.tflite",
      "-s|emulator-5554|shell|/data/local/tmp/benchmark_model|--graph=/data/local/tmp/bench/model.tflite|--num_threads=1|"
      "--num_runs=50|--warmup_runs=10",
      "-s|emulator-5554|shell|rm|/data/local/tmp/bench/model.tflite"};
  EXPECT_EQ(d.calls(), expected);
}

TEST(TfliteBackend, GpuAddsUseGpuAndTheConfiguredFlags) {
  FakeDevice d;
  auto b = d.backend(true, {{"NUM_THREADS", 4}, {"NUM_RUNS", 20}, {"WARMUP_RUNS", 3}, {"KERNEL_PATH", "/data/local/tmp/kernels"},
                            {"TASKSET", "70"}, {"USE_XNNPACK", false}});
  b->profile({d.model});
  const auto calls = d.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], "push|" + d.model.string() + "|/mnt/sdcard/tflite_bench/model.tflite");  // no serial: adb's only device
  EXPECT_EQ(calls[1], "shell|taskset|70|/data/local/tmp/benchmark_model|--graph=/mnt/sdcard/tflite_bench/model.tflite|"
                      "--num_threads=4|--num_runs=20|--warmup_runs=3|--kernel_path=/data/local/tmp/kernels|"
                      "--use_xnnpack=false|--use_gpu=true");
  EXPECT_EQ(calls[2], "shell|rm|/mnt/sdcard/tflite_bench/model.tflite");
}

TEST(TfliteBackend, RemotePathsAreQuotedForTheDeviceShell) {
  FakeDevice d;
  auto b = d.backend(false, {{"REMOTE_MODEL_DIR", "/sdcard/my models"}});
  b->profile({d.model});
  const auto calls = d.calls();
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0], "push|" + d.model.string() + "|/sdcard/my models/model.tflite");  // adb push takes it as one word
  EXPECT_TRUE(contains(calls[1], "|'--graph=/sdcard/my models/model.tflite'|")) << calls[1];
  EXPECT_EQ(calls[2], "shell|rm|'/sdcard/my models/model.tflite'");
}

TEST(TfliteBackend, ConnectionReportsModelAndAndroidVersion) {
  FakeDevice d;
  const std::string msg = d.backend(false, {{"DEVICE_SERIAL", "emulator-5554"}})->test_connection();
  EXPECT_TRUE(contains(msg, "Pixel 4")) << msg;
  EXPECT_TRUE(contains(msg, "Android 12")) << msg;
  EXPECT_TRUE(contains(msg, "emulator-5554")) << msg;
  const std::vector<std::string> expected = {"-s|emulator-5554|shell|getprop|ro.product.model",
                                             "-s|emulator-5554|shell|getprop|ro.build.version.release",
                                             "-s|emulator-5554|shell|ls|/data/local/tmp/benchmark_model"};
  EXPECT_EQ(d.calls(), expected);
  EXPECT_EQ(d.backend(false, {})->get_version(), "adb 1.0.41");
}

TEST(TfliteBackend, MissingAdbDeviceOrBinaryAreOneLineErrors) {
  FakeDevice d;
  Json config = {{"ADB", (d.dir() / "no-such-adb").string()}};
  const BackendInfo info = backend_info(false);
  auto no_adb = info.create(resolve_backend_config(info.params, config, "test"));
  EXPECT_FALSE(no_adb->is_available());
  std::string e = test::error_of([&] { no_adb->profile({d.model}); });
  EXPECT_TRUE(contains(e, "is not installed or not on PATH")) << e;
  EXPECT_FALSE(contains(e, "\n"));

  e = test::error_of([&] { d.backend(false, {{"DEVICE_SERIAL", "R58M123"}})->test_connection(); });
  EXPECT_TRUE(contains(e, "adb cannot reach device 'R58M123'")) << e;
  EXPECT_TRUE(contains(e, "error: device 'R58M123' not found")) << e;

  d.set("FAKE_ADB_DEVICE", "none");
  e = test::error_of([&] { d.backend(false, {})->profile({d.model}); });
  EXPECT_TRUE(contains(e, "error: no devices/emulators found")) << e;
  EXPECT_TRUE(contains(e, "adb devices")) << e;
  ::unsetenv("FAKE_ADB_DEVICE");

  d.set("FAKE_ADB_BINARY", "missing");
  fs::remove(d.log());
  e = test::error_of([&] { d.backend(false, {})->profile({d.model}); });
  EXPECT_TRUE(contains(e, "benchmark_model is not on the device at /data/local/tmp/benchmark_model")) << e;
  ASSERT_EQ(d.calls().size(), 3u);
  EXPECT_EQ(d.calls()[2], "shell|rm|/mnt/sdcard/tflite_bench/model.tflite");  // cleaned up all the same
  e = test::error_of([&] { d.backend(false, {})->test_connection(); });
  EXPECT_TRUE(contains(e, "benchmark_model is not on the device")) << e;
}

TEST(TfliteBackend, UnparsableOutputLosesTheSampleAndStillCleansUp) {
  FakeDevice d;
  const fs::path out = d.dir() / "garbled.txt";
  test::write_text(out, "INFO: Initialized session in 1.2ms.\nINFO: count=50 first=1 curr=x min=1 max=2 avg=1.5 std=0.1\n");
  d.set("FAKE_ADB_OUTPUT", out.string());
  const std::string e = test::error_of([&] { d.backend(false, {})->profile({d.model}); });
  EXPECT_TRUE(contains(e, "tflite_cpu: ")) << e;
  EXPECT_TRUE(contains(e, "INFO: count=50 first=1 curr=x min=1 max=2 avg=1.5 std=0.1")) << e;
  EXPECT_EQ(d.calls().size(), 3u);
}

TEST(TfliteBackend, HungBenchmarkTimesOutAndIsCleanedUp) {
  FakeDevice d;
  d.set("FAKE_ADB_SLEEP", "30");
  const auto start = std::chrono::steady_clock::now();
  const std::string e = test::error_of([&] { d.backend(false, {{"TIMEOUT_S", 1.0}})->profile({d.model}); });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(contains(e, "did not finish within 1 s (TIMEOUT_S)")) << e;
  ASSERT_EQ(d.calls().size(), 3u);
  EXPECT_TRUE(d.calls()[2].starts_with("shell|rm|"));
}

TEST(TfliteBackend, DryRunRunsNothingAndMeasuresNothing) {
  FakeDevice d;
  auto b = d.backend(false, {{"DRY_RUN", true}});
  const LatencyStats s = b->profile({d.model});
  EXPECT_EQ(s.count, 0);  // a profiling worker turns this into a lost sample
  EXPECT_TRUE(d.calls().empty());
}

TEST(TfliteBackend, ProfileNeedsAConvertedModel) {
  FakeDevice d;
  std::string e = test::error_of([&] { d.backend(false, {})->profile({d.dir() / "model.onnx"}); });
  EXPECT_TRUE(contains(e, "profiles .tflite files")) << e;
  e = test::error_of([&] { d.backend(false, {})->build_wrapper({d.model}); });
  EXPECT_TRUE(contains(e, "no inference wrapper")) << e;
}

}  // namespace
}  // namespace nnmeter::tflite
