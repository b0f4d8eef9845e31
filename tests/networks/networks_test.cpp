// The reference networks: the named sets, their export, the exporter's form of every architecture, and
// `nn-meter networks` as a user runs it.
#include <gtest/gtest.h>

#include <set>

#include "common/io.h"
#include "networks/architectures.h"
#include "nnmeter/networks.h"
#include "nnmeter/prediction.h"
#include "support/cli_expect.h"
#include "support/test_support.h"

namespace nnmeter::test {
namespace {

std::set<std::string> files_of(const NetworkSet& s) {
  std::set<std::string> out;
  for (const auto& n : s.networks) out.insert(n.file_name());
  return out;
}

TEST(NetworkSets, NamedOnceEveryNetworkValidAndScoredNetworksNeverCalibrate) {
  std::set<std::string> names;
  const auto archs = network_architectures();
  for (const auto& s : network_sets()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_FALSE(s.networks.empty()) << s.name;
    EXPECT_EQ(files_of(s).size(), s.networks.size()) << s.name << " names a network twice";
    for (const auto& n : s.networks) EXPECT_NE(std::find(archs.begin(), archs.end(), n.arch), archs.end()) << n.arch;
  }
  EXPECT_EQ(find_network_set("evaluation").networks.size(), 55u);
  EXPECT_EQ(find_network_set("calibration").networks.size(), 23u);
  EXPECT_EQ(find_network_set("calibration-135").networks.size(), 135u);
  EXPECT_EQ(find_network_set("published").networks.size(), archs.size());
  // A calibrated predictor is scored on networks it never saw.
  const auto scored = files_of(find_network_set("evaluation"));
  for (const auto& f : files_of(find_network_set("calibration-135"))) EXPECT_EQ(scored.count(f), 0u) << f;
  // The unions are their parts.
  auto joined = files_of(find_network_set("calibration"));
  for (const char* part : {"calibration-more", "calibration-span", "calibration-small"})
    for (const auto& f : files_of(find_network_set(part))) EXPECT_TRUE(joined.insert(f).second) << f;
  EXPECT_EQ(joined, files_of(find_network_set("calibration-135")));
  // unseen-families' two families are in no other set but the published one.
  EXPECT_EQ(find_network_set("unseen-families").networks.size(), 12u);
  for (const auto& s : network_sets())
    for (const auto& n : s.networks)
      if (s.name != "unseen-families" && s.name != "published")
        EXPECT_TRUE(n.arch != "preact_resnet18" && n.arch != "shufflenet_v1_g3") << s.name << ": " << n.arch;
  EXPECT_EQ((NetworkSpec{"mobilenet_v2", 160, 0.5}.file_name()), "mobilenet_v2_r160_w0.5.onnx");
  EXPECT_EQ((NetworkSpec{"resnet18", 224, 1.0}.file_name()), "resnet18_r224_w1.onnx");
  EXPECT_TRUE(contains(error_of([] { find_network_set("imagenet"); }), "known: published, main-job, evaluation"));
}

TEST(NetworkSets, ArchitecturesAreWrittenAsTheExporterWritesThem) {
  for (const auto& arch : network_architectures()) {
    const onnx::ModelProto m = networks::build(arch, 128, 0.5).model;
    std::map<std::string, std::string> producer;  // tensor -> op type
    std::multiset<std::string> ops;
    for (const auto& n : m.graph().node()) {
      ops.insert(n.op_type());
      for (const auto& o : n.output()) producer[o] = n.op_type();
      // BN right after a conv is folded into it by the exporter.
      if (n.op_type() == "BatchNormalization") {
        EXPECT_NE(producer[n.input(0)], "Conv") << arch;
      }
    }
    EXPECT_EQ(ops.count("Split"), 0u) << arch;
    if (arch == "shufflenet_v2_x1_0") {
      EXPECT_EQ(ops.count("Slice"), 26u);  // 13 chunks, as Shape → Gather → Add → Div → Mul → Slice
      EXPECT_EQ(ops.count("Shape"), 13u);
    }
    if (arch == "densenet121") {
      EXPECT_EQ(ops.count("Pad"), 3u);
    }
    if (arch == "efficientnet_b0") {
      EXPECT_EQ(ops.count("Sigmoid"), ops.count("Mul"));
    }
    // It loads with static shapes: the exporter's shape arithmetic folds.
    const fs::path file = fs::temp_directory_path() / ("nnmeter_networks_" + arch + ".onnx");
    io::write_file_atomic(file, m.SerializeAsString());
    const ModelIr ir = load_onnx_ir(file);
    fs::remove(file);
    for (const auto& node : ir.nodes) EXPECT_NE(node.type, "Shape") << arch << ": " << node.name;
  }
  EXPECT_TRUE(contains(error_of([] { networks::build("resnet18", 16); }), "resolution must be in [32, 512]"));
  EXPECT_TRUE(contains(error_of([] { networks::build("vgg11_bn", 224, 0); }), "width must be in (0, 4]"));
  EXPECT_TRUE(contains(error_of([] { networks::build("alexnet", 40); }), "does not fit"));
}

TEST(NetworkSets, ExportWritesEveryFileOnceAndResumes) {
  TempDir dir;
  const NetworkSet& set = find_network_set("main-job");
  const NetworkExport first = export_network_set(set, dir / "out");
  ASSERT_EQ(first.written.size(), 4u);
  EXPECT_TRUE(first.kept.empty());
  const std::string bytes = read_text(first.written[0]);
  EXPECT_EQ(bytes, network_onnx(set.networks[0]));  // deterministic
  fs::remove(first.written[1]);  // an interrupted export: the rest is kept, the missing one written
  const NetworkExport again = export_network_set(set, dir / "out");
  EXPECT_EQ(again.written, std::vector<fs::path>{first.written[1]});
  EXPECT_EQ(again.kept.size(), 3u);
  for (const auto& e : fs::directory_iterator(dir / "out")) EXPECT_EQ(e.path().extension(), ".onnx") << e.path();
  write_text(dir / "file", "x");
  EXPECT_TRUE(contains(error_of([&] { export_network_set(set, dir / "file"); }), "cannot create the output folder"));
}

TEST(NetworksCli, ListsExportsAndRefusesAnUnknownSet) {
  TempDir home;
  const CliResult list = run_cli({"networks", "list"}, home.path());
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_TRUE(contains(list.out, "evaluation")) << list.out;
  EXPECT_TRUE(contains(list.out, "55 networks")) << list.out;
  const Json doc = Json::parse(run_cli({"networks", "list", "--json"}, home.path()).out);
  EXPECT_EQ(doc["sets"].size(), network_sets().size());
  EXPECT_EQ(doc["sets"][1]["networks"][0]["file"], "mobilenet_v2_r224_w1.onnx");

  const fs::path out = home / "models";
  const CliResult ex = run_cli({"networks", "export", "--set", "main-job", "--out", out.string(), "--json"}, home.path());
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  const Json e = Json::parse(ex.out);
  EXPECT_EQ(e["written"], 4);
  EXPECT_EQ(e["files"].size(), 4u);
  for (const auto& f : e["files"]) EXPECT_TRUE(fs::exists(f.get<std::string>())) << f;
  const CliResult rerun = run_cli({"networks", "export", "--set", "main-job", "--out", out.string()}, home.path());
  EXPECT_TRUE(contains(rerun.out, "0 written, 4 already there")) << rerun.out;
  // Predicting the exported folder works as the main job does it (get_ir needs no predictor).
  EXPECT_EQ(run_cli({"get_ir", "--onnx", (out / "resnet18_r224_w1.onnx").string(), "--output", (home / "ir.json").string()},
                    home.path())
                .exit_code,
            0);

  const CliResult bad = run_cli({"networks", "export", "--set", "imagenet", "--out", out.string()}, home.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_TRUE(contains(bad.err, "calibration-135")) << bad.err;
  EXPECT_EQ(run_cli({"networks"}, home.path()).exit_code, 2);
}

}  // namespace
}  // namespace nnmeter::test
