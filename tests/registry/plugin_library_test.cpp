// The plugin ABI as nn-meter reads it: a library's description and classes, calls by method number, the
// plugin's errors through its last_error, and libraries built against another ABI.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "registry/plugin_library.h"
#include "support/plugin_fixtures.h"

namespace nnmeter {
namespace {

using test::contains;
using test::error_of;
using test::TempDir;

class PluginLibraryTest : public ::testing::Test {
 protected:
  // Copies the built library `built` into the package folder as <module>.so; returns the copy.
  fs::path install(const char* built, const std::string& module) {
    return test::install_library(built, pkg, module + ".so");
  }

  TempDir tmp;
  fs::path pkg = tmp / "pkg";
};

TEST_F(PluginLibraryTest, ListsEveryClassOfALibraryWithMoreThanSixClasses) {
  const auto library = PluginLibrary::open(install(NNMETER_MANY_CLASSES_PLUGIN, "many"), "many");
  EXPECT_EQ(library->name(), "many_classes");
  EXPECT_EQ(library->version(), "2.5");
  std::vector<std::pair<std::string, std::string>> listed;
  for (const auto& c : library->classes()) listed.emplace_back(c.name, c.kind);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"firstBackend", "backend"},   {"plainKernel", "kernel"},      {"plainSampler", "sampler"},
      {"plainParser", "parser"},     {"plainOperator", "operator"},  {"plainTestCase", "testcase"},
      {"brokenBackend", "backend"},  {"lastBackend", "backend"}};
  EXPECT_EQ(listed, expected);
}

TEST_F(PluginLibraryTest, CallsEachKindByMethodNumber) {
  install(NNMETER_MANY_CLASSES_PLUGIN, "many");
  const auto load = [&](const std::string& cls, const std::string& kind) {
    return PluginClass::load(pkg, "many", cls, kind).create(Json::object());
  };
  EXPECT_EQ(load("lastBackend", "backend")->call(registry::plugin_methods::backend::test_connection), "eighth of eight");
  EXPECT_EQ(load("lastBackend", "backend")->call(registry::plugin_methods::backend::profile, {{"backend_files", {"m"}}}),
            (Json{{"latency_ms", {2.0, 2.5}}}));
  EXPECT_EQ(load("plainKernel", "kernel")->call_bytes(registry::plugin_methods::kernel::get_model, {{"config", Json::object()},
                                                                                           {"batch_size", 1}}),
            "not a model");
  EXPECT_EQ(load("plainSampler", "sampler")
                ->call(registry::plugin_methods::sampler::prior_config_sampling, {{"sample_num", 2}, {"seed", 1}}),
            (Json{{{"HW", 1}}, {{"HW", 2}}}));
  EXPECT_EQ(load("plainParser", "parser")->call(registry::plugin_methods::parser::get_feature_by_config, {{"config", {{"HW", 7}}}}),
            Json({7.0}));
  EXPECT_EQ(load("plainOperator", "operator")->call(registry::plugin_methods::op::output_shape, {{"input_shape", {1, 2}}}),
            Json({1, 2}));
  EXPECT_EQ(load("plainTestCase", "testcase")->call(registry::plugin_methods::testcase::depends_on), Json::array());
  // A number the class's kind does not have is the plugin's one-line error, not undefined behaviour.
  const PluginMethod unknown{99, "method_99"};
  EXPECT_EQ(error_of([&] { load("plainTestCase", "testcase")->call(unknown); }),
            "class 'plainTestCase' of " + (pkg / "many.so").string() +
                " failed in method_99: testcase plugin has no method 99 (the plugin was built against an older "
                "nn-Meter plugin.h)");
}

TEST_F(PluginLibraryTest, PluginFailuresArriveAsTheFirstLineOfItsLastError) {
  install(NNMETER_MANY_CLASSES_PLUGIN, "many");
  const PluginClass broken = PluginClass::load(pkg, "many", "brokenBackend", "backend");
  const std::string label = "class 'brokenBackend' of " + (pkg / "many.so").string();
  EXPECT_EQ(error_of([&] { broken.create({{"BREAK", true}}); }),
            label + " could not be constructed: cannot reach the device");
  const auto object = broken.create(Json::object());
  EXPECT_EQ(error_of([&] { object->call(registry::plugin_methods::backend::profile, {{"backend_files", {"m"}}}); }),
            label + " failed in profile: the device is gone");
  // Arguments the class cannot read are its error too (a JSON exception inside the plugin).
  EXPECT_TRUE(contains(error_of([&] { object->call(registry::plugin_methods::backend::to_backend, Json::object()); }),
                       label + " failed in to_backend: "));
  EXPECT_EQ(object->call(registry::plugin_methods::backend::test_connection), "broken but constructed");
}

TEST_F(PluginLibraryTest, MissingClassAndWrongKindNameWhatTheLibraryHas) {
  install(NNMETER_MANY_CLASSES_PLUGIN, "many");
  EXPECT_EQ(error_of([&] { PluginClass::load(pkg, "many", "ninthBackend", "backend"); }),
            "module 'many' in " + pkg.string() +
                " has no class 'ninthBackend' (it has firstBackend, plainKernel, plainSampler, plainParser, "
                "plainOperator, plainTestCase, brokenBackend, lastBackend; fix className in the meta file, or list "
                "the class in NNMETER_PLUGIN)");
  EXPECT_EQ(error_of([&] { PluginClass::load(pkg, "many", "plainSampler", "kernel"); }),
            "class 'plainSampler' in " + (pkg / "many.so").string() + " is a sampler, not a kernel");
}

TEST_F(PluginLibraryTest, AnAbi1LibraryIsToldToRebuild) {
  const fs::path file = install(NNMETER_ABI1_PLUGIN, "old");
  EXPECT_EQ(error_of([&] { PluginLibrary::open(file, "old"); }),
            "plugin library " + file.string() +
                " was built against nn-Meter plugin ABI 1; rebuild it against ABI 2 (include/nnmeter/plugin.h)");
}

TEST_F(PluginLibraryTest, AFutureAbiIsRefusedBeforeItsLayoutIsRead) {
  const fs::path file = install(NNMETER_BAD_ABI_PLUGIN, "future");
  EXPECT_EQ(error_of([&] { PluginLibrary::open(file, "future"); }),
            "plugin library " + file.string() +
                " was built against nn-Meter plugin ABI 3, newer than this nn-meter's ABI 2; rebuild it against ABI 2 "
                "(include/nnmeter/plugin.h), or use an nn-meter that reads ABI 3");
}

TEST_F(PluginLibraryTest, AMalformedDescriptionIsOneLine) {
  const fs::path file = install(NNMETER_BAD_ABI_PLUGIN, "bad");
  const std::string rebuild = "; rebuild it with NNMETER_PLUGIN from include/nnmeter/plugin.h";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"null", "plugin library " + file.string() + " returned no description from nnmeter_plugin_info" + rebuild},
      {"no_classes", "plugin library " + file.string() + " describes itself wrongly (a class count but no classes)" +
                         rebuild},
      {"duplicate", "plugin library " + file.string() +
                        " describes itself wrongly (two classes named 'futureBackend')" + rebuild}};
  for (const auto& [mode, expected] : cases) {
    ::setenv("NNMETER_BAD_PLUGIN_INFO", mode.c_str(), 1);
    EXPECT_EQ(error_of([&] { PluginLibrary::open(file, "bad"); }), expected) << mode;
  }
  ::unsetenv("NNMETER_BAD_PLUGIN_INFO");
}

TEST_F(PluginLibraryTest, ALibraryWithoutTheEntryPointSaysWhatToDeclare) {
  const fs::path file = install(NNMETER_NO_ENTRY_PLUGIN, "none");
  EXPECT_EQ(error_of([&] { PluginLibrary::open(file, "none"); }),
            "cannot load module 'none' from " + pkg.string() +
                ": none.so does not export nnmeter_plugin_info (declare its classes with NNMETER_PLUGIN from "
                "nnmeter/plugin.h)");
}

}  // namespace
}  // namespace nnmeter
