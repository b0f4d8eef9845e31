// tflite_cpu / tflite_gpu through the real binary: the workspace `create --tflite-workspace` writes is
// connectable, `backend tflite_cpu convert|profile` export and measure over a stand-in adb first on PATH
// (tests/backends/fake_adb.sh), --dry-run prints the commands, check-env and --list-backends show them.
#include <sys/stat.h>

#include "networks/layers.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"
#include "support/cli_expect.h"

namespace nnmeter::test {
namespace {

const fs::path kSource = NNMETER_SOURCE_DIR;

struct Phone {
  TempDir home, dir;
  fs::path bin = dir / "bin";
  fs::path log = dir / "argv.log";
  fs::path onnx = dir / "conv.onnx";

  Phone() {
    fs::create_directories(bin);
    fs::copy_file(kSource / "tests/backends/fake_adb.sh", bin / "adb");
    ::chmod((bin / "adb").c_str(), 0755);
    for (auto& k : builtin_kernels())
      if (k.name == "conv-bn-relu")
        write_text(onnx, k.create(Json::object())
                             .kernel->build_onnx({{"HW", 8}, {"CIN", 4}, {"COUT", 8}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}}, 1));
  }
  std::map<std::string, std::string> env() const {
    return {{"PATH", bin.string() + ":" + std::getenv("PATH")},
            {"FAKE_ADB_LOG", log.string()},
            {"FAKE_ADB_OUTPUT", (kSource / "tests/backends/fixtures/benchmark_model_recent.txt").string()}};
  }
  CliResult run(const std::vector<std::string>& args) const { return run_cli(args, home.path(), env()); }
};

TEST(TfliteCli, CreatedWorkspaceConnectsAndReportsTheDevice) {
  Phone p;
  const fs::path ws = p.dir / "ws";
  ASSERT_EQ(p.run({"create", "--tflite-workspace", ws.string()}).exit_code, 0);
  for (const char* backend : {"tflite_cpu", "tflite_gpu"}) {
    const CliResult r = p.run({"connect", "--backend", backend, "--workspace", ws.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "device Pixel 4, Android 12")) << r.out;
  }
  EXPECT_TRUE(contains(read_text(p.log), "shell|getprop|ro.product.model"));
}

TEST(TfliteCli, ProfileMeasuresEveryRepeatOnTheDevice) {
  Phone p;
  const CliResult r = p.run({"backend", "tflite_cpu", "profile", "--onnx-path", p.onnx.string(), "--device-serial",
                             "emulator-5554", "--repeats", "2", "--num-runs", "30"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "repeat 2: median 51.8910 ms (mean 63.7432")) << r.out;
  EXPECT_TRUE(contains(r.out, "tflite_cpu latency of " + p.onnx.string() + ": 51.891 +- 0 ms")) << r.out;
  const std::string log = read_text(p.log);
  EXPECT_EQ(count_lines(p.log), 6u) << log;  // push, run, rm per repeat
  EXPECT_TRUE(contains(log, "-s|emulator-5554|shell|/data/local/tmp/benchmark_model|--graph=/mnt/sdcard/tflite_bench/conv.tflite|"
                            "--num_threads=1|--num_runs=30|--warmup_runs=10\n"))
      << log;
}

TEST(TfliteCli, DryRunPrintsTheExactCommands) {
  Phone p;
  const CliResult r = p.run({"backend", "tflite_gpu", "profile", "--onnx-path", p.onnx.string(), "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(nn-Meter) [dry-run] adb push ")) << r.out;
  EXPECT_TRUE(contains(r.out, "conv.tflite /mnt/sdcard/tflite_bench/conv.tflite\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "(nn-Meter) [dry-run] adb shell /data/local/tmp/benchmark_model "
                              "--graph=/mnt/sdcard/tflite_bench/conv.tflite --num_threads=1 --num_runs=50 "
                              "--warmup_runs=10 --use_gpu=true\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "(nn-Meter) [dry-run] adb shell rm /mnt/sdcard/tflite_bench/conv.tflite\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "nothing was measured")) << r.out;
  EXPECT_FALSE(fs::exists(p.log));  // adb never ran
}

TEST(TfliteCli, DeviceProblemsAreOneLineErrors) {
  Phone p;
  auto env = p.env();
  env["FAKE_ADB_DEVICE"] = "none";
  CliResult r = run_cli({"backend", "tflite_cpu", "profile", "--onnx-path", p.onnx.string(), "--repeats", "1"}, p.home.path(), env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "error: no devices/emulators found")) << r.err;
  const fs::path ws = p.dir / "ws";
  ASSERT_EQ(p.run({"create", "--tflite-workspace", ws.string()}).exit_code, 0);
  env["PATH"] = "/nonexistent";
  r = run_cli({"connect", "--backend", "tflite_cpu", "--workspace", ws.string()}, p.home.path(), env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "tflite_cpu: 'adb' is not installed or not on PATH: install Android's platform tools")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(TfliteCli, ConvertWritesTflite) {
  Phone p;
  const fs::path out = p.dir / "out";
  const CliResult r = p.run({"backend", "tflite_cpu", "convert", "--onnx-path", p.onnx.string(), "--work-dir", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string bytes = read_text(out / "conv.tflite");
  ASSERT_GT(bytes.size(), 8u);
  EXPECT_EQ(bytes.substr(4, 4), "TFL3");  // TFLite's file identifier
}

TEST(TfliteCli, UnsupportedOpIsNamedAndNothingIsWritten) {
  Phone p;
  networks::LayerBuilder b("tanh");
  b.output(b.node("Tanh", {b.relu(b.input("x", {1, 4, 8, 8}))}, {1, 4, 8, 8}));
  const fs::path model = p.dir / "tanh.onnx";
  b.save(model);
  const fs::path out = p.dir / "out";
  fs::create_directories(out);
  const CliResult r = p.run({"backend", "tflite_gpu", "convert", "--onnx-path", model.string(), "--work-dir", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "tflite_gpu cannot convert Tanh node")) << r.err;
  EXPECT_TRUE(contains(r.err, "op 'Tanh' has no TFLite export")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(fs::is_empty(out));
}

TEST(TfliteCli, ListedAndCheckedLikeEveryBackend) {
  Phone p;
  const CliResult listed = p.run({"--list-backends"});
  EXPECT_TRUE(contains(listed.out, "[Backend] tflite_cpu\n")) << listed.out;
  EXPECT_TRUE(contains(listed.out, "[Backend] tflite_gpu\n")) << listed.out;
  CliResult r = p.run({"check-env"});
  EXPECT_TRUE(contains(r.out, "tflite_cpu:\tadb 1.0.41\n")) << r.out;
  auto env = p.env();
  env["PATH"] = "/nonexistent";
  r = run_cli({"check-env"}, p.home.path(), env);
  EXPECT_TRUE(contains(r.out, "tflite_cpu:\tNone\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "tflite_gpu:\tNone\n")) << r.out;
}

}  // namespace
}  // namespace nnmeter::test
