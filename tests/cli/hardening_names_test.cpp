// Registered names and the registry on disk: a bad name is refused at registration, and a bad entry that is
// already on disk is skipped with a warning instead of taking every command down.
#include "support/cli_expect.h"
#include "support/plugin_fixtures.h"

namespace nnmeter::test {
namespace {

// Warnings go to stderr while the command line is parsed and to stdout with the other messages after.
size_t warnings(const CliResult& r) {
  size_t n = 0;
  for (const std::string* text : {&r.out, &r.err})
    for (size_t at = text->find("ignoring "); at != std::string::npos; at = text->find("ignoring ", at + 1)) ++n;
  return n;
}

TEST(HardeningNames, RegisterRefusesNamesOutsideTheGrammar) {
  TempDir tmp;
  const fs::path pkg = tmp / "pkg";
  make_backend_package(pkg);
  for (const std::string& name : std::vector<std::string>{"'a b'", "'-x'", "'a:b'", "a=b", "'{a}'", "../../../x", ".hidden",
                                                          "a/b", "'a..b'", std::string(65, 'a')}) {
    const fs::path meta = tmp / "meta.yaml";
    write_text(meta, "builtinName: " + name + "\npackageLocation: " + pkg.string() +
                         "\nclassModule: backend\nclassName: myBackend\n");
    expect_one_line_error(run_cli({"register", "--backend", meta.string()}, tmp / "home"), "backend name ");
    EXPECT_FALSE(fs::exists(tmp / "home" / "config" / "registry.yaml")) << name;
  }
}

TEST(HardeningNames, KernelNamedLikeAPathIsRefusedAndWritesNothing) {
  TempDir tmp;
  const fs::path meta = make_kernel_package(tmp / "pkg", "../../../escaped");
  expect_one_line_error(run_cli({"register", "--kernel", meta.string()}, tmp / "home"), "kernel name \"../../../escaped\"");
  EXPECT_FALSE(fs::exists(tmp / "home" / "config" / "registry.yaml"));
}

TEST(HardeningNames, MappingWhereANameIsExpectedIsOneLineError) {
  TempDir tmp;
  const fs::path pkg = tmp / "pkg";
  make_backend_package(pkg);
  write_text(tmp / "meta.yaml", "builtinName: {a: 1, b: [2]}\npackageLocation: " + pkg.string() +
                                    "\nclassModule: backend\nclassName: myBackend\n");
  expect_one_line_error(run_cli({"register", "--backend", (tmp / "meta.yaml").string()}, tmp / "home"),
                        "builtinName must be a single value, not a mapping");
  write_text(tmp / "list.yaml", "builtinName: ok\npackageLocation: [" + pkg.string() +
                                    "]\nclassModule: backend\nclassName: myBackend\n");
  expect_one_line_error(run_cli({"register", "--backend", (tmp / "list.yaml").string()}, tmp / "home"),
                        "packageLocation must be a single value, not a list");
}

TEST(HardeningNames, BadEntriesOnDiskAreSkippedWithAWarning) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  const fs::path meta = make_backend_package(tmp / "pkg");
  ASSERT_EQ(run_cli({"register", "--backend", meta.string()}, home).exit_code, 0);
  // Entries an older nn-meter (or a text editor) may have left: names CLI11 cannot take as subcommands, a
  // path as a kernel name, an entry that is not a mapping and one shadowing a builtin.
  const fs::path registry = home / "config" / "registry.yaml";
  std::string text = read_text(registry);
  const std::string entry = "    packageLocation: " + (tmp / "pkg").string() + "\n    classModule: backend\n    className: myBackend\n";
  text += "  \"a b\":\n" + entry + "  \"-x\":\n" + entry + "  \"{c}\":\n" + entry + "  onednn_cpu:\n" + entry +
          "  notamap: 3\nkernels:\n  ../../../escaped:\n" + entry;
  write_text(registry, text);

  CliResult r = run_cli({"--version"}, home);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "nn-meter ")) << r.out;

  r = run_cli({"--list-backends", "--list-kernels"}, home);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[Backend] * my_backend")) << r.out;
  EXPECT_FALSE(contains(r.out, "[Backend] * a b")) << r.out;
  EXPECT_FALSE(contains(r.out, "[Kernel] * ../../../escaped")) << r.out;
  for (const std::string name : {"\"a b\"", "\"-x\"", "\"{c}\"", "\"onednn_cpu\"", "\"notamap\"", "\"../../../escaped\""})
    EXPECT_TRUE(contains(r.out + r.err, "ignoring backend " + name) || contains(r.out + r.err, "ignoring kernel " + name))
        << name << "\n" << r.err;
  // One warning per bad entry, however often the registry is read.
  EXPECT_EQ(warnings(r), 6u) << r.out << r.err;

  // The path-like kernel is unknown to every command, so nothing is written outside the workspace.
  ASSERT_EQ(run_cli({"create", "--workspace", (tmp / "ws").string(), "--backend", "onednn_cpu"}, home).exit_code, 0);
  r = run_cli({"sample", "--workspace", (tmp / "ws").string(), "--kernel", "../../../escaped", "--num", "1"}, home);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "unknown kernel")) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "escaped_prior.json"));

  // unregister removes a bad entry (a leading '-' is given with '=').
  r = run_cli({"unregister", "--backend=-x"}, home);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = run_cli({"unregister", "--backend", "a b"}, home);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(read_text(registry), "a b"));
  EXPECT_FALSE(contains(read_text(registry), "-x:"));
}

TEST(HardeningNames, BadPredictorEntryOnDiskIsSkipped) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  write_text(home / "config" / "predictors.yaml",
             "- name: good\n  version: '1.0'\n  category: ''\n  package_location: /tmp\n  kernel_predictors: [fc]\n"
             "- name: 'bad name'\n  version: '1.0'\n  category: ''\n  package_location: /tmp\n  kernel_predictors: [fc]\n"
             "- name: p2\n  version: '1.0'\n  category: ''\n  package_location: /tmp\n  kernel_predictors: [../x]\n");
  const CliResult r = run_cli({"--list-predictors"}, home);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "[Predictor] good: version=1.0")) << r.out;
  EXPECT_FALSE(contains(r.out, "[Predictor] bad name")) << r.out;
  EXPECT_FALSE(contains(r.out, "[Predictor] p2")) << r.out;
  EXPECT_EQ(warnings(r), 2u) << r.out << r.err;
}

TEST(HardeningNames, PredictorMetaWithBadNamesIsRefused) {
  TempDir tmp;
  fs::create_directories(tmp / "p");
  write_text(tmp / "p" / "fc.json", "{}");
  write_text(tmp / "meta.yaml", "name: ../p\nversion: 1.0\npackage_location: " + (tmp / "p").string() +
                                    "\nkernel_predictors: [fc]\n");
  expect_one_line_error(run_cli({"register", "--predictor", (tmp / "meta.yaml").string()}, tmp / "home"),
                        "predictor name \"../p\"");
  write_text(tmp / "meta.yaml", "name: p\nversion: 1.0\npackage_location: " + (tmp / "p").string() +
                                    "\nkernel_predictors: ['../fc']\n");
  expect_one_line_error(run_cli({"register", "--predictor", (tmp / "meta.yaml").string()}, tmp / "home"),
                        "kernel name \"../fc\"");
}

}  // namespace
}  // namespace nnmeter::test
