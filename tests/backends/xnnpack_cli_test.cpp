// xnnpack_cpu through the real binary: listed and versioned, a workspace created for it connects, and the
// console tool converts, runs (TensorProto .pb in and out) and profiles a model; an unsupported op is one line.
#include <algorithm>

#include "networks/layers.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"
#include "onnx_io/tensor_file.h"
#include "support/cli_expect.h"

namespace nnmeter::test {
namespace {

std::string conv_onnx() {
  for (auto& k : builtin_kernels())
    if (k.name == "conv-bn-relu")
      return k.create(Json::object()).kernel->build_onnx({{"HW", 8}, {"CIN", 4}, {"COUT", 8}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}}, 1);
  return "";
}

TEST(XnnpackCli, ListedWithItsVersionAndAWorkspaceConnects) {
  TempDir home, dir;
  CliResult r = run_cli({"--list-backends"}, home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out + r.err, "[Backend] xnnpack_cpu")) << r.out << r.err;
  r = run_cli({"check-env"}, home.path());
  EXPECT_TRUE(contains(r.out + r.err, "xnnpack_cpu:\t0.0~git")) << r.out << r.err;
  const fs::path ws = dir / "ws";
  ASSERT_EQ(run_cli({"create", "--workspace", ws.string(), "--backend", "xnnpack_cpu"}, home.path()).exit_code, 0);
  EXPECT_TRUE(contains(read_text(ws / "configs/backend_config.yaml"), "COLD_CACHE"));
  r = run_cli({"connect", "--backend", "xnnpack_cpu", "--workspace", ws.string()}, home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out + r.err, "XNNPACK")) << r.out << r.err;
}

TEST(XnnpackCli, ConvertsRunsAndProfiles) {
  TempDir home, dir;
  const fs::path onnx = dir / "conv.onnx";
  write_text(onnx, conv_onnx());
  CliResult r = run_cli({"backend", "xnnpack_cpu", "convert", "--onnx-path", onnx.string(), "--work-dir", dir.path().string()}, home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "conv.tflite"));
  EXPECT_TRUE(fs::exists(dir / "conv.xnnpack.json"));

  onnx_io::write_tensor_pb(dir / "x.pb", Tensor{"input", {1, 4, 8, 8}, std::vector<float>(256, 0.5f)});
  r = run_cli({"backend", "xnnpack_cpu", "run", "--onnx-path", onnx.string(), "--input", (dir / "x.pb").string(), "--output-dir",
               (dir / "out").string()},
              home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::is_empty(dir / "out"));

  r = run_cli({"--json", "backend", "xnnpack_cpu", "profile", "--onnx-path", onnx.string(), "--repeats", "2", "--num-runs", "3",
               "--num-rounds", "2"},
              home.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_GT(j["result"]["latency_ms"].get<double>(), 0) << r.out;
  EXPECT_EQ(j["result"]["repeats"].size(), 2u) << r.out;
}

TEST(XnnpackCli, AnOpWithoutALoweringIsOneLine) {
  TempDir home, dir;
  networks::LayerBuilder b("erf");
  b.output(b.node("Erf", {b.input("x", {1, 4, 8, 8})}, {1, 4, 8, 8}));
  b.save(dir / "erf.onnx");
  const CliResult r = run_cli({"backend", "xnnpack_cpu", "convert", "--onnx-path", (dir / "erf.onnx").string(), "--work-dir",
                               dir.path().string()},
                              home.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(contains(r.err, "xnnpack_cpu cannot convert Erf")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(dir / "erf.tflite"));
}

}  // namespace
}  // namespace nnmeter::test
