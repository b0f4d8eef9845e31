// The whole registration walk-through of nn-Meter's seed transcript, run against the real binary.
#include <gtest/gtest.h>

#include "support/plugin_fixtures.h"

namespace nnmeter::test {
namespace {

TEST(Seed000Transcript, RegisterCreateConnectListMoveUnregister) {
  TempDir tmp;
  const fs::path home = tmp / "home";
  const fs::path package = tmp / "test_package_import";
  const fs::path meta = make_backend_package(package);

  // 1. Before register.
  CliResult before = run_cli({"--list-backends"}, home);
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_TRUE(contains(before.out, "(nn-Meter) Supported backends: ('*' indicates customized backends)\n"));
  EXPECT_FALSE(contains(before.out, "my_backend"));
  CliResult help = run_cli({"register", "--h"}, home);
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(contains(help.out, "--backend"));
  EXPECT_TRUE(contains(help.out, "path to the meta file to register a customized backend"));

  // 2. Register.
  CliResult reg = run_cli({"register", "--backend", meta.string()}, home);
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  EXPECT_EQ(reg.out, "(nn-Meter) Successfully register backend my_backend\n");
  const std::string registry = read_text(home / "config" / "registry.yaml");
  EXPECT_TRUE(contains(registry, "backends:\n  my_backend:\n    classModule: backend\n    className: myBackend\n"));
  EXPECT_TRUE(contains(registry, "packageLocation: " + package.string()));

  // 3. Create a workspace, test the connection, list.
  const fs::path ws = tmp / "custom";
  CliResult create = run_cli({"create", "--customized-workspace", ws.string(), "--backend", "my_backend"}, home);
  ASSERT_EQ(create.exit_code, 0) << create.err;
  EXPECT_EQ(create.out, "(nn-Meter) Workspace " + ws.string() +
                            " for customized platform has been created. Users could edit experiment config in " +
                            (ws / "configs").string() + "/.\n");
  EXPECT_EQ(read_text(ws / "configs" / "backend_config.yaml"), read_text(package / "config.yaml"));
  EXPECT_TRUE(fs::exists(ws / "configs" / "predictorbuild_config.yaml"));
  EXPECT_TRUE(fs::exists(ws / "configs" / "ruletest_config.yaml"));
  CliResult conn = run_cli({"connect", "--backend", "my_backend", "--workspace", ws.string()}, home);
  ASSERT_EQ(conn.exit_code, 0) << conn.err;
  EXPECT_EQ(conn.out, "Registration Success!\n");
  CliResult listed = run_cli({"--list-backends"}, home);
  EXPECT_TRUE(contains(listed.out, "(nn-Meter) [Backend] * my_backend\n"));

  // Registering a module that cannot be loaded: one clear line, nothing registered.
  const fs::path broken_meta = tmp / "meta_file.yaml";
  write_text(broken_meta, "builtinName: broken_backend\npackageLocation: " + package.string() +
                              "\nclassModule: no_such_module\nclassName: myBackend\n");
  const std::string registry_before = read_text(home / "config" / "registry.yaml");
  CliResult broken = run_cli({"register", "--backend", broken_meta.string()}, home);
  EXPECT_NE(broken.exit_code, 0);
  EXPECT_TRUE(contains(broken.err, "(nn-Meter) Registration failed: cannot load module 'no_such_module'")) << broken.err;
  EXPECT_EQ(std::count(broken.err.begin(), broken.err.end(), '\n'), 1) << broken.err;
  EXPECT_EQ(read_text(home / "config" / "registry.yaml"), registry_before);
  EXPECT_FALSE(contains(run_cli({"--list-backends"}, home).out, "broken_backend"));

  // The plugin's files move after registration: a one-line error naming the path and the way out.
  fs::rename(package, tmp / "moved_away");
  CliResult moved = run_cli({"connect", "--backend", "my_backend", "--workspace", ws.string()}, home);
  EXPECT_NE(moved.exit_code, 0);
  EXPECT_TRUE(contains(moved.err, package.string())) << moved.err;
  EXPECT_TRUE(contains(moved.err, "nn-meter register --backend")) << moved.err;
  EXPECT_EQ(std::count(moved.err.begin(), moved.err.end(), '\n'), 1) << moved.err;
  fs::rename(tmp / "moved_away", package);

  // 4. Unregister; the backend is gone everywhere.
  CliResult unreg = run_cli({"unregister", "--backend", "my_backend"}, home);
  ASSERT_EQ(unreg.exit_code, 0) << unreg.err;
  EXPECT_EQ(unreg.out, "(nn-Meter) Successfully unregister my_backend.\n");
  CliResult gone = run_cli({"connect", "--backend", "my_backend", "--workspace", ws.string()}, home);
  EXPECT_NE(gone.exit_code, 0);
  EXPECT_TRUE(contains(gone.err, "unknown backend 'my_backend'")) << gone.err;
  EXPECT_FALSE(contains(run_cli({"--list-backends"}, home).out, "my_backend"));
}

}  // namespace
}  // namespace nnmeter::test
