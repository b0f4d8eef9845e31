// The kernel predictor builder end to end through the real binary on onednn_cpu, kept small.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/io.h"
#include "networks/architectures.h"
#include "networks/layers.h"
#include "nnmeter/latency.h"
#include "nnmeter/networks.h"
#include "nnmeter/prediction.h"
#include "support/test_support.h"

extern char** environ;

namespace nnmeter::test {
namespace {

fs::path make_workspace(const TempDir& tmp, const std::string& kernels_yaml) {
  const fs::path ws = tmp / "ws";
  CliResult created = run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home");
  EXPECT_EQ(created.exit_code, 0) << created.err;
  write_text(ws / "configs" / "predictorbuild_config.yaml", "DETAIL: TRUE\nIMPLEMENT: onnx\nBATCH_SIZE: 1\nKERNELS:\n" + kernels_yaml);
  // Quick measurements: these tests check the pipeline, not the latency figures; two repeats each.
  write_text(ws / "configs" / "backend_config.yaml",
             "NUM_THREADS: 1\nWARMUP_RUNS: 1\nNUM_RUNS: 3\nNUM_ROUNDS: 2\nMIN_TIME_MS: 1\nMAX_RETRIES: 0\nREPEATS: 2\n");
  return ws;
}

TEST(BuildCli, BuildsRegistersAndListsAPredictor) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const fs::path ws = make_workspace(tmp,
                                     "  relu:\n    INIT_SAMPLE_NUM: 40\n    FINEGRAINED_SAMPLE_NUM: 3\n    ITERATION: 2\n"
                                     "    ERROR_THRESHOLD: 0.1\n");
  CliResult built = run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--predictor-name", "tiny"},
                            tmp / "home");
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  EXPECT_TRUE(contains(built.out, "(nn-Meter) Kernel predictor accuracy")) << built.out;
  EXPECT_TRUE(contains(built.out, "(nn-Meter) relu ")) << built.out;
  const fs::path results = ws / "predictor_build" / "results";
  const Json profiled = io::load_json_file(results / "profiled_relu.json");
  ASSERT_TRUE(profiled.contains("relu"));
  EXPECT_GE(profiled["relu"].size(), 30u);
  for (const auto& [id, entry] : profiled["relu"].items()) {
    EXPECT_EQ(id.size(), 6u);
    EXPECT_TRUE(contains(entry["latency"].get<std::string>(), " +- ")) << entry.dump();
    EXPECT_TRUE(entry.contains("config")) << "DETAIL: TRUE keeps the config";
    // The label is the minimum of the two repeats, which are kept next to it.
    ASSERT_EQ(entry["repeats_ms"].size(), 2u) << entry.dump();
    const auto repeats = entry["repeats_ms"].get<std::vector<double>>();
    EXPECT_NEAR(Latency::parse(entry["latency"].get<std::string>()).value_ms, std::min(repeats[0], repeats[1]),
                1e-5 * repeats[0]);  // "avg +- std" keeps 6 significant digits
  }
  const Json accuracy = io::load_json_file(results / "accuracy.json");
  ASSERT_EQ(accuracy.size(), 1u);
  EXPECT_EQ(accuracy[0]["kernel"], "relu");
  // The kernel's accuracy stands next to the measurement's own repeatability, in the table and the file.
  EXPECT_GE(accuracy[0]["repeatability"]["samples"].get<int>(), 30);
  EXPECT_TRUE(contains(built.out, "repeat5  repeat10")) << built.out;
  const fs::path predictor = ws / "predictor_build" / "predictor";
  EXPECT_TRUE(fs::exists(predictor / "relu.json"));
  EXPECT_TRUE(fs::exists(predictor / "predictor.json"));
  CliResult reg = run_cli({"register", "--predictor", (predictor / "meta.yaml").string()}, tmp / "home");
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  EXPECT_TRUE(contains(run_cli({"--list-predictors"}, tmp / "home").out, "[Predictor] tiny: version=1.0"));
}

TEST(BuildCli, RerunContinuesTheEarlierSamplesInsteadOfSamplingAgain) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const fs::path ws = make_workspace(tmp,
                                     "  relu:\n    INIT_SAMPLE_NUM: 20\n    FINEGRAINED_SAMPLE_NUM: 2\n    ITERATION: 2\n"
                                     "    ERROR_THRESHOLD: 0.1\n");
  const std::vector<std::string> build = {"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--no-ruletest"};
  CliResult first = run_cli(build, tmp / "home");
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const fs::path results = ws / "predictor_build" / "results";
  const size_t profiled = count_lines(results / "profile_journal_relu.jsonl");
  const std::string predictor = read_text(ws / "predictor_build" / "predictor" / "relu.json");

  // 20 drawn, less any that is a layer of the sealed test split.
  const Json sampled = io::load_json_file(results / "relu_prior.json");
  EXPECT_GE(sampled["relu"].size(), 15u);
  CliResult again = run_cli(build, tmp / "home");
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_TRUE(contains(again.out, fmt::format("relu: continuing the {} configs sampled earlier", sampled["relu"].size())))
      << again.out;
  EXPECT_EQ(count_lines(results / "profile_journal_relu.jsonl"), profiled) << "nothing is profiled twice";
  EXPECT_EQ(read_text(ws / "predictor_build" / "predictor" / "relu.json"), predictor) << "same data, same predictor";
}

// REGRESSOR in the workspace (as the preset accurate sets it) chooses the regressor; --regressor overrides it.
TEST(BuildCli, TheRegressorIsTheConfigsUnlessTheFlagNamesOne) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "  relu:\n    INIT_SAMPLE_NUM: 10\n    ITERATION: 1\n");
  write_text(ws / "configs" / "predictorbuild_config.yaml",
             read_text(ws / "configs" / "predictorbuild_config.yaml") + "REGRESSOR: gbdt\n");
  auto mode_of = [](const fs::path& predictor) {
    const Json kernels = io::load_json_file(predictor / "predictor.json");
    return contains(kernels.dump(), R"("mode":"gbdt")") ? "gbdt" : contains(kernels.dump(), R"("mode":"rf")") ? "rf" : "";
  };
  const std::vector<std::string> build = {"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--no-ruletest"};
  const CliResult configured = run_cli(build, tmp / "home");
  ASSERT_EQ(configured.exit_code, 0) << configured.out << configured.err;
  EXPECT_STREQ(mode_of(ws / "predictor_build" / "predictor"), "gbdt");
  std::vector<std::string> flagged = build;
  for (const char* a : {"--regressor", "rf", "--output"}) flagged.emplace_back(a);
  flagged.push_back((tmp / "rf").string());
  const CliResult overridden = run_cli(flagged, tmp / "home");
  ASSERT_EQ(overridden.exit_code, 0) << overridden.out << overridden.err;
  EXPECT_STREQ(mode_of(tmp / "rf"), "rf");
}

// The kernels of one phase are profiled in one shuffled order, so a drift of the device spreads over all of
// them; drift probes are measured at the start, along the way and at the end, and reported.
TEST(BuildCli, KernelsShareOneShuffledOrderAndDriftProbesAreReported) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const fs::path ws = make_workspace(tmp,
                                     "  relu:\n    INIT_SAMPLE_NUM: 10\n    ITERATION: 1\n"
                                     "  add:\n    INIT_SAMPLE_NUM: 10\n    ITERATION: 1\n");
  write_text(ws / "configs" / "backend_config.yaml",
             "NUM_THREADS: 1\nWARMUP_RUNS: 0\nNUM_RUNS: 2\nNUM_ROUNDS: 1\nMIN_TIME_MS: 0\nMAX_RETRIES: 0\nREPEATS: 2\n"
             "DRIFT_PROBE_EVERY: 15\n");
  CliResult built = run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--no-ruletest"}, tmp / "home");
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  const fs::path results = ws / "predictor_build" / "results";
  auto times = [&](const std::string& kernel) {
    std::vector<double> t;
    std::istringstream lines(read_text(results / ("profile_journal_" + kernel + ".jsonl")));
    for (std::string line; std::getline(lines, line);) t.push_back(Json::parse(line).at("t").get<double>());
    return t;
  };
  const auto relu = times("relu"), add = times("add");
  // Two repeats of each sample: 10 drawn, less any that is a layer of the sealed test split.
  const auto samples = [&](const std::string& kernel) {
    return io::load_json_file(results / (kernel + "_prior.json"))[kernel].size();
  };
  ASSERT_GE(samples("relu"), 8u);
  ASSERT_EQ(relu.size(), 2 * samples("relu"));
  ASSERT_EQ(add.size(), 2 * samples("add"));
  // Interleaved: each kernel's measurements start before the other's end.
  EXPECT_LT(relu.front(), add.back());
  EXPECT_LT(add.front(), relu.back());
  // 40 measurements, a probe pass every 15 and one at the end: 4 passes of two probes.
  EXPECT_EQ(count_lines(results / "drift_probes.jsonl"), 8u);
  EXPECT_TRUE(contains(built.out, "Drift probes over the build")) << built.out;
  EXPECT_TRUE(contains(built.out, "probe_conv-bn-relu: ")) << built.out;
  EXPECT_TRUE(fs::exists(ws / "predictor_build" / "probes" / "probe_dwconv-bn-relu.onnx"));
}

// A kernel's lines in KERNELS: two samples, no fine-grained round.
std::string two_samples(const std::string& kernel) { return "  " + kernel + ":\n    INIT_SAMPLE_NUM: 2\n    ITERATION: 1\n"; }

// SAMPLE_MODELS: every layer of the given networks becomes a sample of its kernel, measured in the same
// shuffled order as the prior samples; a rerun continues them.
TEST(BuildCli, SampleModelsAddEveryLayerOfTheNetworksAsSamples) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "  conv-bn-relu:\n    INIT_SAMPLE_NUM: 3\n    ITERATION: 1\n"
                                          "  dwconv-bn-relu:\n    INIT_SAMPLE_NUM: 3\n    ITERATION: 1\n");
  const fs::path net = tmp / "nets" / "mobilenet_v1_r32_w0.25.onnx";
  write_text(net, networks::build("mobilenet_v1", 32, 0.25).model.SerializeAsString());
  write_text(ws / "configs" / "predictorbuild_config.yaml",
             read_text(ws / "configs" / "predictorbuild_config.yaml") + "SAMPLE_MODELS: [../nets]\n");
  const std::vector<std::string> build = {"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--no-ruletest"};
  CliResult built = run_cli(build, tmp / "home");
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  EXPECT_TRUE(contains(built.out, "conv-bn-relu: ")) << built.out;
  EXPECT_TRUE(contains(built.out, "samples are layers of the 1 SAMPLE_MODELS networks")) << built.out;

  // The network's layers as prediction detects them (no fusion rules: --no-ruletest, so each conv is a lone
  // conv-block, predicted by its family's kernel).
  std::map<std::string, std::set<std::string>> layers;
  for (const DetectedKernel& k : detect_kernels(load_onnx_ir(net), FusionRules{}))
    if (k.kind == KernelKind::compute && k.kernel.find("conv-") != std::string::npos)
      layers[std::string(stand_in_kernels(k.kernel)[1])].insert(k.config.dump());
  const fs::path results = ws / "predictor_build" / "results";
  for (const std::string kernel : {"conv-bn-relu", "dwconv-bn-relu"}) {
    SCOPED_TRACE(kernel);
    ASSERT_FALSE(layers[kernel].empty());
    std::set<std::string> sampled;  // every layer is a sample: of the models mark, or already a prior one
    const Json models = io::load_json_file(results / (kernel + "_models.json"))[kernel];
    for (const auto& [id, entry] : models.items()) {
      EXPECT_TRUE(layers[kernel].count(entry["config"].dump())) << entry.dump() << " is not a layer of the network";
      sampled.insert(entry["config"].dump());
    }
    const Json prior = io::load_json_file(results / (kernel + "_prior.json"))[kernel];  // kept alive for the loop
    for (const auto& [id, entry] : prior.items()) sampled.insert(entry["config"].dump());
    for (const auto& layer : layers[kernel]) EXPECT_TRUE(sampled.count(layer)) << layer << " was not sampled";
    // Measured and trained on like the prior samples.
    const Json profiled = io::load_json_file(results / ("profiled_" + kernel + ".json"))[kernel];
    for (const auto& [id, entry] : models.items()) EXPECT_TRUE(profiled.contains(id)) << id << " was not profiled";
  }
  const size_t journal = count_lines(results / "profile_journal_conv-bn-relu.jsonl");
  CliResult again = run_cli(build, tmp / "home");
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_TRUE(contains(again.out, "configs sampled earlier in " + (results / "conv-bn-relu_models.json").string()))
      << again.out;
  EXPECT_EQ(count_lines(results / "profile_journal_conv-bn-relu.jsonl"), journal) << "nothing is profiled twice";
}

// The sealed test split: no layer config of it is a training sample of any kernel that may predict it, not even
// when a network listed in SAMPLE_MODELS is one of its networks; and the set itself cannot be listed.
TEST(BuildCli, NoLayerOfTheSealedTestSplitIsATrainingSample) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const std::string kernels = two_samples("conv-bn-relu") + two_samples("dwconv-bn-relu") +
                              two_samples("relu") + two_samples("add");
  const fs::path ws = make_workspace(tmp, kernels);
  const NetworkSet& sealed = find_network_set(kSealedTestSet);
  ASSERT_EQ(sealed.networks.size(), 3 * network_sample_families().size());
  // The split's smallest mobile network, under another name, next to a network of no set.
  const NetworkSpec* pick = nullptr;
  for (const auto& n : sealed.networks)
    if (network_family(n.arch) == "mobilenet_v2" && (!pick || n.resolution < pick->resolution)) pick = &n;
  ASSERT_NE(pick, nullptr);
  const fs::path copy = tmp / "nets" / "mine.onnx";
  write_text(copy, network_onnx(*pick));
  write_text(tmp / "nets" / "mobilenet_v1_r32_w0.25.onnx", networks::build("mobilenet_v1", 32, 0.25).model.SerializeAsString());
  const fs::path config = ws / "configs" / "predictorbuild_config.yaml";
  const std::string base = read_text(config);
  write_text(config, base + "SAMPLE_MODELS: [../nets, sample:proxylessnas:1:5]\n");
  CliResult built = run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--no-ruletest"}, tmp / "home");
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  EXPECT_TRUE(contains(built.out, "layers of the sealed test split left out")) << built.out;
  EXPECT_TRUE(contains(built.out, "samples are layers of the 3 SAMPLE_MODELS networks")) << built.out;
  const NetworkSet sampled = sample_network_set("proxylessnas", 1, 5);
  EXPECT_TRUE(fs::exists(ws / "predictor_build" / "networks" / "proxylessnas-s5" / sampled.networks[0].file_name()));

  // Every layer of every sealed network, as each kernel that may predict it would read it (no rules: nothing fuses).
  std::set<std::string> sealed_configs;
  for (const auto& n : sealed.networks)
    for (const DetectedKernel& k : detect_kernels(load_onnx_ir_bytes(network_onnx(n, false), n.file_name()), FusionRules{})) {
      if (k.kind != KernelKind::compute && k.kind != KernelKind::elementwise) continue;
      const bool ew = k.kind == KernelKind::elementwise;
      for (const std::string& kernel : ew ? elementwise_kernels(k.binary) : stand_in_kernels(k.kernel))
        sealed_configs.insert(kernel + " " + stand_in_config(k.kernel, kernel, k.config).dump());
    }
  size_t samples = 0, model_samples = 0;
  for (const auto& e : fs::directory_iterator(ws / "predictor_build" / "results")) {
    const std::string name = e.path().filename().string();
    if (e.path().extension() != ".json" || name.rfind("profiled_", 0) == 0) continue;
    const Json doc = io::load_json_file(e.path());
    for (const auto& [kernel, entries] : doc.items()) {
      if (!entries.is_object()) continue;
      for (const auto& [id, entry] : entries.items()) {
        if (!entry.is_object() || !entry.contains("config")) continue;
        ++samples;
        model_samples += name.find("_models") != std::string::npos;
        EXPECT_EQ(sealed_configs.count(kernel + " " + entry["config"].dump()), 0u)
            << name << ": " << entry["config"].dump() << " is a layer of the sealed test split";
      }
    }
  }
  EXPECT_GT(model_samples, 0u) << "the other network's layers are samples";
  EXPECT_GT(samples, model_samples);

  for (const char* key : {"SAMPLE_MODELS", "CALIBRATION_NETWORKS"}) {
    write_text(config, base + key + ": [" + kSealedTestSet + "]\n");
    const CliResult refused = run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--no-ruletest"}, tmp / "home");
    EXPECT_NE(refused.exit_code, 0) << key;
    EXPECT_TRUE(contains(refused.err, std::string(key) + " cannot list the sealed-test set")) << refused.err;
  }
}

// A layer's sample goes to the kernel that will predict it, also when a rerun continues that kernel's
// samples: a lone BN is bn's, never its stand-in bnrelu's because bnrelu has no samples of the network yet.
TEST(BuildCli, SampleModelsGoToThePredictingKernelAlsoOnARerun) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "  bn:\n    INIT_SAMPLE_NUM: 2\n    ITERATION: 1\n"
                                          "  bnrelu:\n    INIT_SAMPLE_NUM: 2\n    ITERATION: 1\n");
  // DenseNet's BNs read concats, so the exporter keeps them.
  write_text(tmp / "nets" / "densenet121_r32.onnx", networks::build("densenet121", 32, 0.25).model.SerializeAsString());
  write_text(ws / "configs" / "predictorbuild_config.yaml",
             read_text(ws / "configs" / "predictorbuild_config.yaml") + "SAMPLE_MODELS: [../nets]\n");
  const std::vector<std::string> build = {"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--no-ruletest"};
  CliResult first = run_cli(build, tmp / "home");
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  const fs::path results = ws / "predictor_build" / "results";
  // Without fusion rules every BN is a lone bn kernel: its layers are bn's samples, and bnrelu gets none.
  ASSERT_TRUE(fs::exists(results / "bn_models.json")) << first.out;
  EXPECT_FALSE(fs::exists(results / "bnrelu_models.json")) << first.out;
  CliResult again = run_cli(build, tmp / "home");
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_FALSE(fs::exists(results / "bnrelu_models.json")) << "bn's layers were given to its stand-in: " << again.out;
}


struct LayerBuild {
  CliResult cli;
  fs::path results;
};

// A build of `kernels_yaml` without the rule test whose SAMPLE_MODELS is the one network `model`: its results
// folder tells which kernel each of the network's layers became a sample of.
LayerBuild build_on_layers_of(const TempDir& tmp, const std::string& kernels_yaml, const onnx::ModelProto& model) {
  const fs::path ws = make_workspace(tmp, kernels_yaml);
  write_text(tmp / "nets" / "net.onnx", model.SerializeAsString());
  write_text(ws / "configs" / "predictorbuild_config.yaml",
             read_text(ws / "configs" / "predictorbuild_config.yaml") + "SAMPLE_MODELS: [../nets]\n");
  return {run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--no-ruletest"}, tmp / "home"),
          ws / "predictor_build" / "results"};
}

// A grouped conv's config is the whole layer's (GROUPS in it): it is a sample of gconv-bn-relu only, never of
// conv-bn-relu, its stand-in in prediction, which would learn a dense conv of that size from it.
TEST(BuildCli, SampleModelsGiveAGroupedLayerOnlyToTheGroupedKernel) {
  NNMETER_RELEASE_RUN_ONLY();
  networks::LayerBuilder b("grouped");
  const std::string dense = b.relu(b.conv_bn(b.input("x", {1, 16, 14, 14}), 32, 3));
  b.output(b.relu(b.conv_bn(dense, 64, 3, 1, 4)));  // 4 groups of 8 input channels
  for (const bool with_gconv : {true, false}) {
    SCOPED_TRACE(with_gconv ? "with gconv-bn-relu" : "conv-bn-relu alone");
    TempDir tmp;
    const LayerBuild built =
        build_on_layers_of(tmp, two_samples("conv-bn-relu") + (with_gconv ? two_samples("gconv-bn-relu") : ""), b.model());
    ASSERT_EQ(built.cli.exit_code, 0) << built.cli.out << built.cli.err;
    const fs::path& results = built.results;
    const Json dense_samples = io::load_json_file(results / "conv-bn-relu_models.json")["conv-bn-relu"];
    ASSERT_EQ(dense_samples.size(), 1u) << dense_samples.dump();
    EXPECT_EQ(dense_samples.begin().value()["config"]["CIN"], 16);
    if (!with_gconv) continue;
    const Json grouped = io::load_json_file(results / "gconv-bn-relu_models.json")["gconv-bn-relu"];
    ASSERT_EQ(grouped.size(), 1u) << grouped.dump();
    EXPECT_EQ(grouped.begin().value()["config"],
              (Json{{"HW", 14}, {"CIN", 32}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}, {"GROUPS", 4}}));
  }
}

// A channel shuffle is a sample of channelshuffle where the build has that kernel; without it, of concat, its
// stand-in in prediction, as the concat of its two halves: the config prediction gives concat for it.
TEST(BuildCli, SampleModelsGiveAShuffleToConcatAsItsTwoHalvesWithoutAShuffleKernel) {
  NNMETER_RELEASE_RUN_ONLY();
  networks::LayerBuilder b("shuffled");
  const std::string x = b.input("x", {1, 16, 8, 8});
  b.output(b.concat({b.channel_shuffle(b.relu(b.conv_bn(x, 24, 1)), 2), x}));
  const Json concat_layer = {{"HW", 8}, {"CIN1", 24}, {"CIN2", 16}};
  for (const bool with_shuffle : {true, false}) {
    SCOPED_TRACE(with_shuffle ? "with channelshuffle" : "concat alone");
    TempDir tmp;
    const LayerBuild built =
        build_on_layers_of(tmp, two_samples("concat") + (with_shuffle ? two_samples("channelshuffle") : ""), b.model());
    ASSERT_EQ(built.cli.exit_code, 0) << built.cli.out << built.cli.err;
    const fs::path& results = built.results;
    std::vector<Json> concats;  // the configs only: a concat config may also name absent inputs as 0
    const Json sampled = io::load_json_file(results / "concat_models.json")["concat"];  // kept alive for the loop
    for (const auto& [id, entry] : sampled.items()) {
      Json config = entry["config"];
      for (const char* absent : {"CIN3", "CIN4"})
        if (config.contains(absent) && config[absent] == 0) config.erase(absent);
      concats.push_back(config);
    }
    std::vector<Json> expected = {concat_layer};
    if (!with_shuffle) expected.push_back(Json{{"HW", 8}, {"CIN1", 12}, {"CIN2", 12}});
    std::sort(concats.begin(), concats.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(concats, expected);
    if (!with_shuffle) {
      EXPECT_FALSE(fs::exists(results / "channelshuffle_models.json"));
      continue;
    }
    const Json shuffles = io::load_json_file(results / "channelshuffle_models.json")["channelshuffle"];
    ASSERT_EQ(shuffles.size(), 1u) << shuffles.dump();
    EXPECT_EQ(shuffles.begin().value()["config"], (Json{{"HW", 8}, {"CIN", 24}}));
  }
}

// CALIBRATION_NETWORKS: the build measures them once its kernels are trained and writes the composition term
// into the predictor folder; predict uses it with no flag, and a rerun measures nothing again.
TEST(BuildCli, CalibrationNetworksMakeTheBuildCalibrateItself) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "  conv-bn-relu:\n    INIT_SAMPLE_NUM: 12\n    ITERATION: 1\n"
                                          "  dwconv-bn-relu:\n    INIT_SAMPLE_NUM: 12\n    ITERATION: 1\n");
  write_text(ws / "configs" / "ruletest_config.yaml", "BASIC_TESTCASES: [conv_relu]\nOTHER_TESTCASES: []\n");
  for (const char* arch : {"mobilenet_v2", "resnet18", "mnasnet1_0"})
    write_text(tmp / "cal" / (std::string(arch) + ".onnx"), networks::build(arch, 64, 0.5).model.SerializeAsString());
  const std::string config = read_text(ws / "configs" / "predictorbuild_config.yaml");
  write_text(ws / "configs" / "predictorbuild_config.yaml", config + "CALIBRATION_NETWORKS: [../cal]\n");
  const std::vector<std::string> build = {"build", "--workspace", ws.string(), "--backend", "onednn_cpu",
                                          "--predictor-name", "calibrated"};
  const CliResult built = run_cli(build, tmp / "home");
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  const fs::path folder = ws / "predictor_build" / "predictor";
  ASSERT_TRUE(fs::exists(folder / "composition.json")) << built.out;
  EXPECT_TRUE(contains(built.out, "Calibrating the composition term on the 3 CALIBRATION_NETWORKS")) << built.out;
  EXPECT_TRUE(contains(built.out, "composition: ")) << built.out;
  EXPECT_EQ(io::load_json_file(folder / "composition.json")["calibration"]["models"], 3);
  const fs::path journal = ws / "predictor_build" / "calibration" / "journal.jsonl";
  const size_t measured = count_lines(journal);
  EXPECT_GE(measured, 6u);  // 3 networks x 2 repeats
  ASSERT_EQ(run_cli({"register", "--predictor", (folder / "meta.yaml").string()}, tmp / "home").exit_code, 0);
  const CliResult predicted =
      run_cli({"predict", "--predictor", "calibrated", "--onnx", (tmp / "cal" / "resnet18.onnx").string(), "--json"}, tmp / "home");
  ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
  const Json p = Json::parse(predicted.out).begin().value();
  EXPECT_NE(p["composition_factor"].get<double>(), 1.0) << predicted.out;  // 1 without a term
  EXPECT_NE(p["latency_ms"].get<double>(), p["kernels_ms"].get<double>()) << predicted.out;
  const CliResult again = run_cli(build, tmp / "home");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(count_lines(journal), measured);

  // Bad entries and too few networks stop the build before anything is measured.
  fs::remove(tmp / "cal" / "mnasnet1_0.onnx");
  for (const auto& [value, message] : std::vector<std::pair<std::string, std::string>>{
           {"[../cal]", "CALIBRATION_NETWORKS names 2 networks; the composition term needs at least 3"},
           {"[imagenet]", "CALIBRATION_NETWORKS entry imagenet is neither a network set"}}) {
    TempDir other;
    const fs::path ws2 = make_workspace(other, "  relu:\n    INIT_SAMPLE_NUM: 4\n    ITERATION: 1\n");
    write_text(ws2 / "configs" / "predictorbuild_config.yaml",
               read_text(ws2 / "configs" / "predictorbuild_config.yaml") + "CALIBRATION_NETWORKS: " + value + "\n");
    fs::create_directories(other / "cal");
    for (const auto& e : fs::directory_iterator(tmp / "cal")) fs::copy_file(e.path(), other / "cal" / e.path().filename());
    const CliResult bad = run_cli({"build", "--workspace", ws2.string(), "--backend", "onednn_cpu", "--no-ruletest"}, other / "home");
    EXPECT_NE(bad.exit_code, 0) << value;
    EXPECT_TRUE(contains(bad.err, message)) << bad.err;
    EXPECT_FALSE(fs::exists(ws2 / "predictor_build" / "results" / "profiled_relu.json")) << value;
  }
  // SAMPLE_MODELS takes a set by name too: its networks' layers become samples of the kernels built.
  TempDir sampled;
  const fs::path ws4 = make_workspace(sampled, "  hswish:\n    INIT_SAMPLE_NUM: 2\n    ITERATION: 1\n");
  write_text(ws4 / "configs" / "predictorbuild_config.yaml",
             read_text(ws4 / "configs" / "predictorbuild_config.yaml") + "SAMPLE_MODELS: [main-job]\n");
  const CliResult with_set = run_cli({"build", "--workspace", ws4.string(), "--backend", "onednn_cpu", "--no-ruletest"}, sampled / "home");
  ASSERT_EQ(with_set.exit_code, 0) << with_set.err;
  EXPECT_TRUE(fs::exists(ws4 / "predictor_build" / "networks" / "main-job" / "mobilenet_v3_large_r224_w1.onnx"));
  EXPECT_TRUE(fs::exists(ws4 / "predictor_build" / "results" / "hswish_models.json")) << with_set.out;

  // A builtin set by name is written into the build folder; without fusion rules the build says it cannot calibrate.
  TempDir named;
  const fs::path ws3 = make_workspace(named, "  relu:\n    INIT_SAMPLE_NUM: 4\n    ITERATION: 1\n");
  write_text(ws3 / "configs" / "predictorbuild_config.yaml",
             read_text(ws3 / "configs" / "predictorbuild_config.yaml") + "CALIBRATION_NETWORKS: [main-job]\n");
  const CliResult unruled = run_cli({"build", "--workspace", ws3.string(), "--backend", "onednn_cpu", "--no-ruletest"}, named / "home");
  ASSERT_EQ(unruled.exit_code, 0) << unruled.err;
  EXPECT_TRUE(fs::exists(ws3 / "predictor_build" / "networks" / "main-job" / "resnet18_r224_w1.onnx"));
  EXPECT_TRUE(contains(unruled.out + unruled.err, "CALIBRATION_NETWORKS: not calibrated")) << unruled.out << unruled.err;
  EXPECT_FALSE(fs::exists(ws3 / "predictor_build" / "predictor" / "composition.json"));
}

// Leave-family-out holds a family's layers out of the kernel samples by config, not by name: ResNet-18 and -34 are
// one family, and every sample that is one of their layers leaves the training when they are held out.
TEST(BuildCli, LeaveFamilyOutHoldsTheFamilysLayersOutOfTheKernelSamples) {
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "  conv-bn-relu:\n    INIT_SAMPLE_NUM: 10\n    ITERATION: 1\n"
                                          "  dwconv-bn-relu:\n    INIT_SAMPLE_NUM: 10\n    ITERATION: 1\n");
  write_text(ws / "configs" / "ruletest_config.yaml", "BASIC_TESTCASES: [conv_relu]\nOTHER_TESTCASES: []\n");
  for (const char* arch : {"mobilenet_v2", "resnet18", "resnet34", "mnasnet1_0", "squeezenet1_1"})
    write_text(tmp / "cal" / (std::string(arch) + "_r64_w0.5.onnx"), networks::build(arch, 64, 0.5).model.SerializeAsString());
  const fs::path config_file = ws / "configs" / "predictorbuild_config.yaml";
  const std::string config = read_text(config_file);
  // The networks' layers are samples too (as the preset accurate has them): holding a family out must remove them.
  write_text(config_file, config + "SAMPLE_MODELS: [../cal]\nCALIBRATION_NETWORKS: [../cal]\n");
  const CliResult built = run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home");
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  EXPECT_TRUE(contains(built.out, "Generalization: each family held out with its layers (4 families, 5 networks)"))
      << built.out << built.err;
  const fs::path folder = ws / "predictor_build" / "predictor";
  ASSERT_TRUE(fs::exists(folder / kGeneralizationFile));
  const size_t measured = count_lines(ws / "predictor_build" / "calibration" / "journal.jsonl");

  const CliResult lfo = run_cli({"evaluate", "--leave-family-out", "--workspace", ws.string(), "--json"}, tmp / "home");
  ASSERT_EQ(lfo.exit_code, 0) << lfo.err;
  EXPECT_EQ(count_lines(ws / "predictor_build" / "calibration" / "journal.jsonl"), measured);  // nothing measured again
  const Json report = Json::parse(lfo.out);
  EXPECT_EQ(report["summary"]["models"], 5);
  EXPECT_EQ(report["in_sample"]["models"], 5);
  // The build's run wrote an interval into the folder; this run's errors make the next one, and do not score it.
  EXPECT_EQ(report["summary"]["interval_models"], 0);
  EXPECT_EQ(report["in_sample"]["interval_models"], 0);
  // Five errors on families held out: every prediction now comes with an interval estimated from them.
  ASSERT_TRUE(report["interval"].is_object()) << report.dump();
  EXPECT_EQ(report["interval"]["networks"], 5);
  EXPECT_LT(report["interval"]["low"].get<double>(), report["interval"]["high"].get<double>());
  std::map<std::string, Json> families;
  for (const auto& f : report["families"]) families[f["family"].get<std::string>()] = f;
  ASSERT_EQ(families.size(), 4u) << report.dump();
  EXPECT_EQ(families["resnet"]["networks"], Json({"resnet18_r64_w0.5", "resnet34_r64_w0.5"}));
  for (const auto& m : report["models"]) EXPECT_TRUE(m["error"].is_number()) << m.dump();

  // The samples removed are exactly those whose config is a conv layer of ResNet-18 or -34 (DETAIL keeps configs).
  std::set<std::string> resnet_layers;
  ASSERT_EQ(run_cli({"register", "--predictor", (folder / "meta.yaml").string()}, tmp / "home").exit_code, 0);
  for (const char* stem : {"resnet18_r64_w0.5", "resnet34_r64_w0.5"}) {
    const CliResult p = run_cli({"predict", "--predictor", "onednn_cpu_predictor", "--onnx",
                                 (tmp / "cal" / (std::string(stem) + ".onnx")).string(), "--json"}, tmp / "home");
    ASSERT_EQ(p.exit_code, 0) << p.err;
    const Json prediction = Json::parse(p.out).begin().value();
    EXPECT_TRUE(prediction["interval_ms"].is_array()) << p.out;
    for (const auto& k : prediction["kernels"])
      if (k["predictor_kernel"] == "conv-bn-relu") resnet_layers.insert(k["config"].dump());
  }
  const Json profiled = io::load_json_file(ws / "predictor_build" / "results" / "profiled_conv-bn-relu.json");
  size_t layers = 0;
  for (const auto& [id, entry] : profiled["conv-bn-relu"].items()) layers += resnet_layers.count(entry["config"].dump());
  ASSERT_GT(layers, 0u) << "SAMPLE_MODELS made the layers samples";
  EXPECT_EQ(families["resnet"]["samples_removed"]["conv-bn-relu"], layers) << families["resnet"].dump();
  EXPECT_EQ(families["resnet"]["samples_kept"]["conv-bn-relu"].get<size_t>() + layers, profiled["conv-bn-relu"].size());

  // Without what it needs, one line each, before anything is measured.
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"evaluate", "--leave-family-out"}, "--leave-family-out needs --workspace"},
           {{"evaluate", "--leave-family-out", "--workspace", ws.string(), "--onnx", (tmp / "cal").string()},
            "give it without --onnx"},
           {{"evaluate", "--workspace", ws.string(), "--predictor", folder.string(), "--onnx", (tmp / "cal").string()},
            "--workspace is for --leave-family-out"},
           {{"evaluate", "--predictor", folder.string()}, "--onnx is required"},
           {{"evaluate", "--leave-family-out", "--workspace", (tmp / "cal").string()}, "configs"}}) {
    const CliResult bad = run_cli(args, tmp / "home");
    EXPECT_NE(bad.exit_code, 0) << message;
    EXPECT_TRUE(contains(bad.err, message)) << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  }
  write_text(config_file, config + "CALIBRATION_NETWORKS: [../cal/resnet18_r64_w0.5.onnx, ../cal/resnet34_r64_w0.5.onnx]\n");
  const CliResult one = run_cli({"evaluate", "--leave-family-out", "--workspace", ws.string()}, tmp / "home");
  EXPECT_EQ(one.exit_code, 1);
  EXPECT_TRUE(contains(one.err, "needs calibration networks of at least two families; the 2 of CALIBRATION_NETWORKS are all "
                                "of family 'resnet'")) << one.err;
  write_text(config_file, config);
  const CliResult none = run_cli({"evaluate", "--leave-family-out", "--workspace", ws.string()}, tmp / "home");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_TRUE(contains(none.err, "lists no CALIBRATION_NETWORKS")) << none.err;
}

TEST(BuildCli, SampleModelsThatCannotBeReadFailBeforeAnyWork) {
  TempDir tmp;
  write_text(tmp / "nets" / "broken.onnx", "not an onnx model");
  write_text(tmp / "empty" / "notes.txt", "no networks here");
  for (const auto& [value, message] : std::vector<std::pair<std::string, std::string>>{
           {"[../missing]", "SAMPLE_MODELS entry ../missing is neither a network set (nn-meter networks list), a sample "
                            "(sample:FAMILY:COUNT:SEED) nor a file or folder (relative paths start at the workspace "
                            "folder " + (tmp / "ws").string()},
           {"[sample:resnet:2]", "SAMPLE_MODELS: 'sample:resnet:2' is not a sample: write sample:FAMILY:COUNT:SEED"},
           {"[sample:lenet:2:1]", "SAMPLE_MODELS: unknown network family 'lenet' (known: all, alexnet"},
           {"[sample:resnet:0:1]", "SAMPLE_MODELS: a sample's count must be in [1, 100000], got 0"},
           {"[sample:resnet:2:20261207]", "seed 20261207 draws the sealed test split (sealed-test)"},
           {"[../empty]", "SAMPLE_MODELS folder " + (tmp / "ws" / ".." / "empty").string() + " holds no .onnx file"},
           {"[../nets]", "broken.onnx"}}) {
    SCOPED_TRACE(value);
    const fs::path ws = make_workspace(tmp, "  relu:\n    INIT_SAMPLE_NUM: 3\n    ITERATION: 1\n");
    write_text(ws / "configs" / "predictorbuild_config.yaml",
               read_text(ws / "configs" / "predictorbuild_config.yaml") + "SAMPLE_MODELS: " + value + "\n");
    CliResult r = run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(contains(r.err, message)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_FALSE(fs::exists(ws / "predictor_build" / "kernels")) << "nothing sampled";
    fs::remove_all(ws);
  }
}

TEST(BuildCli, UnknownKernelInTheYamlFailsBeforeAnyWork) {
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "  relu:\n  no-such-kernel:\n");
  CliResult r = run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "unknown kernel 'no-such-kernel'")) << r.err;
  EXPECT_FALSE(fs::exists(ws / "predictor_build" / "kernels"));
}

TEST(BuildCli, ProfilingResumesAfterSigkillWithoutProfilingAnIdTwice) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  const fs::path ws = make_workspace(tmp, "  relu:\n");
  const fs::path home = tmp / "home";
  CliResult sampled = run_cli({"sample", "--workspace", ws.string(), "--kernel", "relu", "--num", "40", "--mark", "prior",
                               "--seed", "3"}, home);
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  const fs::path journal = ws / "predictor_build" / "results" / "profile_journal_relu.jsonl";

  // Start profiling, kill it hard once a few results are durable.
  std::vector<std::string> args = {NNMETER_CLI_PATH, "profile", "--workspace", ws.string(), "--backend", "onednn_cpu",
                                   "--kernel", "relu"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string home_env = "NN_METER_HOME=" + home.string();
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  envp.push_back(const_cast<char*>(home_env.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (count_lines(journal) < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  const size_t before = count_lines(journal);
  ASSERT_GE(before, 3u);

  CliResult resumed = run_cli({"profile", "--workspace", ws.string(), "--backend", "onednn_cpu", "--kernel", "relu"}, home);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  std::set<std::string> ids;
  std::set<std::pair<std::string, int>> measured;
  std::istringstream lines(read_text(journal));
  size_t records = 0;
  for (std::string line; std::getline(lines, line);) {
    const Json record = Json::parse(line);
    ids.insert(record.at("id").get<std::string>());
    measured.emplace(record.at("id").get<std::string>(), record.at("repeat").get<int>());
    ++records;
  }
  EXPECT_EQ(records, measured.size()) << "a repeat was measured twice";
  EXPECT_EQ(records, 2 * ids.size()) << "every ID has its two repeats";
  const Json profiled = io::load_json_file(ws / "predictor_build" / "results" / "profiled_relu.json");
  EXPECT_EQ(profiled["relu"].size() + count_lines(ws / "predictor_build" / "results" / "profile_error.log"), ids.size());
  EXPECT_EQ(ids.size(), io::load_json_file(ws / "predictor_build" / "results" / "relu_prior.json")["relu"].size());
}

}  // namespace
}  // namespace nnmeter::test
