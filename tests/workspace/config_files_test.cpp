// Config inheritance (`_base_`), as MMDeploy's deploy configs: one base for a lab, a small file per device.
#include <gtest/gtest.h>

#include "nnmeter/registry.h"
#include "nnmeter/workspace.h"
#include "support/test_support.h"
#include "workspace/config_files.h"

namespace nnmeter {
namespace {

using test::TempDir;
using test::write_text;

std::string error_of(const fs::path& file) {
  try {
    load_config_file(file);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigFiles, AWorkspaceInheritsFromALabBaseAndOverridesKeyByKey) {
  TempDir tmp;
  Registry registry(tmp / "home");
  const fs::path root = create_workspace(registry, tmp / "phone7", WorkspaceFlavor::Builtin, "onednn_cpu");
  write_text(tmp / "lab" / "backend.yaml", "NUM_THREADS: 4\nNUM_RUNS: 30\nREPEATS: 7\n");
  write_text(root / "configs" / "backend_config.yaml", "_base_: ../../lab/backend.yaml\nNUM_THREADS: 1\n");
  write_text(tmp / "lab" / "kernels.yaml",
             "DETAIL: TRUE\nIMPLEMENT: onnx\nBATCH_SIZE: 1\nKERNELS:\n"
             "  conv-bn-relu:\n    INIT_SAMPLE_NUM: 500\n    FINEGRAINED_SAMPLE_NUM: 10\n    ITERATION: 3\n"
             "    ERROR_THRESHOLD: 0.1\n"
             "  relu:\n    INIT_SAMPLE_NUM: 50\n    FINEGRAINED_SAMPLE_NUM: 5\n    ITERATION: 2\n    ERROR_THRESHOLD: 0.1\n");
  write_text(root / "configs" / "predictorbuild_config.yaml",
             "_base_: [../../lab/kernels.yaml]\nKERNELS:\n  conv-bn-relu:\n    INIT_SAMPLE_NUM: 80\n");
  const Workspace ws = Workspace::load(root);
  EXPECT_EQ(ws.backend_config, (Json{{"NUM_THREADS", 1}, {"NUM_RUNS", 30}, {"REPEATS", 7}}));
  const Json& kernels = ws.predictorbuild_config["KERNELS"];
  EXPECT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels["conv-bn-relu"]["INIT_SAMPLE_NUM"], 80) << "the file overrides its base";
  EXPECT_EQ(kernels["conv-bn-relu"]["ITERATION"], 3) << "mappings merge at every depth";
  EXPECT_EQ(kernels["relu"]["INIT_SAMPLE_NUM"], 50);
  EXPECT_EQ(ws.predictorbuild_config["DETAIL"], true);
}

TEST(ConfigFiles, LaterBasesOverrideEarlierOnesAndBasesNest) {
  TempDir tmp;
  write_text(tmp / "a.yaml", "X: 1\nY: 1\nL: [1, 2]\n");
  write_text(tmp / "sub" / "b.yaml", "_base_: ../a.yaml\nY: 2\nZ: 2\n");
  write_text(tmp / "c.yaml", "Z: 3\nL: [3]\n");
  write_text(tmp / "top.yaml", "_base_: [sub/b.yaml, c.yaml]\nW: 4\n");
  EXPECT_EQ(load_config_file(tmp / "top.yaml"),
            (Json{{"X", 1}, {"Y", 2}, {"Z", 3}, {"L", Json::array({3})}, {"W", 4}}))
      << "lists are replaced, not concatenated";
}

TEST(ConfigFiles, CyclesMissingBasesAndBadBasesAreOneLineErrors) {
  TempDir tmp;
  write_text(tmp / "a.yaml", "_base_: b.yaml\nX: 1\n");
  write_text(tmp / "b.yaml", "_base_: a.yaml\n");
  const std::string cycle = error_of(tmp / "a.yaml");
  EXPECT_NE(cycle.find("config inheritance cycle: a.yaml -> b.yaml -> a.yaml"), std::string::npos) << cycle;

  write_text(tmp / "m.yaml", "_base_: [ok.yaml, gone.yaml]\n");
  write_text(tmp / "ok.yaml", "X: 1\n");
  const std::string missing = error_of(tmp / "m.yaml");
  EXPECT_NE(missing.find("m.yaml: its _base_ " + (tmp / "gone.yaml").string() + " does not exist"), std::string::npos)
      << missing;

  for (const char* bad : {"_base_: 3\n", "_base_: []\n", "_base_: [ok.yaml, {x: 1}]\n", "_base_: ''\n"}) {
    write_text(tmp / "bad.yaml", bad);
    const std::string e = error_of(tmp / "bad.yaml");
    EXPECT_NE(e.find("_base_ must be a file path or a list of file paths"), std::string::npos) << bad << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
  write_text(tmp / "list.yaml", "- 1\n- 2\n");
  write_text(tmp / "uses_list.yaml", "_base_: list.yaml\n");
  EXPECT_NE(error_of(tmp / "uses_list.yaml").find("list.yaml must be a mapping"), std::string::npos);
  EXPECT_EQ(load_config_file(tmp / "ok.yaml"), (Json{{"X", 1}})) << "a file without _base_ is read as it is";
}

TEST(ConfigFiles, ASelfReferenceAndAFanOutBombAreBounded) {
  TempDir tmp;
  write_text(tmp / "self.yaml", "_base_: ./self.yaml\n");
  EXPECT_NE(error_of(tmp / "self.yaml").find("cycle"), std::string::npos);
  // Each level names the next one twice: 2^20 reads without a bound.
  for (int i = 0; i < 20; ++i)
    write_text(tmp / ("f" + std::to_string(i) + ".yaml"),
               "_base_: [f" + std::to_string(i + 1) + ".yaml, f" + std::to_string(i + 1) + ".yaml]\n");
  write_text(tmp / "f20.yaml", "X: 1\n");
  EXPECT_NE(error_of(tmp / "f0.yaml").find("more than 64 config files"), std::string::npos);
}

}  // namespace
}  // namespace nnmeter
