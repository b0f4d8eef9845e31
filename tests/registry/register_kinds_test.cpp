// Registering every kind of module through the real binary: kernels, operators, test cases, predictors.
#include <gtest/gtest.h>

#include "support/plugin_fixtures.h"

namespace nnmeter::test {
namespace {

// Registers backend `name` (class `cls` of the library `module`.so installed in `pkg`), creates a workspace
// for it and connects: the connect run's result.
CliResult register_and_connect(const fs::path& tmp, const fs::path& home, const fs::path& pkg, const std::string& name,
                               const std::string& module, const std::string& cls) {
  write_text(pkg / "meta.yaml", "builtinName: " + name + "\npackageLocation: " + pkg.string() +
                                    "\nclassModule: " + module + "\nclassName: " + cls + "\n");
  CliResult r = run_cli({"register", "--backend", (pkg / "meta.yaml").string()}, home);
  EXPECT_EQ(r.out, "(nn-Meter) Successfully register backend " + name + "\n") << r.err;
  if (r.exit_code != 0) return r;
  r = run_cli({"create", "--customized-workspace", (tmp / "ws").string(), "--backend", name}, home);
  if (r.exit_code != 0) return r;
  return run_cli({"connect", "--backend", name, "--workspace", (tmp / "ws").string()}, home);
}

TEST(RegisterKinds, KernelRegisterListUnregister) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  const fs::path meta = make_kernel_package(tmp / "customized_kernel");
  CliResult reg = run_cli({"register", "--kernel", meta.string()}, home);
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  EXPECT_EQ(reg.out, "(nn-Meter) Successfully register kernel: mykernel\n");
  CliResult listed = run_cli({"--list-kernels"}, home);
  EXPECT_TRUE(contains(listed.out, "(nn-Meter) Supported kernels: ('*' indicates customized kernels)\n"));
  EXPECT_TRUE(contains(listed.out, "(nn-Meter) [Kernel] * mykernel\n"));
  const std::string registry = read_text(home / "config" / "registry.yaml");
  EXPECT_TRUE(contains(registry, "samplerModule: config_sampler")) << registry;
  CliResult unreg = run_cli({"unregister", "--kernel", "mykernel"}, home);
  EXPECT_EQ(unreg.out, "(nn-Meter) Successfully unregister mykernel.\n");
  EXPECT_FALSE(contains(run_cli({"--list-kernels"}, home).out, "mykernel"));
}

TEST(RegisterKinds, KernelMetaMissingSamplerIsRefused) {
  TempDir tmp;
  const fs::path pkg = tmp / "k";
  make_kernel_package(pkg);
  write_text(pkg / "bad.yaml", "builtin_name: k2\npackage_location: " + pkg.string() +
                                   "\nclass_module: kernel_script\nclass_name: MyKernel\n");
  CliResult r = run_cli({"register", "--kernel", (pkg / "bad.yaml").string()}, tmp / "home");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "lacks the required key samplerModule")) << r.err;
}

TEST(RegisterKinds, OperatorsAndTestcasesAreKeyedByImplement) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  const fs::path pkg = tmp / "fusion";
  install_library(NNMETER_FUSION_PLUGIN, pkg, "fusion_plugin.so");
  write_text(pkg / "op.yaml", "builtin_name: myrelu\nimplement: onnx\npackage_location: " + pkg.string() +
                                  "\nclass_module: fusion_plugin\nclass_name: MyRelu\n");
  write_text(pkg / "tc.yaml", "builtin_name: relurelu\nimplement: onnx\npackage_location: " + pkg.string() +
                                  "\nclass_module: fusion_plugin\nclass_name: ReluReluCase\n");
  write_text(pkg / "op_bad.yaml", "builtin_name: my_relu\nimplement: onnx\npackage_location: " + pkg.string() +
                                      "\nclass_module: fusion_plugin\nclass_name: MyRelu\n");
  EXPECT_EQ(run_cli({"register", "--operator", (pkg / "op.yaml").string()}, home).out,
            "(nn-Meter) Successfully register operator: myrelu\n");
  EXPECT_EQ(run_cli({"register", "--testcase", (pkg / "tc.yaml").string()}, home).out,
            "(nn-Meter) Successfully register testcase: relurelu\n");
  CliResult underscore = run_cli({"register", "--operator", (pkg / "op_bad.yaml").string()}, home);
  EXPECT_NE(underscore.exit_code, 0);
  EXPECT_TRUE(contains(underscore.err, "contains '_'")) << underscore.err;
  EXPECT_TRUE(contains(run_cli({"--list-operators"}, home).out, "(nn-Meter) [Operator] * myrelu (onnx)\n"));
  EXPECT_TRUE(contains(run_cli({"--list-testcases"}, home).out, "(nn-Meter) [TestCase] * relurelu (onnx)\n"));
  CliResult wrong_impl = run_cli({"unregister", "--operator", "myrelu", "torch"}, home);
  EXPECT_NE(wrong_impl.exit_code, 0);
  EXPECT_TRUE(contains(wrong_impl.err, "with implement 'torch'")) << wrong_impl.err;
  EXPECT_EQ(run_cli({"unregister", "--operator", "myrelu", "onnx"}, home).exit_code, 0);
  EXPECT_EQ(run_cli({"unregister", "--testcase", "relurelu", "onnx"}, home).exit_code, 0);
  EXPECT_FALSE(contains(run_cli({"--list-operators"}, home).out, "myrelu"));
}

// ABI 1's macro stopped at six classes: the eighth class of one library registers, connects and profiles.
TEST(RegisterKinds, TheEighthClassOfOneLibraryRegistersAndConnects) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  const fs::path pkg = tmp / "many";
  install_library(NNMETER_MANY_CLASSES_PLUGIN, pkg, "many_classes.so");
  write_text(pkg / "op.yaml", "builtin_name: plainop\nimplement: onnx\npackage_location: " + pkg.string() +
                                  "\nclass_module: many_classes\nclass_name: plainOperator\n");
  EXPECT_EQ(run_cli({"register", "--operator", (pkg / "op.yaml").string()}, home).out,
            "(nn-Meter) Successfully register operator: plainop\n");
  const CliResult r = register_and_connect(tmp.path(), home, pkg, "eighth", "many_classes", "lastBackend");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "eighth of eight\n");
}

// The contract is the C ABI: a backend written in C against plugin_abi.h alone registers and connects.
TEST(RegisterKinds, ABackendWrittenInCRegistersAndConnects) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  const fs::path pkg = tmp / "cplugin";
  install_library(NNMETER_C_ABI_PLUGIN, pkg, "c_abi_backend.so");
  const CliResult r = register_and_connect(tmp.path(), home, pkg, "cback", "c_abi_backend", "cBackend");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "connected from C\n");
}

TEST(RegisterKinds, PredictorRegisterListUnregisterByVersion) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  const fs::path folder = tmp / "mypredictor";
  write_text(folder / "conv-bn-relu.json", "{}");
  write_text(folder / "fusion_rules.json", "{}");
  for (const std::string version : {"1.0", "2.0"}) {
    write_text(tmp / ("meta" + version + ".yaml"), "name: my_predictor\nversion: " + version +
                                                      "\ncategory: cpu\npackage_location: " + folder.string() +
                                                      "\nkernel_predictors:\n  - conv-bn-relu\n");
    CliResult r = run_cli({"register", "--predictor", (tmp / ("meta" + version + ".yaml")).string()}, home);
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  CliResult listed = run_cli({"--list-predictors"}, home);
  EXPECT_EQ(listed.out,
            "(nn-Meter) Supported latency predictors:\n(nn-Meter) [Predictor] my_predictor: version=1.0\n"
            "(nn-Meter) [Predictor] my_predictor: version=2.0\n");
  CliResult dup = run_cli({"register", "--predictor", (tmp / "meta1.0.yaml").string()}, home);
  EXPECT_NE(dup.exit_code, 0);
  EXPECT_TRUE(contains(dup.err, "already registered")) << dup.err;
  EXPECT_EQ(run_cli({"unregister", "--predictor", "my_predictor", "--predictor-version", "1.0"}, home).exit_code, 0);
  EXPECT_EQ(run_cli({"--list-predictors"}, home).out,
            "(nn-Meter) Supported latency predictors:\n(nn-Meter) [Predictor] my_predictor: version=2.0\n");
  EXPECT_EQ(run_cli({"unregister", "--predictor", "my_predictor"}, home).exit_code, 0);
  EXPECT_EQ(run_cli({"--list-predictors"}, home).out, "(nn-Meter) Supported latency predictors:\n");
}

TEST(RegisterKinds, PredictorMissingKernelModelIsRefused) {
  TempDir tmp;
  fs::create_directories(tmp / "p");
  write_text(tmp / "meta.yaml", "name: p\nversion: 1.0\npackage_location: " + (tmp / "p").string() +
                                    "\nkernel_predictors: [conv-bn-relu]\n");
  CliResult r = run_cli({"register", "--predictor", (tmp / "meta.yaml").string()}, tmp / "home");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "has no model conv-bn-relu.json")) << r.err;
}

TEST(Cli, VersionHelpAndHint) {
  TempDir tmp;
  CliResult version = run_cli({"--version"}, tmp.path());
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(contains(version.out, "nn-meter ")) << version.out;
  for (const char* sub : {"register", "unregister", "create", "connect"}) {
    CliResult help = run_cli({sub, "--help"}, tmp.path());
    EXPECT_EQ(help.exit_code, 0) << sub;
    EXPECT_TRUE(contains(help.out, std::string("nn-meter ") + sub)) << help.out;
  }
  CliResult bare = run_cli({}, tmp.path());
  EXPECT_EQ(bare.out, "(nn-Meter) please run \"nn-meter {positional argument} --help\" to see nn-meter guidance\n");
  CliResult unknown = run_cli({"no-such-command"}, tmp.path());
  EXPECT_NE(unknown.exit_code, 0);
}

}  // namespace
}  // namespace nnmeter::test
