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
  auto archs = network_architectures();
  for (const auto& space : networks::spaces()) archs.push_back(space);
  for (const auto& s : network_sets()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_FALSE(s.networks.empty()) << s.name;
    EXPECT_EQ(files_of(s).size(), s.networks.size()) << s.name << " names a network twice";
    for (const auto& n : s.networks) EXPECT_NE(std::find(archs.begin(), archs.end(), n.arch), archs.end()) << n.arch;
  }
  EXPECT_EQ(find_network_set("evaluation").networks.size(), 55u);
  EXPECT_EQ(find_network_set("calibration").networks.size(), 23u);
  EXPECT_EQ(find_network_set("calibration-135").networks.size(), 135u);
  EXPECT_EQ(find_network_set("published").networks.size(), network_architectures().size());
  // The sealed test split: three variants of every family, of a seed no other set uses, in no other set.
  EXPECT_EQ(find_network_set(kSealedTestSet).networks.size(), 3 * network_sample_families().size());
  std::set<std::string> others;
  for (const auto& s : network_sets())
    if (s.name != kSealedTestSet) others.merge(files_of(s));
  for (const auto& n : find_network_set(kSealedTestSet).networks) {
    ASSERT_TRUE(n.variant.has_value());
    EXPECT_EQ(n.variant->seed, 20261207u);
    EXPECT_EQ(others.count(n.file_name()), 0u) << n.file_name();
  }
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
      if (s.name != "unseen-families" && s.name != "published" && s.name != kSealedTestSet)
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

// Every Conv's (kernel, in channels, out channels, group) and the number of Convs: what a variant redraws.
std::multiset<std::vector<int64_t>> conv_shapes(const onnx::ModelProto& m) {
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& t : m.graph().initializer()) dims[t.name()] = {t.dims().begin(), t.dims().end()};
  std::multiset<std::vector<int64_t>> out;
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Conv") {
      int64_t group = 1;
      for (const auto& a : n.attribute())
        if (a.name() == "group") group = a.i();
      const auto& w = dims.at(n.input(1));  // [out, in / group, k, k]
      out.insert({w[2], w[1] * group, w[0], group});
    }
  return out;
}

TEST(NetworkSamples, EveryFamilyDrawsVariantsThatLoadAndDifferLayerByLayer) {
  const auto families = network_sample_families();
  EXPECT_EQ(families.size(), 14u);
  for (const char* f : {"ofa_mobilenet_v3", "proxylessnas", "resnet", "shufflenet", "mobilenet_v2", "vgg"})
    EXPECT_NE(std::find(families.begin(), families.end(), f), families.end()) << f;
  // Built without weights (what detection reads), each family in well under a second.
  for (const auto& family : families) {
    const NetworkSet set = sample_network_set(family, 2, 11);
    ASSERT_EQ(set.networks.size(), 2u);
    std::set<std::multiset<std::vector<int64_t>>> distinct;
    std::multiset<std::vector<int64_t>> first_convs;
    for (const auto& spec : set.networks) {
      ASSERT_TRUE(spec.variant.has_value());
      // The family table groups a variant's file with its family, so leave-family-out holds it out with it.
      EXPECT_EQ(network_family(fs::path(spec.file_name()).stem().string()), family) << spec.file_name();
      const std::string bytes = network_onnx(spec, false);
      onnx::ModelProto m;
      ASSERT_TRUE(m.ParseFromString(bytes));
      if (distinct.empty()) first_convs = conv_shapes(m);
      distinct.insert(conv_shapes(m));
      EXPECT_FALSE(load_onnx_ir_bytes(bytes, spec.file_name()).nodes.empty()) << spec.file_name();
    }
    EXPECT_EQ(distinct.size(), 2u) << family << ": variants of one seed alike";
    // Not the published network: some layer differs from the architecture's at the variant's resolution.
    const NetworkSpec& first = set.networks[0];
    EXPECT_NE(first_convs, conv_shapes(networks::build(first.arch, first.resolution, 1.0, std::nullopt, false).model))
        << family;
  }
  // With weights, the same graph (the weights' bytes are all it adds), deterministic.
  const NetworkSpec small = sample_network_set("proxylessnas", 1, 11).networks[0];
  onnx::ModelProto with, without;
  ASSERT_TRUE(with.ParseFromString(network_onnx(small)));
  ASSERT_TRUE(without.ParseFromString(network_onnx(small, false)));
  EXPECT_EQ(conv_shapes(with), conv_shapes(without));
  EXPECT_EQ(with.graph().node_size(), without.graph().node_size());
  EXPECT_EQ(network_onnx(small), network_onnx(small));
  // Variant i of a seed is the same whatever the count; another seed draws others.
  const NetworkSet four = sample_network_set("mobilenet_v2", 4, 3), two = sample_network_set("mobilenet_v2", 2, 3);
  EXPECT_EQ(two.networks[1].file_name(), four.networks[1].file_name());
  EXPECT_EQ(network_onnx(two.networks[1], false), network_onnx(four.networks[1], false));
  EXPECT_NE(network_onnx(sample_network_set("mobilenet_v2", 1, 4).networks[0], false), network_onnx(four.networks[0], false));
  EXPECT_EQ((NetworkSpec{"resnet50", 192, 1.0, NetworkVariant{7, 12}}.file_name()), "resnet50__s7n12_r192.onnx");
  // "all": the count of each family, each as its own sample draws it.
  const NetworkSet all = sample_network_set("all", 2, 3);
  ASSERT_EQ(all.networks.size(), 2 * families.size());
  EXPECT_EQ(all.networks[0].file_name(), sample_network_set(families[0], 1, 3).networks[0].file_name());
  // Kernel sizes, expansions and depths are drawn as well as widths.
  std::set<int64_t> kernels;
  for (const auto& spec : four.networks)
    for (const auto& c : conv_shapes(networks::build(spec.arch, spec.resolution, 1.0, 1234 + spec.variant->index, false).model))
      kernels.insert(c[0]);
  EXPECT_TRUE(kernels.count(5) || kernels.count(7));
  EXPECT_TRUE(contains(error_of([] { sample_network_set("lenet", 1, 0); }), "unknown network family 'lenet' (known: all, alexnet"));
  EXPECT_TRUE(contains(error_of([] { sample_network_set("resnet", 0, 0); }), "count must be in [1, 100000], got 0"));
}

// A network that does not build is named and skipped; the rest of the set is written.
TEST(NetworkSets, ANetworkThatDoesNotBuildIsNamedAndSkipped) {
  TempDir dir;
  const NetworkSet set{"mixed", "one network too small for its stem", {{"mobilenet_v2", 32, 0.25}, {"alexnet", 40, 1.0}}};
  const NetworkExport e = export_network_set(set, dir / "out");
  ASSERT_EQ(e.files.size(), 1u);
  EXPECT_EQ(e.files[0].filename(), "mobilenet_v2_r32_w0.25.onnx");
  ASSERT_EQ(e.skipped.size(), 1u);
  EXPECT_EQ(e.skipped[0].first, "alexnet_r40_w1.onnx");
  EXPECT_TRUE(contains(e.skipped[0].second, "does not fit")) << e.skipped[0].second;
  EXPECT_FALSE(fs::exists(dir / "out" / "alexnet_r40_w1.onnx"));
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

TEST(NetworksCli, SamplesVariantsResumesAndRefusesBadInput) {
  TempDir home;
  EXPECT_TRUE(contains(run_cli({"networks", "list"}, home.path()).out, "ofa_mobilenet_v3, proxylessnas"));
  const fs::path out = home / "variants";
  const CliResult first =
      run_cli({"networks", "sample", "--family", "proxylessnas", "--count", "3", "--seed", "5", "--out", out.string(), "--json"},
              home.path());
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const Json doc = Json::parse(first.out);
  EXPECT_EQ(doc["written"], 3);
  ASSERT_EQ(doc["files"].size(), 3u);
  EXPECT_EQ(doc["networks"][2]["file"], "proxylessnas__s5n2_r" + std::to_string(doc["networks"][2]["resolution"].get<int>()) + ".onnx");
  EXPECT_EQ(doc["networks"][0]["family"], "proxylessnas");
  for (const auto& f : doc["files"]) EXPECT_TRUE(fs::exists(f.get<std::string>())) << f;
  // A larger count keeps the three already written and adds two.
  const CliResult more =
      run_cli({"networks", "sample", "--family", "proxylessnas", "--count", "5", "--seed", "5", "--out", out.string()}, home.path());
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_TRUE(contains(more.out, "5 variants of proxylessnas (seed 5) in")) << more.out;
  EXPECT_TRUE(contains(more.out, "(2 written, 3 already there)")) << more.out;
  // The variants load as any export does.
  EXPECT_EQ(run_cli({"get_ir", "--onnx", doc["files"][0].get<std::string>(), "--output", (home / "ir.json").string()}, home.path())
                .exit_code,
            0);

  const CliResult unknown = run_cli({"networks", "sample", "--family", "lenet", "--out", out.string()}, home.path());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(contains(unknown.err, "ofa_mobilenet_v3")) << unknown.err;
  for (const char* count : {"0", "100001", "x"})
    EXPECT_EQ(run_cli({"networks", "sample", "--family", "vgg", "--count", count, "--out", out.string()}, home.path()).exit_code, 2)
        << count;
  EXPECT_EQ(run_cli({"networks", "sample", "--family", "vgg", "--seed", "-1", "--out", out.string()}, home.path()).exit_code, 2);
}

}  // namespace
}  // namespace nnmeter::test
