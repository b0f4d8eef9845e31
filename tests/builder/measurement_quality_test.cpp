// The build's verdict on its own labels (assess_measurement_quality): from repeat ceilings and drift probes, and
// end to end with the chaos backend's reproducible level noise — a noisy build says so and marks its predictor.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "common/io.h"
#include "networks/layers.h"
#include "nnmeter/builder.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "support/plugin_fixtures.h"
#include "support/test_support.h"

namespace nnmeter::test {
namespace {

KernelBuildSummary summary(const std::string& kernel, double within10) {
  KernelBuildSummary s;
  s.kernel = kernel;
  s.repeatability.samples = 100;
  s.repeatability.within10 = within10;
  s.repeatability.within5 = within10 / 2;
  return s;
}

// A workspace of the chaos backend (registered in tmp/home) that builds 24 relu samples; `backend_config` is its
// backend_config.yaml, whose NOISE_STATE is set here.
fs::path chaos_workspace(const TempDir& tmp, const std::string& name, const std::string& backend_config) {
  const fs::path ws = tmp / name;
  const CliResult created = run_cli({"create", "--customized-workspace", ws.string(), "--backend", "chaos"}, tmp / "home");
  EXPECT_EQ(created.exit_code, 0) << created.out << created.err;
  write_text(ws / "configs" / "predictorbuild_config.yaml",
             "DETAIL: TRUE\nIMPLEMENT: onnx\nBATCH_SIZE: 1\nKERNELS:\n  relu:\n    INIT_SAMPLE_NUM: 24\n"
             "    FINEGRAINED_SAMPLE_NUM: 2\n    ITERATION: 1\n    ERROR_THRESHOLD: 0.1\n");
  write_text(ws / "configs" / "backend_config.yaml",
             backend_config + fmt::format("NOISE_STATE: {}\n", (tmp / (name + ".calls")).string()));
  return ws;
}

TEST(MeasurementQuality, RepeatCeilingsAndDriftDecide) {
  const Json quiet = assess_measurement_quality({summary("conv-bn-relu", 0.96), summary("relu", 0.99)}, {});
  EXPECT_EQ(quiet["verdict"], "ok");
  EXPECT_TRUE(quiet["reasons"].empty());
  EXPECT_DOUBLE_EQ(quiet["kernels"]["relu"]["within10"].get<double>(), 0.99);

  const Json noisy = assess_measurement_quality({summary("conv-bn-relu", 0.64), summary("dwconv-bn-relu", 0.53),
                                                 summary("relu", 0.97)}, {});
  EXPECT_EQ(noisy["verdict"], "noisy");
  ASSERT_EQ(noisy["reasons"].size(), 1u);
  const std::string reason = noisy["reasons"][0];
  EXPECT_TRUE(contains(reason, "2 kernels")) << reason;
  EXPECT_TRUE(contains(reason, "conv-bn-relu 64%, dwconv-bn-relu 53%")) << reason;
  EXPECT_FALSE(contains(reason, "relu 97%")) << reason;

  // The level falls 17 % for two measurements and comes back: judged on the running median of three.
  DriftSeries probe;
  probe.probe = "dwconv 3x3";
  probe.minutes = {0, 10, 20, 30, 40, 50};
  probe.ratio = {1.0, 0.98, 0.83, 0.84, 1.02, 1.05};
  const Json drifting = assess_measurement_quality({summary("relu", 0.97)}, {probe});
  EXPECT_EQ(drifting["verdict"], "noisy");
  const std::string why = drifting["reasons"][0];
  EXPECT_TRUE(contains(why, "dwconv 3x3 moved -16.0% (minute 20) to +2.0% (minute 50)")) << why;
  EXPECT_TRUE(contains(why, "each the median of three measurements")) << why;
  EXPECT_NEAR(drifting["drift"][0]["low"].get<double>(), -0.16, 1e-9);
  EXPECT_NEAR(drifting["drift"][0]["raw_low"].get<double>(), -0.17, 1e-9);
  // Labels normalized by the probes' level no longer carry the drift: recorded, not a reason.
  const Json normalized = assess_measurement_quality({summary("relu", 0.97)}, {probe}, true);
  EXPECT_EQ(normalized["verdict"], "ok");
  EXPECT_EQ(normalized["drift"].size(), 1u);
  EXPECT_EQ(normalized["levels_normalized"], true);

  probe.ratio = {1.0, 0.99, 0.97, 1.02, 1.03, 1.01};
  EXPECT_EQ(assess_measurement_quality({summary("relu", 0.97)}, {probe})["verdict"], "ok");
  // One measurement 40 % off (one slow process) in a steady series: recorded, not a reason.
  probe.ratio = {1.0, 0.99, 1.40, 1.02, 0.98, 1.01};
  const Json spike = assess_measurement_quality({summary("relu", 0.97)}, {probe});
  EXPECT_EQ(spike["verdict"], "ok") << spike.dump();
  EXPECT_NEAR(spike["drift"][0]["raw_high"].get<double>(), 0.40, 1e-9);
  EXPECT_NEAR(spike["drift"][0]["high"].get<double>(), 0.02, 1e-9);
}

// A plugin backend whose level moves ±40 % between processes: the build warns and marks the predictor; the same
// build without the noise does not.
TEST(MeasurementQuality, ANoisyBuildSaysSoAndMarksItsPredictor) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  Registry(tmp / "home").register_module(ModuleKind::Backend, make_chaos_package(tmp / "chaos"));
  auto build = [&](const std::string& name, double noise) {
    const fs::path ws = chaos_workspace(tmp, name, fmt::format("REPEATS: 4\nSPREAD: 0.0\nLEVEL_NOISE: {}\n", noise));
    const CliResult r = run_cli({"build", "--workspace", ws.string(), "--backend", "chaos", "--no-ruletest",
                                 "--predictor-name", name}, tmp / "home");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return std::make_pair(r, io::load_json_file(ws / "predictor_build" / "predictor" / "predictor.json"));
  };
  const auto [noisy_run, noisy] = build("noisy", 0.4);
  EXPECT_EQ(noisy["measurement_quality"]["verdict"], "noisy") << noisy["measurement_quality"].dump();
  EXPECT_TRUE(contains(noisy_run.out, "measurement: the repeats of one kernel agree within ±10% for only")) << noisy_run.out;
  EXPECT_TRUE(contains(noisy_run.out, "marked measurement_quality noisy")) << noisy_run.out;
  EXPECT_LT(noisy["measurement_quality"]["kernels"]["relu"]["within10"].get<double>(), kQuietRepeatWithin10);

  const auto [quiet_run, quiet] = build("quiet", 0.0);
  EXPECT_EQ(quiet["measurement_quality"]["verdict"], "ok") << quiet["measurement_quality"].dump();
  EXPECT_FALSE(contains(quiet_run.out, "measurement:")) << quiet_run.out;

  // predict says so whenever it loads the noisy predictor, and says nothing of the quiet one.
  networks::LayerBuilder b("relu");
  b.output(b.relu(b.input("x", {1, 16, 8, 8})));
  b.save(tmp / "relu.onnx");
  for (const std::string name : {"noisy", "quiet"}) {
    const fs::path folder = tmp / name / "predictor_build" / "predictor";
    write_text(folder / "fusion_rules.json", "{}\n");
    ASSERT_EQ(run_cli({"register", "--predictor", (folder / "meta.yaml").string()}, tmp / "home").exit_code, 0);
    const CliResult p = run_cli({"predict", "--predictor", name, "--onnx", (tmp / "relu.onnx").string()}, tmp / "home");
    ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
    EXPECT_EQ(contains(p.out + p.err, "was built on noisy measurements (measurement_quality in its predictor.json)"),
              name == "noisy")
        << name << ": " << p.out << p.err;
  }
}

// A machine whose level rises slowly over the build (the chaos backend's DRIFT): the drift probes show it and the
// build calls its labels noise, naming the probe.
TEST(MeasurementQuality, ADriftingMachineIsCaughtByTheProbes) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  Registry(tmp / "home").register_module(ModuleKind::Backend, make_chaos_package(tmp / "chaos"));
  const fs::path ws = chaos_workspace(tmp, "ws", "REPEATS: 2\nSPREAD: 0.0\nDRIFT: 0.5\nDRIFT_PROBE_EVERY: 10\n");
  const CliResult r = run_cli({"build", "--workspace", ws.string(), "--backend", "chaos", "--no-ruletest",
                               "--predictor-name", "p"}, tmp / "home");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const Json quality = io::load_json_file(ws / "predictor_build" / "predictor" / "predictor.json")["measurement_quality"];
  EXPECT_EQ(quality["verdict"], "noisy") << quality.dump();
  ASSERT_FALSE(quality["drift"].empty()) << quality.dump();
  EXPECT_GT(quality["drift"][0]["high"].get<double>(), 0.1) << quality.dump();
  EXPECT_TRUE(contains(r.out, "measurement: drift probe")) << r.out;

  // The same workspace built again with PROBE_LEVELS normalize: nothing is measured again, the labels lose the
  // drift (the later samples' labels come down), and the drift is recorded but no longer a reason.
  const fs::path results = ws / "predictor_build" / "results";
  const auto labels = [&] {
    double sum = 0;
    const Json doc = io::load_json_file(results / "profiled_relu.json");
    for (const auto& [id, entry] : doc["relu"].items())
      sum += std::stod(entry["latency"].get<std::string>());
    return sum;
  };
  const double measured = labels();
  const size_t journaled = count_lines(results / "profile_journal_relu.jsonl");
  const fs::path config = ws / "configs" / "backend_config.yaml";
  write_text(config, read_text(config) + "PROBE_LEVELS: normalize\n");
  const CliResult again = run_cli({"build", "--workspace", ws.string(), "--backend", "chaos", "--no-ruletest",
                                   "--predictor-name", "p"}, tmp / "home");
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(count_lines(results / "profile_journal_relu.jsonl"), journaled);
  EXPECT_TRUE(contains(again.out, "every label is divided by their level")) << again.out;
  EXPECT_LT(labels(), 0.97 * measured);
  const Json normalized = io::load_json_file(ws / "predictor_build" / "predictor" / "predictor.json")["measurement_quality"];
  EXPECT_EQ(normalized["verdict"], "ok") << normalized.dump();
  EXPECT_EQ(normalized["levels_normalized"], true) << normalized.dump();
  EXPECT_FALSE(normalized["drift"].empty()) << normalized.dump();
}

// `build --remeasure-noisy` on the workspace of a noisy build: only the samples whose repeats did not settle get
// more repeats (up to twice REPEATS), every earlier measurement is reused, the labels repeat better, and a second
// run measures nothing more.
TEST(MeasurementQuality, RemeasureNoisyRepeatsOnlyTheUnsettledSamples) {
  NNMETER_RELEASE_RUN_ONLY();
  TempDir tmp;
  Registry(tmp / "home").register_module(ModuleKind::Backend, make_chaos_package(tmp / "chaos"));
  const fs::path ws = chaos_workspace(tmp, "ws", "REPEATS: 4\nSPREAD: 0.0\nLEVEL_NOISE: 0.4\nSETTLE_TOLERANCE: 0.05\n");
  auto build = [&](bool remeasure) {
    std::vector<std::string> args = {"build", "--workspace", ws.string(), "--backend", "chaos", "--no-ruletest",
                                     "--predictor-name", "p"};
    if (remeasure) args.push_back("--remeasure-noisy");
    const CliResult r = run_cli(args, tmp / "home");
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return r;
  };
  const fs::path profiled = ws / "predictor_build" / "results" / "profiled_relu.json";
  auto repeats_of = [&] {
    std::map<std::string, std::vector<double>> out;
    const Json doc = io::load_json_file(profiled);
    for (const auto& [id, entry] : doc["relu"].items())
      out[id] = entry["repeats_ms"].get<std::vector<double>>();
    return out;
  };
  auto ceiling = [&] {
    return io::load_json_file(ws / "predictor_build" / "predictor" / "predictor.json")["measurement_quality"]["kernels"]
                             ["relu"]["within10"].get<double>();
  };

  const CliResult first = build(false);
  EXPECT_TRUE(contains(first.out, "nn-meter build --remeasure-noisy")) << first.out;
  const auto before = repeats_of();
  const double ceiling_before = ceiling();
  size_t unsettled = 0;
  for (const auto& [id, repeats] : before) {
    ASSERT_EQ(repeats.size(), 4u) << id;
    unsettled += !repeats_settled(repeats, RepeatStatistic::min, 0.05);
  }
  ASSERT_GT(unsettled, 0u) << "±40% level noise leaves some samples unsettled after 4 repeats";
  ASSERT_LT(unsettled, before.size()) << "and some settled";

  const CliResult again = build(true);
  EXPECT_TRUE(contains(again.out, "reached the cap without settling")) << again.out;
  const auto after = repeats_of();
  ASSERT_EQ(after.size(), before.size());
  size_t grew = 0;
  for (const auto& [id, repeats] : after) {
    const auto& old = before.at(id);
    // Earlier repeats are kept as they were; only unsettled samples get more, at most up to 8.
    ASSERT_GE(repeats.size(), old.size()) << id;
    EXPECT_TRUE(std::equal(old.begin(), old.end(), repeats.begin())) << id;
    EXPECT_LE(repeats.size(), 8u) << id;
    if (repeats_settled(old, RepeatStatistic::min, 0.05)) EXPECT_EQ(repeats.size(), old.size()) << id;
    else grew += repeats.size() > old.size();
  }
  EXPECT_EQ(grew, unsettled);
  EXPECT_GT(ceiling(), ceiling_before) << "more repeats of the noisy samples make the labels repeat better";

  build(true);
  EXPECT_EQ(repeats_of(), after) << "a second --remeasure-noisy finds nothing left to measure";
}

}  // namespace
}  // namespace nnmeter::test
