// openvino_cpu / openvino_vpu through the real binary with a stand-in benchmark_app first on PATH
// (tests/backends/fake_benchmark_app.sh): the workspace `create --openvino-workspace` writes connects,
// profile measures through the protocol, --dry-run prints the command.
#include <sys/stat.h>

#include "networks/layers.h"
#include "support/cli_expect.h"

namespace nnmeter::test {
namespace {

struct Openvino {
  TempDir home, dir;
  fs::path bin = dir / "bin", log = dir / "argv.log", onnx = dir / "relu.onnx";
  Openvino() {
    fs::create_directories(bin);
    fs::copy_file(fs::path(NNMETER_SOURCE_DIR) / "tests/backends/fake_benchmark_app.sh", bin / "benchmark_app");
    ::chmod((bin / "benchmark_app").c_str(), 0755);
    networks::LayerBuilder b("relu");
    b.output(b.relu(b.input("x", {1, 4, 8, 8})));
    b.save(onnx);
  }
  CliResult run(const std::vector<std::string>& args) const {
    return run_cli(args, home.path(),
                   {{"PATH", bin.string() + ":" + std::getenv("PATH")},
                    {"FAKE_BENCHMARK_APP_LOG", log.string()},
                    {"FAKE_BENCHMARK_APP_OUTPUT", (fs::path(NNMETER_SOURCE_DIR) / "tests/backends/fixtures/benchmark_app_2021.txt").string()}});
  }
};

TEST(OpenvinoCli, CreatedWorkspaceConnects) {
  Openvino o;
  const fs::path ws = o.dir / "ws";
  ASSERT_EQ(o.run({"create", "--openvino-workspace", ws.string()}).exit_code, 0);
  const CliResult r = o.run({"connect", "--backend", "openvino_vpu", "--workspace", ws.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "openvino_vpu: benchmark_app ran a test model on MYRIAD (23.170 ms)")) << r.out;
}

TEST(OpenvinoCli, ProfileAndDryRun) {
  Openvino o;
  CliResult r = o.run({"backend", "openvino_cpu", "profile", "--onnx-path", o.onnx.string(), "--repeats", "1", "--num-threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "openvino_cpu latency of " + o.onnx.string() + ": 23.17 +- 0 ms")) << r.out;
  EXPECT_TRUE(contains(read_text(o.log), "|-d|CPU|-niter|50|-api|sync|-nireq|1|-nthreads|1\n")) << read_text(o.log);
  fs::remove(o.log);
  r = o.run({"backend", "openvino_vpu", "profile", "--onnx-path", o.onnx.string(), "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(nn-Meter) [dry-run] benchmark_app -m ")) << r.out;
  EXPECT_TRUE(contains(r.out, "relu.onnx -d MYRIAD -niter 50 -api sync -nireq 1\n")) << r.out;
  EXPECT_FALSE(fs::exists(o.log));
}

}  // namespace
}  // namespace nnmeter::test
