// Bad input to register/unregister/create/connect: one line on stderr, a non-zero exit, nothing changed.
#include <gtest/gtest.h>

#include <thread>

#include "support/plugin_fixtures.h"

namespace nnmeter::test {
namespace {

class RegisterErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    home = tmp / "home";
    package = tmp / "pkg";
    meta = make_backend_package(package);
    ASSERT_EQ(run_cli({"register", "--backend", meta.string()}, home).exit_code, 0);
    registry_before = read_text(home / "config" / "registry.yaml");
  }

  // Runs the command and checks the failure contract: non-zero exit, exactly one stderr line containing
  // `expected`, no stdout, and registry.yaml unchanged.
  void expect_refused(const std::vector<std::string>& args, const std::string& expected,
                      const std::map<std::string, std::string>& env = {}) {
    const CliResult r = run_cli(args, home, env);
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_TRUE(contains(r.err, expected)) << "stderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.err.rfind("(nn-Meter) ", 0) == 0) << r.err;
    EXPECT_EQ(read_text(home / "config" / "registry.yaml"), registry_before);
  }

  // A package holding the built library `built` as backend.so, and a meta file naming its `class_name`.
  fs::path backend_meta_for(const char* built, const std::string& folder, const std::string& class_name) {
    const fs::path pkg = install_library(built, tmp / folder, "backend.so").parent_path();
    return write_meta(folder + ".yaml", "builtinName: other\npackageLocation: " + pkg.string() +
                                            "\nclassModule: backend\nclassName: " + class_name + "\n");
  }

  fs::path write_meta(const std::string& name, const std::string& text) {
    const fs::path p = tmp / name;
    write_text(p, text);
    return p;
  }

  TempDir tmp;
  fs::path home, package, meta;
  std::string registry_before;
};

TEST_F(RegisterErrors, MissingMetaFile) {
  expect_refused({"register", "--backend", (tmp / "nope.yaml").string()}, "file not found: ");
}

TEST_F(RegisterErrors, MetaFileIsNotYaml) {
  const auto m = write_meta("bad.yaml", "builtinName: [unclosed\n  : : :\n");
  expect_refused({"register", "--backend", m.string()}, "is not valid YAML");
}

TEST_F(RegisterErrors, MetaFileIsNotAMapping) {
  const auto m = write_meta("list.yaml", "- a\n- b\n");
  expect_refused({"register", "--backend", m.string()}, "must be a YAML mapping");
}

TEST_F(RegisterErrors, MissingRequiredKey) {
  const auto m = write_meta("m.yaml", "builtinName: other\npackageLocation: " + package.string() + "\nclassModule: backend\n");
  expect_refused({"register", "--backend", m.string()}, "lacks the required key className");
}

TEST_F(RegisterErrors, PackageLocationNotAFolder) {
  const auto m = write_meta("m.yaml", "builtinName: other\npackageLocation: " + (tmp / "missing").string() +
                                          "\nclassModule: backend\nclassName: myBackend\n");
  expect_refused({"register", "--backend", m.string()}, "package location is not a folder");
}

TEST_F(RegisterErrors, LibraryIsNotASharedObject) {
  const fs::path pkg = tmp / "textpkg";
  write_text(pkg / "backend.so", "this is text, not ELF\n");
  const auto m = write_meta("m.yaml", "builtinName: other\npackageLocation: " + pkg.string() +
                                          "\nclassModule: backend\nclassName: myBackend\n");
  expect_refused({"register", "--backend", m.string()}, "Registration failed: cannot load module 'backend' from " + pkg.string());
}

TEST_F(RegisterErrors, MissingEntryPoint) {
  const fs::path pkg = tmp / "noentry";
  fs::create_directories(pkg);
  fs::copy_file(NNMETER_NO_ENTRY_PLUGIN, pkg / "libbackend.so");
  const auto m = write_meta("m.yaml", "builtinName: other\npackageLocation: " + pkg.string() +
                                          "\nclassModule: backend\nclassName: myBackend\n");
  expect_refused({"register", "--backend", m.string()},
                 "does not export nnmeter_plugin_info (declare its classes with NNMETER_PLUGIN");
}

TEST_F(RegisterErrors, MissingClassListsTheLibrarysClasses) {
  const auto m = write_meta("m.yaml", "builtinName: other\npackageLocation: " + package.string() +
                                          "\nclassModule: backend\nclassName: NoSuchClass\n");
  expect_refused({"register", "--backend", m.string()}, "has no class 'NoSuchClass' (it has myBackend; ");
}

TEST_F(RegisterErrors, Abi1LibraryIsToldToRebuild) {
  const auto m = backend_meta_for(NNMETER_ABI1_PLUGIN, "old", "oldBackend");
  expect_refused({"register", "--backend", m.string()},
                 "Registration failed: plugin library " + (tmp / "old" / "backend.so").string() +
                     " was built against nn-Meter plugin ABI 1; rebuild it against ABI 2 (include/nnmeter/plugin.h)");
}

TEST_F(RegisterErrors, FutureAbiIsRefused) {
  const auto m = backend_meta_for(NNMETER_BAD_ABI_PLUGIN, "future", "futureBackend");
  expect_refused({"register", "--backend", m.string()},
                 "was built against nn-Meter plugin ABI 3, newer than this nn-meter's ABI 2; rebuild it against ABI 2");
}

// The description is read in the probe child: a library describing itself wrongly costs one line.
TEST_F(RegisterErrors, MalformedLibraryDescriptionIsRefused) {
  const auto m = backend_meta_for(NNMETER_BAD_ABI_PLUGIN, "hollow", "futureBackend");
  expect_refused({"register", "--backend", m.string()}, "describes itself wrongly (a class count but no classes)",
                 {{"NNMETER_BAD_PLUGIN_INFO", "no_classes"}});
  expect_refused({"register", "--backend", m.string()}, "returned no description from nnmeter_plugin_info",
                 {{"NNMETER_BAD_PLUGIN_INFO", "null"}});
}

TEST_F(RegisterErrors, WrongKindOfClass) {
  const fs::path kpkg = tmp / "kpkg";
  make_kernel_package(kpkg);
  const auto m = write_meta("m.yaml", "builtinName: other\npackageLocation: " + kpkg.string() +
                                          "\nclassModule: kernel_script\nclassName: MyKernel\n");
  expect_refused({"register", "--backend", m.string()}, "is a kernel, not a backend");
}

TEST_F(RegisterErrors, DuplicateName) {
  expect_refused({"register", "--backend", meta.string()}, "backend 'my_backend' is already registered");
}

TEST_F(RegisterErrors, UnregisterUnknownName) {
  expect_refused({"unregister", "--backend", "nobody"}, "no registered backend named 'nobody'");
  expect_refused({"unregister", "--operator", "myop", "onnx"}, "no registered operator named 'myop'");
  expect_refused({"unregister", "--predictor", "nopred"}, "no registered predictor named 'nopred'");
}

TEST_F(RegisterErrors, CorruptRegistryFile) {
  write_text(home / "config" / "registry.yaml", "backends: [1, 2\n");
  registry_before = read_text(home / "config" / "registry.yaml");
  expect_refused({"--list-backends"}, "registry file " + (home / "config" / "registry.yaml").string() + " is corrupt");
  expect_refused({"register", "--backend", meta.string()}, "is corrupt");
}

TEST_F(RegisterErrors, WorkspacePathIsAFile) {
  write_text(tmp / "afile", "x");
  expect_refused({"create", "--customized-workspace", (tmp / "afile").string(), "--backend", "my_backend"},
                 "is an existing file");
}

TEST_F(RegisterErrors, CreateWithUnknownBackendWritesNothing) {
  expect_refused({"create", "--customized-workspace", (tmp / "ws").string(), "--backend", "ghost"},
                 "backend 'ghost' is not registered");
  EXPECT_FALSE(fs::exists(tmp / "ws" / "configs" / "predictorbuild_config.yaml"));
}

TEST_F(RegisterErrors, ConnectUnknownBackend) {
  ASSERT_EQ(run_cli({"create", "--customized-workspace", (tmp / "ws").string(), "--backend", "my_backend"}, home).exit_code, 0);
  expect_refused({"connect", "--backend", "ghost", "--workspace", (tmp / "ws").string()}, "unknown backend 'ghost'");
}

TEST_F(RegisterErrors, ConnectWithoutWorkspaceConfigs) {
  fs::create_directories(tmp / "empty_ws");
  expect_refused({"connect", "--backend", "my_backend", "--workspace", (tmp / "empty_ws").string()},
                 "has no configs/predictorbuild_config.yaml");
}

TEST(RegisterConcurrency, EightConcurrentRegistrationsAllSurvive) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  std::vector<fs::path> metas;
  for (int i = 0; i < 8; ++i) metas.push_back(make_backend_package(tmp / ("pkg" + std::to_string(i)), "backend_" + std::to_string(i)));
  std::vector<int> codes(8, -1);
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] { codes[i] = run_cli({"register", "--backend", metas[i].string()}, home).exit_code; });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(codes[i], 0) << i;
  const std::string listed = run_cli({"--list-backends"}, home).out;
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(contains(listed, "[Backend] * backend_" + std::to_string(i) + "\n")) << listed;
  // No temp files left behind.
  for (const auto& entry : fs::directory_iterator(home / "config"))
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace nnmeter::test
