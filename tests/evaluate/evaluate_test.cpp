// nn-meter evaluate through the real binary: real predictions against real onednn_cpu measurements by the
// repeat protocol, every output (table, --json, CSV, HTML), resume without measuring a repeat twice,
// models that fail to predict, bad input; and the HTML report as Chromium renders it.
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "networks/architectures.h"
#include "nnmeter/evaluate.h"
#include "nnmeter/networks.h"
#include "prediction/prediction_fixtures.h"

namespace nnmeter::test {
namespace {

const char* kQuick = "NUM_THREADS: 1\nWARMUP_RUNS: 0\nNUM_RUNS: 2\nNUM_ROUNDS: 1\nMIN_TIME_MS: 0\nMAX_RETRIES: 0\n";

class EvaluateCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new TempDir();
    make_predictor_folder(predictor(), {"conv-bn-relu", "dwconv-bn-relu", "fc", "global-avgpool", "add", "relu"},
                          rules_json({"BF_conv_bn", "BF_conv_relu", "BF_dwconv_bn", "BF_dwconv_relu"}));
    fs::create_directories(*root_ / "models");
    write_text(models() / "mobilenet_v2_r32_w1.0.onnx", networks::build("mobilenet_v2", 32).model.SerializeAsString());
    write_text(models() / "resnet18_r32.onnx", networks::build("resnet18", 32).model.SerializeAsString());
    write_text(models() / "zz_broken.onnx", "not an onnx model");
    write_text(quick(), kQuick);
  }
  static void TearDownTestSuite() { delete root_; }
  static fs::path predictor() { return *root_ / "tiny_cpu"; }
  static fs::path models() { return *root_ / "models"; }
  static fs::path quick() { return *root_ / "quick.yaml"; }
  static fs::path home() { return *root_ / "home"; }

  CliResult evaluate(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"evaluate", "--predictor", predictor().string(), "--onnx", models().string(),
                                     "--config", quick().string(), "--work-dir", (work / "eval").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, home());
  }

  static TempDir* root_;
  TempDir work;
};
TempDir* EvaluateCli::root_ = nullptr;

TEST_F(EvaluateCli, ScoresEveryModelAgainstRepeatsAndResumes) {
  const CliResult r = evaluate({"--repeats", "2", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  EXPECT_EQ(doc["predictor"], "tiny_cpu");
  EXPECT_EQ(doc["backend"], "onednn_cpu");
  EXPECT_EQ(doc["protocol"]["repeats"], 2);
  EXPECT_EQ(doc["summary"]["models"], 2);
  ASSERT_EQ(doc["models"].size(), 3u);
  std::map<std::string, Json> by_name;
  for (const auto& m : doc["models"]) by_name[m["model"].get<std::string>()] = m;
  for (const std::string name : {"mobilenet_v2_r32_w1.0", "resnet18_r32"}) {
    const Json& m = by_name.at(name);
    ASSERT_EQ(m["repeats_ms"].size(), 2u) << m.dump();
    // The label is the minimum of the repeats; the error is the prediction against it.
    const double measured = m["measured_ms"].get<double>();
    EXPECT_DOUBLE_EQ(measured, std::min(m["repeats_ms"][0].get<double>(), m["repeats_ms"][1].get<double>()));
    EXPECT_NEAR(m["error"].get<double>(), m["predicted_ms"].get<double>() / measured - 1, 1e-12);
  }
  EXPECT_EQ(by_name.at("mobilenet_v2_r32_w1.0")["family"], "mobilenet_v2");
  EXPECT_EQ(by_name.at("resnet18_r32")["family"], "resnet");
  EXPECT_TRUE(contains(by_name.at("zz_broken")["failure"].get<std::string>(), "prediction failed")) << r.out;
  EXPECT_TRUE(by_name.at("zz_broken")["measured_ms"].is_null());
  EXPECT_EQ(doc["summary"]["repeatability"]["samples"], 2);
  // Ranking, next to its ceiling: two models rank the same or reversed; so do the two halves of their repeats.
  const auto order = [](double a, double b) { return a < b ? 1.0 : -1.0; };
  const Json& mbv2 = by_name.at("mobilenet_v2_r32_w1.0");
  const Json& r18 = by_name.at("resnet18_r32");
  EXPECT_DOUBLE_EQ(doc["summary"]["kendall_tau"].get<double>(),
                   order(mbv2["predicted_ms"].get<double>(), r18["predicted_ms"].get<double>()) *
                       order(mbv2["measured_ms"].get<double>(), r18["measured_ms"].get<double>()));
  EXPECT_DOUBLE_EQ(doc["summary"]["spearman"].get<double>(), doc["summary"]["kendall_tau"].get<double>());
  EXPECT_EQ(std::abs(doc["summary"]["repeatability"]["kendall_tau"].get<double>()), 1.0);
  EXPECT_TRUE(doc["by_family"]["resnet"]["kendall_tau"].is_null());  // one model ranks nothing
  EXPECT_EQ(count_lines(work / "eval" / "journal.jsonl"), 4u);  // the broken model is never measured
  EXPECT_EQ(count_lines(work / "eval" / "results.csv"), 4u);
  {  // The CSV carries the prediction's parts too: a spreadsheet can refit the composition term from it.
    const std::string csv = read_text(work / "eval" / "results.csv");
    EXPECT_EQ(csv.substr(0, csv.find('\n')),
              "model,family,predicted_ms,measured_ms,error_pct,split_half_deviation_pct,kernels_ms,footprint_mb,"
              "repeats_ms,failure");
    const Json& m = by_name.at("resnet18_r32");
    const auto row = csv.substr(csv.find("\nresnet18_r32,") + 1);
    std::vector<std::string> fields;
    std::istringstream line(row.substr(0, row.find('\n')));
    for (std::string f; std::getline(line, f, ',');) fields.push_back(f);
    ASSERT_EQ(fields.size(), 10u) << row;
    EXPECT_NEAR(std::stod(fields[6]), m["kernels_ms"].get<double>(), 1e-5 * m["kernels_ms"].get<double>());
    EXPECT_NEAR(std::stod(fields[7]), m["footprint_mb"].get<double>(), 1e-5 * m["footprint_mb"].get<double>());
  }
  EXPECT_TRUE(contains(read_text(work / "eval" / "report.html"), "<svg"));
  EXPECT_TRUE(contains(read_text(work / "eval" / "report.html"), "<tr><td>ranking</td><td>Kendall τ "));

  // A rerun measures nothing again and gives the same measurements; more repeats add only the missing ones.
  const CliResult again = evaluate({"--repeats", "2", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(count_lines(work / "eval" / "journal.jsonl"), 4u);
  EXPECT_EQ(Json::parse(again.out)["models"][0]["repeats_ms"], doc["models"][0]["repeats_ms"]);
  const CliResult more = evaluate({"--repeats", "3"});
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_EQ(count_lines(work / "eval" / "journal.jsonl"), 6u);
  // The terminal table: one row per model, the failure in words, the summary next to the repeatability.
  EXPECT_TRUE(contains(more.out, "(nn-Meter) resnet18_r32 ")) << more.out;
  EXPECT_TRUE(contains(more.out, "zz_broken")) << more.out;
  EXPECT_TRUE(contains(more.out, "2 of 3 models scored: RMSPE ")) << more.out;
  EXPECT_TRUE(contains(more.out, "measurement repeatability (two halves of 3 repeats, min each)")) << more.out;
  EXPECT_TRUE(contains(more.out, "ranking: Kendall tau ")) << more.out;
  // Each family's figure: one network of resnet, none of the broken one's scored, too few to rank.
  EXPECT_TRUE(contains(more.out, "per family: models, within ±10%, within ±5%, Kendall tau (the two halves' tau)")) << more.out;
  EXPECT_TRUE(contains(more.out, "  resnet                 1 ")) << more.out;
  EXPECT_TRUE(contains(more.out, "  zz_broken              0 ")) << more.out;
  EXPECT_TRUE(contains(more.out, "Report: " + (work / "eval" / "report.html").string())) << more.out;
}

// --kernels measures every detected kernel alone too, in the same journal, and splits each model's error into
// the kernel predictors' part and the composition's part; nothing is measured twice on a rerun.
TEST_F(EvaluateCli, KernelsSplitTheErrorIntoPredictorsAndComposition) {
  const fs::path one = work / "one";
  fs::create_directories(one);
  fs::copy_file(models() / "resnet18_r32.onnx", one / "resnet18_r32.onnx");
  // A 1×7 conv: measured alone as the 3×3 of its config, and counted for 7/9 of it, as its prediction is.
  networks::LayerBuilder rect("rect");
  rect.output(rect.relu(rect.conv_rect(rect.input("x", {1, 16, 17, 17}), 16, 1, 7)));
  rect.save(one / "rect.onnx");
  const auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"evaluate", "--predictor", predictor().string(), "--onnx", one.string(), "--config",
                                     quick().string(), "--work-dir", (work / "k").string(), "--repeats", "2", "--kernels"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, home());
  };
  const CliResult r = run({"--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  ASSERT_TRUE(doc["kernels"].is_array());
  const size_t n = doc["kernels"].size();
  ASSERT_GT(n, 3u) << doc["kernels"].dump();
  const std::set<std::string> known = {"conv-bn-relu", "dwconv-bn-relu", "fc", "global-avgpool", "add", "relu"};
  std::map<std::string, size_t> configs_by_type;
  for (const Json& k : doc["kernels"]) {
    EXPECT_TRUE(known.count(k["kernel"].get<std::string>())) << k.dump();
    EXPECT_GE(k["uses"].get<size_t>(), 1u);
    ASSERT_EQ(k["repeats_ms"].size(), 2u) << k.dump();
    const double measured = k["measured_ms"].get<double>();
    EXPECT_DOUBLE_EQ(measured, std::min(k["repeats_ms"][0].get<double>(), k["repeats_ms"][1].get<double>()));
    EXPECT_NEAR(k["error"].get<double>(), k["predicted_ms"].get<double>() / measured - 1, 1e-12);
    EXPECT_TRUE(fs::exists(work / "k" / "kernels" / (k["id"].get<std::string>() + ".onnx"))) << k["id"];
    ++configs_by_type[k["kernel"].get<std::string>()];
  }
  for (const auto& [type, count] : configs_by_type) EXPECT_EQ(doc["by_kernel_type"][type]["configs"], count) << type;
  EXPECT_EQ(doc["by_kernel_type"].size(), configs_by_type.size());

  std::map<std::string, const Json*> kernel_by_id;
  for (const Json& k : doc["kernels"]) kernel_by_id[k["id"].get<std::string>()] = &k;
  ASSERT_EQ(doc["models"].size(), 2u);
  size_t non_square = 0;
  for (const Json& m : doc["models"]) {
    const double kernels_measured = m["kernels_measured_ms"].get<double>();
    const double kernels_predicted = m["kernels_predicted_ms"].get<double>();
    EXPECT_LE(kernels_predicted, m["predicted_ms"].get<double>() * (1 + 1e-9));
    EXPECT_NEAR(m["predictor_error"].get<double>(), kernels_predicted / kernels_measured - 1, 1e-12);
    EXPECT_NEAR(m["composition_error"].get<double>(), kernels_measured / m["measured_ms"].get<double>() - 1, 1e-12);
    // Each use names its kernel: the model's split adds up from the kernel list.
    double uses_measured = 0, uses_predicted = 0;
    for (const Json& u : m["kernel_uses"]) {
      ASSERT_TRUE(kernel_by_id.count(u["id"].get<std::string>())) << u.dump();
      const Json& k = *kernel_by_id[u["id"].get<std::string>()];
      const double copies = u["groups"].get<double>() * u.value("work", 1.0);
      uses_measured += k["measured_ms"].get<double>() * copies;
      uses_predicted += u["predicted_ms"].get<double>();
      // The kernel's own prediction is its config's, the one measured alone.
      EXPECT_NEAR(k["predicted_ms"].get<double>() * copies, u["predicted_ms"].get<double>(), 1e-9 * k["predicted_ms"].get<double>());
      if (u.contains("work")) {
        ++non_square;
        EXPECT_DOUBLE_EQ(u["work"].get<double>(), 7.0 / 9) << u.dump();
        EXPECT_EQ(k["config"]["KERNEL_SIZE"], 3) << k.dump();
      }
    }
    EXPECT_NEAR(uses_measured, kernels_measured, 1e-9 * kernels_measured);
    EXPECT_NEAR(uses_predicted, kernels_predicted, 1e-9 * kernels_predicted);
  }
  EXPECT_EQ(non_square, 1u);
  EXPECT_EQ(count_lines(work / "k" / "kernels.csv"), n + 1);
  EXPECT_EQ(count_lines(work / "k" / "journal.jsonl"), 2 * (n + 2));

  // The rerun measures nothing and prints the split in the terminal table.
  const CliResult again = run({});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(count_lines(work / "k" / "journal.jsonl"), 2 * (n + 2));
  EXPECT_TRUE(contains(again.out, "Where the error comes from (every kernel also measured alone, " + std::to_string(n) +
                                      " distinct, 2 repeats each)")) << again.out;
  EXPECT_TRUE(contains(again.out, "mean over 2 models: kernel predictors ")) << again.out;
  // The split's identity holds for the plain sum of kernels; a composition term multiplies the sum after it.
  EXPECT_TRUE(contains(again.out, doc.contains("composition") ? "(the plain sum of kernels = measured × (1 + predictors)"
                                                              : "(prediction = measured × (1 + predictors)"))
      << again.out;

  // More kernel repeats than model repeats: only each kernel's third repeat is measured, the models keep theirs.
  const CliResult more = run({"--kernel-repeats", "3", "--json"});
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_EQ(count_lines(work / "k" / "journal.jsonl"), 2 * (n + 2) + n);
  const Json three = Json::parse(more.out);
  EXPECT_EQ(three["kernel_repeats"], 3);
  EXPECT_EQ(three["protocol"]["repeats"], 2);
  EXPECT_EQ(three["models"][0]["repeats_ms"].size(), 2u);
  for (const Json& k : three["kernels"]) EXPECT_EQ(k["repeats_ms"].size(), 3u) << k.dump();
}

// Without --kernel-repeats a kernel is measured as the predictor's samples were: the REPEATS its file records,
// whatever --repeats says for the models. Out of range is refused before anything is measured.
TEST_F(EvaluateCli, KernelsAreMeasuredWithTheRepeatsOfThePredictorsSamples) {
  const fs::path recorded = work / "recorded";
  fs::copy(predictor(), recorded, fs::copy_options::recursive);
  Json description = io::load_json_file(recorded / "predictor.json");
  description["backend"]["config"] = {{"REPEATS", 3}};
  io::save_json_file(recorded / "predictor.json", description);
  const fs::path one = work / "one";
  fs::create_directories(one);
  fs::copy_file(models() / "mobilenet_v2_r32_w1.0.onnx", one / "m.onnx");
  const auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"evaluate", "--predictor", recorded.string(), "--onnx", one.string(), "--config",
                                     quick().string(), "--work-dir", (work / "r").string(), "--repeats", "1", "--kernels",
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, home());
  };
  for (const std::string bad : {"0", "101", "x"}) {
    const CliResult r = run({"--kernel-repeats", bad});
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_TRUE(contains(r.err, "--kernel-repeats")) << r.err;
    EXPECT_FALSE(fs::exists(work / "r" / "journal.jsonl")) << bad;
  }
  const CliResult alone = run_cli({"evaluate", "--predictor", recorded.string(), "--onnx", one.string(), "--work-dir",
                                   (work / "r").string(), "--kernel-repeats", "2"},
                                  home());
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_TRUE(contains(alone.err, "--kernel-repeats is for the kernels measured alone: give --kernels too")) << alone.err;
  EXPECT_FALSE(fs::exists(work / "r" / "journal.jsonl"));
  const CliResult r = run({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  EXPECT_EQ(doc["kernel_repeats"], 3);
  EXPECT_EQ(doc["models"][0]["repeats_ms"].size(), 1u);
  ASSERT_FALSE(doc["kernels"].empty());
  for (const Json& k : doc["kernels"]) EXPECT_EQ(k["repeats_ms"].size(), 3u) << k.dump();
}

// calibrate measures like evaluate (one journal, nothing measured twice), fits the composition term and writes it
// into the predictor folder (not with --dry-run); evaluate then predicts with the term and also scores the plain
// sum of kernels on the same measurements.
TEST_F(EvaluateCli, CalibrateFitsTheCompositionAndEvaluateUsesIt) {
  const fs::path folder = work / "pred", cal = work / "cal", dir = work / "c";
  fs::copy(predictor(), folder, fs::copy_options::recursive);
  fs::create_directories(cal);
  for (const char* name : {"mobilenet_v2_r32_w1.0.onnx", "resnet18_r32.onnx"}) fs::copy_file(models() / name, cal / name);
  write_text(cal / "mobilenet_v1_r32.onnx", networks::build("mobilenet_v1", 32).model.SerializeAsString());
  const auto run = [&](const std::string& command, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {command, "--predictor", folder.string(), "--onnx", cal.string(), "--config",
                                     quick().string(), "--work-dir", dir.string(), "--repeats", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, home());
  };
  const CliResult dry = run("calibrate", {"--dry-run", "--json"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_FALSE(fs::exists(folder / kCompositionFile));
  const Json d = Json::parse(dry.out);
  EXPECT_TRUE(d["file"].is_null());
  EXPECT_EQ(d["kernel_sum"]["models"], 3);
  EXPECT_EQ(d["held_out_families"]["models"], 3);
  EXPECT_EQ(count_lines(dir / "journal.jsonl"), 6u);
  // Both forms are fitted (the networks end in fc); the one kept predicts the held-out families better.
  const Json& forms = d["composition"]["calibration"]["forms"];
  ASSERT_EQ(forms.size(), 2u) << forms.dump();
  EXPECT_EQ(forms[0]["unscaled_kernels"], Json::array());
  EXPECT_EQ(forms[1]["unscaled_kernels"], Json::array({"fc"}));
  const Json& kept = d["composition"]["unscaled_kernels"];
  const Json& other = forms[kept == forms[0]["unscaled_kernels"] ? 1 : 0];
  EXPECT_LE(d["held_out_families"]["rmspe"].get<double>(), other["held_out_families"]["rmspe"].get<double>());
  // Three networks fit the constant only: the geometric mean of (measured - unscaled) / (Σ kernels - unscaled).
  const auto unscaled = [&](const Json& m) { return kept.empty() ? 0.0 : m["kernels_ms_by_type"]["fc"].get<double>(); };
  double log_sum = 0;
  for (const Json& m : d["evaluation"]["models"]) {
    EXPECT_GT(m["footprint_mb"].get<double>(), 0) << m.dump();
    EXPECT_GT(m["kernels_ms_by_type"]["fc"].get<double>(), 0) << m.dump();
    // The same kernels by kernel as detected (the neighbours' mix): the sum again.
    double by_kernel = 0;
    for (const auto& [kernel, ms] : m["kernels_ms_by_kernel"].items()) by_kernel += ms.get<double>();
    EXPECT_NEAR(by_kernel, m["kernels_ms"].get<double>(), 1e-9 * by_kernel) << m.dump();
    log_sum += std::log((m["measured_ms"].get<double>() - unscaled(m)) / (m["kernels_ms"].get<double>() - unscaled(m)));
  }
  EXPECT_EQ(d["composition"]["c1"], 0);
  EXPECT_NEAR(d["composition"]["c0"].get<double>(), log_sum / 3, 1e-9);

  const CliResult r = run("calibrate", {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_lines(dir / "journal.jsonl"), 6u);
  ASSERT_TRUE(fs::exists(folder / kCompositionFile));
  const Json written = Json::parse(read_text(folder / kCompositionFile));
  EXPECT_NEAR(written["c0"].get<double>(), log_sum / 3, 1e-9);
  EXPECT_EQ(written["calibration"]["models"], 3);
  EXPECT_EQ(written["calibration"]["backend"], "onednn_cpu");
  EXPECT_EQ(written["unscaled_kernels"], kept);
  for (const std::string& line : std::vector<std::string>{"composition: x", "sum of kernels:", "with the term (in sample):", "each family held out:",
                           kept.empty() ? "not kept, fc unscaled: each family held out RMSPE" : "not kept, every kernel scaled: each family held out RMSPE",
                           "written to " + (folder / kCompositionFile).string()})
    EXPECT_TRUE(contains(r.out, line)) << line << "\n" << r.out;

  // evaluate now predicts unscaled + (Σ kernels - unscaled) × the factor, on the measurements already taken.
  const CliResult e = run("evaluate", {"--json"});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(count_lines(dir / "journal.jsonl"), 6u);
  const Json doc = Json::parse(e.out);
  ASSERT_TRUE(doc["composition"].is_object()) << e.out;
  EXPECT_EQ(doc["kernel_sum_summary"]["models"], 3);
  for (const Json& m : doc["models"])
    EXPECT_NEAR(m["predicted_ms"].get<double>(), unscaled(m) + (m["kernels_ms"].get<double>() - unscaled(m)) * std::exp(log_sum / 3),
                1e-9 * m["predicted_ms"].get<double>());
  EXPECT_TRUE(contains(run("evaluate", {}).out, "the plain sum of kernels scores RMSPE"));
  EXPECT_TRUE(contains(read_text(dir / "report.html"), "<tr><td>plain sum of kernels</td>"));

  const CliResult none = run_cli({"calibrate", "--predictor", folder.string(), "--onnx",
                                  (models() / "zz_broken.onnx").string(), "--work-dir", (work / "none").string()},
                                 home());
  EXPECT_NE(none.exit_code, 0);
  EXPECT_TRUE(contains(none.err, "nothing to calibrate on")) << none.err;
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;
}

// calibrate --refresh: a later day's networks move the calibrated predictor's level by the median of measured /
// predicted, composition.json (format 3) carries it, evaluate and predict multiply by it, and a second refresh on
// the same measurements moves nothing. Without a calibrated term it says what to run first.
TEST_F(EvaluateCli, RefreshRelevelsACalibratedPredictor) {
  const fs::path folder = work / "pred", dir = work / "r";
  fs::copy(predictor(), folder, fs::copy_options::recursive);
  const auto refresh = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"calibrate", "--refresh", "--predictor", folder.string(), "--onnx", models().string(),
                                     "--config", quick().string(), "--work-dir", dir.string(), "--repeats", "2", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args, home());
  };
  const CliResult uncalibrated = refresh({});
  EXPECT_NE(uncalibrated.exit_code, 0);
  EXPECT_TRUE(contains(uncalibrated.err, "has no composition term")) << uncalibrated.err;
  EXPECT_TRUE(contains(uncalibrated.err, "nn-meter calibrate without --refresh")) << uncalibrated.err;
  EXPECT_EQ(std::count(uncalibrated.err.begin(), uncalibrated.err.end(), '\n'), 1) << uncalibrated.err;

  // A term that halves every prediction: the machine looks twice as slow as the predictor says.
  CompositionModel half;
  half.c0 = std::log(0.5);
  half.footprint_min_mb = 0.01;
  half.footprint_max_mb = 1000;
  write_text(folder / kCompositionFile, half.to_json().dump());
  const std::string original = read_text(folder / kCompositionFile);

  const CliResult dry = refresh({"--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(read_text(folder / kCompositionFile), original);
  const Json d = Json::parse(dry.out);
  std::vector<double> ratios;
  for (const Json& m : d["evaluation"]["models"])
    if (m["measured_ms"].is_number() && m["predicted_ms"].is_number())
      ratios.push_back(m["measured_ms"].get<double>() / m["predicted_ms"].get<double>());
  ASSERT_EQ(ratios.size(), 2u) << dry.out;  // the broken model is neither
  const double median = (ratios[0] + ratios[1]) / 2;
  EXPECT_NEAR(d["level"].get<double>(), median, 1e-12 * median);
  EXPECT_LT(std::abs(d["after"]["mean_error"].get<double>()), std::abs(d["before"]["mean_error"].get<double>()));

  const CliResult r = refresh({});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json written = Json::parse(read_text(folder / kCompositionFile));
  EXPECT_EQ(written["format_version"], 3);
  EXPECT_NEAR(written["level"].get<double>(), median, 1e-12 * median);
  EXPECT_EQ(written["relevel"]["networks"], 2);
  EXPECT_DOUBLE_EQ(written["c0"].get<double>(), half.c0) << "the term is not refitted";

  // evaluate on the same measurements predicts with the level.
  const CliResult e = run_cli({"evaluate", "--predictor", folder.string(), "--onnx", models().string(), "--config",
                               quick().string(), "--work-dir", dir.string(), "--repeats", "2", "--json"},
                              home());
  ASSERT_EQ(e.exit_code, 0) << e.err;
  std::map<std::string, double> before;
  for (const Json& m : d["evaluation"]["models"])
    if (m["predicted_ms"].is_number()) before[m["model"].get<std::string>()] = m["predicted_ms"].get<double>();
  const Json levelled = Json::parse(e.out);
  for (const Json& m : levelled["models"]) {
    if (!m["predicted_ms"].is_number()) continue;
    const double was = before.at(m["model"].get<std::string>());
    EXPECT_NEAR(m["predicted_ms"].get<double>(), was * median, 1e-9 * median * was) << m.dump();
  }
  // The same measurements again: the level is where they put it already.
  const CliResult again = refresh({});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NEAR(Json::parse(read_text(folder / kCompositionFile))["level"].get<double>(), median, 1e-9 * median);
}

// evaluate --calibrate-on: the calibration networks measured in one shuffled order with the evaluated ones
// (one journal), the term fitted on them as calibrate fits it and the evaluated models predicted with it; the
// predictor folder stays as it is and the term lands in the work dir. calibrate on a copy of that journal
// fits the same term without measuring anything.
TEST_F(EvaluateCli, CalibrateOnFitsTheTermInTheSameOrderAndPredictsWithIt) {
  const fs::path folder = work / "pred", cal = work / "cal", eval = work / "eval_models", dir = work / "one";
  fs::copy(predictor(), folder, fs::copy_options::recursive);
  fs::create_directories(cal);
  fs::create_directories(eval);
  for (const char* name : {"mobilenet_v2_r32_w1.0.onnx", "resnet18_r32.onnx"}) fs::copy_file(models() / name, cal / name);
  write_text(cal / "mobilenet_v1_r32.onnx", networks::build("mobilenet_v1", 32).model.SerializeAsString());
  write_text(eval / "mobilenet_v2_r40.onnx", networks::build("mobilenet_v2", 40).model.SerializeAsString());
  const auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--predictor", folder.string(), "--config", quick().string(), "--repeats", "2"};
    args.insert(args.begin(), extra.begin(), extra.end());
    return run_cli(args, home());
  };
  const CliResult r = run({"evaluate", "--onnx", eval.string(), "--calibrate-on", cal.string(), "--work-dir",
                           dir.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_lines(dir / "journal.jsonl"), 8u);  // 4 networks × 2 repeats, one order
  EXPECT_FALSE(fs::exists(folder / kCompositionFile));
  const Json doc = Json::parse(r.out);
  ASSERT_EQ(doc["models"].size(), 1u);
  EXPECT_EQ(doc["summary"]["models"], 1);
  ASSERT_EQ(doc["calibration_models"].size(), 3u);
  for (const Json& m : doc["calibration_models"]) EXPECT_GT(m["measured_ms"].get<double>(), 0) << m.dump();
  const Json& term = doc["composition"];
  EXPECT_EQ(term["calibration"]["models"], 3);
  EXPECT_EQ(term["calibration"]["fit"]["method"], "least_squares");  // 3 networks: too few to call one an outlier
  EXPECT_EQ(term["calibration"]["forms"].size(), 2u);
  EXPECT_EQ(Json::parse(read_text(dir / kCompositionFile)), term);
  EXPECT_EQ(doc["files"]["composition"], (dir / kCompositionFile).string());
  EXPECT_EQ(doc["kernel_sum_summary"]["models"], 1);
  const Json& m = doc["models"][0];
  const double u = term["unscaled_kernels"].empty() ? 0.0 : m["kernels_ms_by_type"]["fc"].get<double>();
  EXPECT_NEAR(m["predicted_ms"].get<double>(),
              u + (m["kernels_ms"].get<double>() - u) * std::exp(term["c0"].get<double>()),  // 3 networks: no slope
              1e-9 * m["predicted_ms"].get<double>());

  // The three-step recipe on a copy of the journal: the same term, nothing measured.
  fs::create_directories(work / "two");
  fs::copy_file(dir / "journal.jsonl", work / "two" / "journal.jsonl");
  const CliResult c = run({"calibrate", "--onnx", cal.string(), "--work-dir", (work / "two").string(), "--dry-run", "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(count_lines(work / "two" / "journal.jsonl"), 8u);
  const Json fitted = Json::parse(c.out)["composition"];
  EXPECT_DOUBLE_EQ(fitted["c0"].get<double>(), term["c0"].get<double>());
  EXPECT_EQ(fitted["unscaled_kernels"], term["unscaled_kernels"]);

  const CliResult table = run({"evaluate", "--onnx", eval.string(), "--calibrate-on", cal.string(), "--work-dir", dir.string()});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(count_lines(dir / "journal.jsonl"), 8u);
  for (const std::string line : {"with the composition fitted on the 3 networks of --calibrate-on, measured in the same order",
                                 "; least squares)",
                                 "on each of their families held out it scores RMSPE", "without it, the plain sum of kernels scores"})
    EXPECT_TRUE(contains(table.out, line)) << line << "\n" << table.out;
  EXPECT_TRUE(contains(read_text(dir / "report.html"), "composition fitted on the 3 networks of --calibrate-on"));
  EXPECT_FALSE(doc.contains("own_composition_summary"));  // the predictor had no term of its own

  // A predictor calibrated by its build is also scored with its own term, as predict gives it: here that term is
  // the one just fitted, so both score alike; nothing is measured again.
  fs::copy_file(dir / kCompositionFile, folder / kCompositionFile);
  const CliResult own = run({"evaluate", "--onnx", eval.string(), "--calibrate-on", cal.string(), "--work-dir",
                             dir.string(), "--json"});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(count_lines(dir / "journal.jsonl"), 8u);
  const Json own_doc = Json::parse(own.out);
  ASSERT_TRUE(own_doc.contains("own_composition_summary")) << own.out;
  EXPECT_EQ(own_doc["own_composition_summary"]["models"], 1);
  EXPECT_NEAR(own_doc["own_composition_summary"]["rmspe"].get<double>(), own_doc["summary"]["rmspe"].get<double>(), 1e-9);
  EXPECT_NE(own_doc["own_composition_summary"]["rmspe"], own_doc["kernel_sum_summary"]["rmspe"]);
  const CliResult own_table = run({"evaluate", "--onnx", eval.string(), "--calibrate-on", cal.string(), "--work-dir", dir.string()});
  EXPECT_TRUE(contains(own_table.out, "with the predictor's own composition, fitted when it was built, as predict gives them: RMSPE"))
      << own_table.out;
  // What to do about the difference: calibrating again on networks measured now, or re-levelling from a few.
  EXPECT_TRUE(contains(own_table.out, "nn-meter calibrate on networks measured now")) << own_table.out;
  EXPECT_TRUE(contains(own_table.out, "calibrate --refresh re-levels it from a few")) << own_table.out;
  EXPECT_TRUE(contains(read_text(dir / "report.html"), "<tr><td>predictor's own composition</td>"));
  fs::remove(folder / kCompositionFile);

  // A network both evaluated and calibrated on, or a missing folder: one line, nothing measured.
  for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"evaluate", "--onnx", (cal / "resnet18_r32.onnx").string(), "--calibrate-on", cal.string(), "--work-dir",
             (work / "both").string()},
            "resnet18_r32 is both evaluated (--onnx) and calibrated on (--calibrate-on)"},
           {{"evaluate", "--onnx", eval.string(), "--calibrate-on", (work / "ghost").string(), "--work-dir",
             (work / "ghost_run").string()},
            "--calibrate-on " + (work / "ghost").string() + " does not exist"}}) {
    const CliResult bad = run(args);
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_TRUE(contains(bad.err, expected)) << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
  }
  EXPECT_FALSE(fs::exists(work / "both" / "journal.jsonl"));
}

TEST_F(EvaluateCli, BadInputIsOneLine) {
  for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"evaluate", "--predictor", "ghost", "--onnx", models().string()}, "ghost"},
           {{"evaluate", "--predictor", predictor().string(), "--onnx", (work / "none").string()}, "does not exist"},
           {{"evaluate", "--predictor", predictor().string(), "--onnx", models().string(), "--repeats", "1000"},
            "REPEATS must be an integer from 1 to 100"},
           {{"evaluate", "--predictor", predictor().string(), "--onnx", models().string(), "--backend", "nope"},
            "unknown backend 'nope'"}}) {
    const CliResult r = run_cli(args, home());
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_TRUE(contains(r.err, expected)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// File names are any bytes and a model's names may not be UTF-8: evaluate names and skips the models it cannot
// read or send to its worker (JSON), scores the rest, and its journal, results and --json stay whole.
TEST_F(EvaluateCli, NamesThatAreNotUtf8AreSkippedOrReplacedNeverAJsonException) {
  const std::string odd = std::string("net") + static_cast<char>(0xff);
  const fs::path dir = work / "odd";
  fs::create_directories(dir);
  write_text(dir / (odd + ".onnx"), networks::build("resnet18", 32).model.SerializeAsString());
  onnx::ModelProto named = networks::build("mobilenet_v2", 32).model;
  named.mutable_graph()->mutable_node(0)->set_name(odd);
  write_text(dir / "named.onnx", named.SerializeAsString());
  write_text(dir / "plain.onnx", networks::build("resnet18", 32).model.SerializeAsString());
  const CliResult r = run_cli({"--json", "evaluate", "--predictor", predictor().string(), "--onnx", dir.string(), "--config",
                               quick().string(), "--work-dir", (work / "eval").string(), "--repeats", "1"},
                              home());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json doc = Json::parse(r.out);
  std::map<std::string, Json> by_name;
  for (const auto& m : doc["models"]) by_name[m["model"].get<std::string>()] = m;
  ASSERT_TRUE(by_name.count("net\ufffd")) << doc["models"].dump();
  EXPECT_TRUE(contains(by_name["net\ufffd"]["failure"].get<std::string>(), "is not UTF-8 text: rename it"))
      << by_name["net\ufffd"].dump();
  ASSERT_TRUE(by_name.count("named"));
  EXPECT_TRUE(contains(by_name["named"]["failure"].get<std::string>(), "node name \"net\ufffd\" is not UTF-8 text"))
      << by_name["named"].dump();
  EXPECT_TRUE(contains(read_text(work / "eval" / "results.csv"), "net\ufffd,"));
  EXPECT_GT(by_name.at("plain")["measured_ms"].get<double>(), 0);
}

TEST_F(EvaluateCli, NothingScoredIsAnErrorAfterTheReport) {
  const CliResult r = run_cli({"evaluate", "--predictor", predictor().string(), "--onnx",
                               (models() / "zz_broken.onnx").string(), "--work-dir", (work / "none").string()},
                              home());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "none of the 1 models could be both predicted and measured")) << r.err;
  EXPECT_TRUE(contains(read_text(work / "none" / "results.csv"), "zz_broken,zz_broken,,,,,,,,\"prediction failed"));
  EXPECT_TRUE(fs::exists(work / "none" / "report.html"));
}

// The choice between composition forms, on networks whose measurements follow one form exactly: each form is
// fitted, the one that predicts each held-out family better is kept, a form that cannot be fitted is recorded
// and skipped, and without 3 families every kernel is scaled.
ModelEvaluation network(const std::string& family, double footprint_mb, double kernels_ms, double fc_ms, double measured_ms) {
  ModelEvaluation m;
  m.name = family + "_r224_w1";
  m.family = family;
  m.kernels_ms = kernels_ms;
  m.footprint_mb = footprint_mb;
  m.kernels_ms_by_type = {{"conv-bn-relu", kernels_ms - fc_ms}, {"fc", fc_ms}};
  m.measured_ms = m.predicted_ms = measured_ms;
  return m;
}

TEST(CompositionForms, TheFormThatPredictsHeldOutFamiliesBetterIsKept) {
  EvaluateReport measured;
  measured.backend = "onednn_cpu";
  const auto truth = [](double f, double kernels, double fc, bool fc_unscaled) {
    const double factor = std::exp(-0.1 + 0.04 * std::log(f));
    return fc_unscaled ? fc + (kernels - fc) * factor : kernels * factor;
  };
  for (const bool fc_unscaled : {true, false}) {
    std::vector<ModelEvaluation> models;
    const std::vector<std::tuple<const char*, double, double, double>> rows = {
        {"alexnet", 250, 12, 6}, {"vgg", 140, 7, 5}, {"resnet", 80, 18, 0.1}, {"mobilenet", 20, 2, 0.2}, {"densenet", 60, 6, 0.1}};
    for (const auto& [family, f, kernels, fc] : rows) models.push_back(network(family, f, kernels, fc, truth(f, kernels, fc, fc_unscaled)));
    const CompositionFit fit = fit_composition_forms(models, measured, "x");
    EXPECT_EQ(fit.composition.unscaled_kernels, fc_unscaled ? std::set<std::string>{"fc"} : std::set<std::string>{});
    EXPECT_NEAR(fit.composition.c1, 0.04, 1e-9) << fc_unscaled;
    // Held out, the extreme footprints fall outside the others' range (clamped), so neither form is exact there.
    ASSERT_TRUE(fit.held_out_families);
    const Json& forms = fit.composition.calibration["forms"];
    ASSERT_EQ(forms.size(), 2u);
    EXPECT_LT(fit.held_out_families->rmspe, forms[fc_unscaled ? 0 : 1]["held_out_families"]["rmspe"].get<double>());
    EXPECT_NEAR(fit.after.rmspe, 0, 1e-6);  // in sample the true form is exact
  }

  // fc taking all of one network's measured time: that form is not fitted, every kernel is scaled.
  std::vector<ModelEvaluation> models = {network("a", 20, 2, 0.1, 2.1), network("b", 60, 5, 5.5, 5.4),
                                         network("c", 200, 9, 0.2, 9.9)};
  const CompositionFit fit = fit_composition_forms(models, measured, "x");
  EXPECT_TRUE(fit.composition.unscaled_kernels.empty());
  EXPECT_TRUE(contains(fit.composition.calibration["forms"][1]["not_fitted"].get<std::string>(), "nothing left to scale"));

  // Two families: no held-out evidence, every kernel scaled although fc unscaled fits these exactly.
  models = {network("a", 20, 2, 1, truth(20, 2, 1, true)), network("b", 200, 9, 4, truth(200, 9, 4, true))};
  EXPECT_TRUE(fit_composition_forms(models, measured, "x").composition.unscaled_kernels.empty());
  // Nothing measured: one error naming where to look.
  models[0].measured_ms.reset();
  models[1].measured_ms.reset();
  EXPECT_TRUE(contains(error_of([&] { fit_composition_forms(models, measured, "results.csv"); }),
                       "none of the 2 models could be both predicted and measured, nothing to calibrate on: see results.csv"));
}

// A kernel cost is a form of its own: kept where families held out say so (networks whose kernels alone each
// carry a fixed cost), fitted from 8 networks of 3 families on, recorded with the others.
TEST(CompositionForms, AKernelCostIsKeptWhenHeldOutFamiliesSaySo) {
  EvaluateReport measured;
  measured.backend = "onednn_cpu";
  std::vector<ModelEvaluation> models;
  // Each family's mean kernel: many small ones in EfficientNet, few large ones in ResNet.
  const std::vector<std::tuple<const char*, double>> families = {{"efficientnet", 0.009}, {"mobilenet", 0.02}, {"resnet", 0.06}};
  for (const auto& [family, mean_kernel_ms] : families)
    for (int i = 0; i < 4; ++i) {
      const double f = 10.0 * std::pow(2.0, i), kernels = 0.5 + f / 20, count = kernels / mean_kernel_ms;
      ModelEvaluation m = network(family, f, kernels, 0, (kernels - 0.004 * count) * std::exp(-0.05 + 0.03 * std::log(f)));
      m.name = fmt::format("{}_r{}", family, 96 + 32 * i);
      m.kernels_ms_by_type.erase("fc");
      m.kernel_count_by_type = {{"conv-bn-relu", count}};
      models.push_back(std::move(m));
    }
  const CompositionFit fit = fit_composition_forms(models, measured, "x");
  EXPECT_NEAR(fit.composition.kernel_cost_ms, 0.004, 1e-5);
  EXPECT_EQ(fit.composition.calibration["form"], "every kernel scaled, a kernel cost");
  const Json& forms = fit.composition.calibration["forms"];
  ASSERT_EQ(forms.size(), 2u) << forms.dump();  // no fc in these networks
  EXPECT_EQ(forms[1]["kernel_cost"], true);
  EXPECT_NEAR(forms[1]["kernel_cost_ms"].get<double>(), 0.004, 1e-5);
  ASSERT_TRUE(fit.held_out_families);
  EXPECT_LT(fit.held_out_families->rmspe, 0.01);
  EXPECT_GT(forms[0]["held_out_families"]["rmspe"].get<double>(), 1);
  EXPECT_NEAR(fit.after.rmspe, 0, 1e-3);
  // Every network's prediction takes the cost off its kernels.
  const ModelEvaluation& e = models.front();
  EXPECT_NEAR(*e.predicted_with(fit.composition), *e.measured_ms, 1e-4 * *e.measured_ms);

  // Under 8 networks: no cost form is tried.
  models.resize(7);
  const Json few = fit_composition_forms(models, measured, "x").composition.calibration["forms"];
  ASSERT_EQ(few.size(), 1u) << few.dump();
  EXPECT_EQ(few[0]["kernel_cost"], false);
}

// Kernel scales are a form of their own: kept where families held out say so (networks whose depthwise convs run
// slower inside them than alone and dense convs a little faster, each family its own mix of the two), tried from
// 20 networks on.
TEST(CompositionForms, KernelScalesAreKeptWhenHeldOutFamiliesSaySo) {
  EvaluateReport measured;
  measured.backend = "onednn_cpu";
  std::vector<ModelEvaluation> models;
  const std::vector<std::tuple<const char*, double>> families = {
      {"resnet", 0.05}, {"mobilenet", 0.6}, {"mnasnet", 0.4}, {"efficientnet", 0.3}};  // dwconv's share
  for (const auto& [family, dw_share] : families)
    for (int i = 0; i < 6; ++i) {
      const double f = 10.0 * std::pow(1.5, i), kernels = 0.5 + f / 20, dw = dw_share * kernels, count = kernels / 0.03;
      const double measured_ms = (1.3 * dw + 0.95 * (kernels - dw) - 0.002 * count) * std::exp(-0.05 + 0.03 * std::log(f));
      ModelEvaluation m = network(family, f, kernels, 0, measured_ms);
      m.name = fmt::format("{}_r{}", family, 96 + 32 * i);
      m.kernels_ms_by_type = {{"conv-bn-relu", kernels - dw}, {"dwconv-bn-relu", dw}};
      m.kernel_count_by_type = {{"conv-bn-relu", count / 2}, {"dwconv-bn-relu", count / 2}};
      models.push_back(std::move(m));
    }
  const CompositionFit fit = fit_composition_forms(models, measured, "x");
  EXPECT_EQ(fit.composition.calibration["form"], "every kernel scaled, a kernel cost, kernel scales");
  ASSERT_EQ(fit.composition.kernel_scales.size(), 2u);
  EXPECT_NEAR(fit.composition.kernel_scales.at("dwconv-bn-relu") / fit.composition.kernel_scales.at("conv-bn-relu"),
              1.3 / 0.95, 0.05);
  const Json& forms = fit.composition.calibration["forms"];
  ASSERT_EQ(forms.size(), 3u) << forms.dump();  // no fc in these networks
  EXPECT_EQ(forms[2]["kernel_scale_ridge"], 1e-3);
  ASSERT_TRUE(fit.held_out_families);
  EXPECT_LT(fit.held_out_families->rmspe, 0.5 * forms[1]["held_out_families"]["rmspe"].get<double>());
  // Every network's prediction scales its types apart.
  const ModelEvaluation& e = models[6];  // a mobilenet
  EXPECT_NEAR(*e.predicted_with(fit.composition), *e.measured_ms, 0.01 * *e.measured_ms);

  // Under 20 networks: the form is not tried.
  models.resize(19);
  EXPECT_EQ(fit_composition_forms(models, measured, "x").composition.calibration["forms"].size(), 2u);
}

// The neighbours' correction on networks whose families run off the footprint's line, each by its own factor:
// kept, it predicts a network of a family at a size it was not calibrated on, families told apart by their
// kernels as detected (EfficientNet's swish convs predicted by the relu regressors, as MobileNet's are); on
// networks the term fits exactly, or fewer than 10, none is kept.
TEST(CompositionForms, NeighboursAreKeptWhenTheyPredictNetworksHeldOutBetter) {
  EvaluateReport measured;
  measured.backend = "onednn_cpu";
  struct Family {
    const char* name;
    std::map<std::string, double> mix;  // by kernel as detected
    double offset;
    std::map<std::string, std::string> regressor = {};  // kernel → the predictor kernel standing in for it
  };
  const std::vector<Family> families = {
      {"resnet", {{"conv-bn-relu", 0.9}, {"add", 0.1}}, 1.08},
      {"mobilenet", {{"conv-bn-relu", 0.6}, {"dwconv-bn-relu", 0.4}}, 0.93},
      {"densenet", {{"conv-bn-relu", 0.7}, {"concat", 0.3}}, 1.0},
      {"efficientnet", {{"conv-swish", 0.6}, {"dwconv-swish", 0.4}}, 1.15,
       {{"conv-swish", "conv-bn-relu"}, {"dwconv-swish", "dwconv-bn-relu"}}}};
  const auto make = [&](const Family& f, double size, bool offsets) {
    ModelEvaluation m;
    m.name = fmt::format("{}_r{}_w1", f.name, static_cast<int>(size));
    m.family = f.name;
    m.kernels_ms = size / 20;
    m.footprint_mb = size / 2;
    for (const auto& [kernel, share] : f.mix) {
      m.kernels_ms_by_kernel[kernel] = share * *m.kernels_ms;
      m.kernels_ms_by_type[f.regressor.count(kernel) ? f.regressor.at(kernel) : kernel] = share * *m.kernels_ms;
    }
    // The footprint's line, each family off it by its factor, and ±1 % of measurement noise.
    const double noise = 1 + 0.01 * std::sin(size);
    m.measured_ms = m.predicted_ms = *m.kernels_ms * std::exp(-0.05 + 0.02 * std::log(*m.footprint_mb)) *
                                     (offsets ? f.offset : 1.0) * noise;
    return m;
  };
  std::vector<ModelEvaluation> models;
  for (const auto& f : families)
    for (double size : {96, 128, 160, 192, 224}) models.push_back(make(f, size, true));
  const CompositionFit fit = fit_composition_forms(models, measured, "x");
  const NeighbourCorrection& n = fit.composition.neighbours;
  ASSERT_GT(n.k, 0);
  EXPECT_EQ(n.networks.size(), models.size());
  ASSERT_TRUE(fit.network_out && fit.network_out_term);
  EXPECT_GT(fit.network_out->within5, fit.network_out_term->within5);
  EXPECT_EQ(fit.network_out_ms.size(), models.size());
  EXPECT_EQ(fit.composition.calibration["neighbours"]["k"], n.k);
  EXPECT_EQ(fit.composition.to_json()["format_version"], 6);
  for (const auto& f : families) {
    const ModelEvaluation unseen = make(f, 176, true);
    EXPECT_NEAR(*unseen.predicted_with(fit.composition) / *unseen.measured_ms, 1, 0.02) << f.name;
  }

  // calibrate's table: each network's prediction held out at the end of its row, and both held-out scores.
  CalibrationReport report;
  static_cast<CompositionFit&>(report) = fit;
  report.evaluation.models = models;
  const std::string table = report.to_table();
  for (const ModelEvaluation& m : models) {
    const size_t row = table.find(m.name + " ");
    ASSERT_NE(row, std::string::npos) << m.name << "\n" << table;
    const std::string held = fmt::format(" {:+.1f}%\n", 100 * (fit.network_out_ms.at(m.name) / *m.measured_ms - 1));
    EXPECT_EQ(table.substr(table.find('\n', row) + 1 - held.size(), held.size()), held) << m.name << "\n" << table;
    // The factor is the whole term's on the network (kernel cost and scales too): factor × Σkernels = "with term".
    CompositionModel term = fit.composition;
    term.neighbours = {};
    const double with_term = *m.predicted_with(term);
    EXPECT_TRUE(contains(table.substr(row, table.find('\n', row) - row), fmt::format(" {:.3f} ", with_term / *m.kernels_ms)))
        << m.name << "\n" << table;
  }
  const auto score = [](const AccuracySummary& s) { return fmt::format("RMSPE {:.1f}%, within ±5% {:.1f}%", s.rmspe, 100 * s.within5); };
  EXPECT_TRUE(contains(table, "each network held out:     " + score(*fit.network_out_term))) << table;
  EXPECT_TRUE(contains(table, "  with its neighbours:      " + score(*fit.network_out))) << table;

  // The term alone is exact (no family off the line, no noise): nothing to correct.
  models.clear();
  for (const auto& f : families)
    for (double size : {96, 128, 160, 192, 224}) {
      ModelEvaluation m = make(f, size, false);
      m.measured_ms = *m.kernels_ms * std::exp(-0.05 + 0.02 * std::log(*m.footprint_mb));
      models.push_back(m);
    }
  const CompositionFit exact = fit_composition_forms(models, measured, "x");
  EXPECT_EQ(exact.composition.neighbours.k, 0);
  EXPECT_TRUE(exact.network_out_term && !exact.network_out);
  EXPECT_EQ(exact.composition.to_json()["format_version"], 1);

  // Fewer than 10 networks: no correction tried.
  models.resize(9);
  const CompositionFit few = fit_composition_forms(models, measured, "x");
  EXPECT_EQ(few.composition.neighbours.k, 0);
  EXPECT_FALSE(few.network_out_term);
  EXPECT_TRUE(contains(few.composition.calibration["neighbours"]["why"].get<std::string>(), "fewer than 10"));
}

// --calibrate-on networks that all fail: one line naming the flag, and the scored models' measurements stay in
// the journal.
TEST_F(EvaluateCli, CalibrateOnWithNothingUsableIsOneLine) {
  const fs::path cal = work / "cal";
  fs::create_directories(cal);
  write_text(cal / "broken.onnx", "not an onnx model");
  const CliResult r = run_cli({"evaluate", "--predictor", predictor().string(), "--onnx",
                               (models() / "resnet18_r32.onnx").string(), "--calibrate-on", cal.string(), "--config",
                               quick().string(), "--repeats", "2", "--work-dir", (work / "w").string()},
                              home());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.err, "--calibrate-on: none of the 1 models could be both predicted and measured")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(count_lines(work / "w" / "journal.jsonl"), 2u);
  EXPECT_FALSE(fs::exists(work / "w" / kCompositionFile));
}

TEST(EvaluateFamily, ArchitecturesThatShareLayersAreOneFamily) {
  EXPECT_EQ(network_family("mobilenet_v2_r224_w1.0"), "mobilenet_v2");
  EXPECT_EQ(network_family("mobilenetv2_100"), "mobilenet_v2");  // timm's spelling
  EXPECT_EQ(network_family("mobilenet_v3_large_r144_w1.0"), "mobilenet_v3");
  // ResNet-18/34/50 and the pre-activation ResNet share their convs' configs: one family.
  for (const char* stem : {"resnet18_r160", "resnet34_r176_w0.75", "resnet50", "preact_resnet18_r224_w1.0",
                           "wide_resnet50_2"})
    EXPECT_EQ(network_family(stem), "resnet") << stem;
  EXPECT_EQ(network_family("resnext50_32x4d"), "resnext");
  EXPECT_EQ(network_family("shufflenet_v1_g3_r224_w1.0"), "shufflenet");
  EXPECT_EQ(network_family("shufflenet_v2_x1_0_r144_w1.0"), "shufflenet");
  EXPECT_EQ(network_family("googlenet_r176_w0.75"), "inception");
  EXPECT_EQ(network_family("vit__d12_w384_p16_r224"), "vit");
  EXPECT_EQ(network_family("mobilevit_s"), "mobilevit");
  EXPECT_EQ(network_family("convnext__tiny_r224"), "convnext");
  // Names the table does not know: the stem without its size, or FAMILY of FAMILY__VARIANT.
  EXPECT_EQ(network_family("custom"), "custom");
  EXPECT_EQ(network_family("mynet_r160_w0.5"), "mynet");
  EXPECT_EQ(network_family("mine__deep_r224"), "mine");
  EXPECT_EQ(network_family("__odd"), "__odd");
}

// Stand-in regressors, uncounted ops and a predictor built on noise are said next to the score, and kept in the
// JSON per model.
// The interval is a prediction interval in log space from the held-out errors: Student's t with n - 1 degrees of
// freedom, the sample's spread times sqrt(1 + 1/n), the drift probes' level spread added in quadrature.
TEST(PredictionIntervalTest, IsAPredictionIntervalOfTheHeldOutErrorsInLogSpace) {
  const std::vector<double> log_ratios = {-0.1, -0.05, 0, 0.05, 0.1};  // log(measured / predicted)
  std::vector<double> errors;
  for (const double r : log_ratios) errors.push_back(std::exp(-r) - 1);
  const auto plain = PredictionInterval::estimate(errors, Json());
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->networks, 5u);
  const double t4 = 2.131847;  // Student's t, 0.95, 4 degrees of freedom
  const double half = t4 * std::sqrt(0.025 / 4 * 1.2);
  EXPECT_NEAR(std::log(plain->low), -half, 0.002 * half);
  EXPECT_NEAR(std::log(plain->high), half, 0.002 * half);
  // A drift probe that moved from -5 % to +10 % over the build: that range is the level's 90 %, added in quadrature.
  const Json quality = {{"drift", {{{"probe", "p"}, {"low", -0.05}, {"high", 0.10}}}}};
  const auto drifted = PredictionInterval::estimate(errors, quality);
  ASSERT_TRUE(drifted);
  const double spread = (std::log(1.10) - std::log(0.95)) / (2 * 1.6448536);
  EXPECT_NEAR(drifted->level_spread, spread, 1e-6);
  EXPECT_NEAR(std::log(drifted->high), t4 * std::sqrt(0.025 / 4 * 1.2 + spread * spread), 0.002);
  // A predictor that is off by the same factor everywhere: the interval moves with it, and has no width.
  const auto biased = PredictionInterval::estimate({0.25, 0.25, 0.25, 0.25, 0.25}, Json());
  ASSERT_TRUE(biased);
  EXPECT_NEAR(biased->low, 0.8, 1e-9);
  EXPECT_NEAR(biased->high, 0.8, 1e-9);
  // Fewer than five errors: no interval rather than a made-up one.
  EXPECT_FALSE(PredictionInterval::estimate({0.1, -0.1, 0.0, 0.05}, Json()));
  // The round trip through generalization.json.
  const PredictionInterval back = PredictionInterval::from_json(drifted->to_json(), "g.json");
  EXPECT_DOUBLE_EQ(back.low, drifted->low);
  EXPECT_DOUBLE_EQ(back.high, drifted->high);
  EXPECT_EQ(back.networks, 5u);
  EXPECT_THROW(PredictionInterval::from_json(Json{{"low", 1.0}}, "g.json"), Error);
}

TEST(PredictionIntervalTest, EvaluateCountsTheMeasuredLatenciesInsideTheirInterval) {
  PredictionInterval interval;
  interval.low = 0.9;
  interval.high = 1.2;
  std::vector<ModelEvaluation> models(4);
  const double measured[] = {10.5, 11.9, 8.0, 12.5};  // all predicted at 10 ms: inside, inside, below, above
  for (size_t i = 0; i < models.size(); ++i) {
    models[i].predicted_ms = 10;
    models[i].measured_ms = measured[i];
    models[i].repeats_ms = {measured[i], measured[i]};
    if (i < 3) models[i].interval = interval;
  }
  models[3].interval.reset();  // no interval: not counted either way
  const AccuracySummary s = summarize({&models[0], &models[1], &models[2], &models[3]}, RepeatStatistic::min);
  EXPECT_EQ(s.interval_models, 3u);
  ASSERT_TRUE(s.interval_coverage);
  EXPECT_DOUBLE_EQ(*s.interval_coverage, 2.0 / 3);
  EXPECT_FALSE(summarize({&models[3]}, RepeatStatistic::min).interval_coverage);
}

TEST(EvaluateReport, SaysWhatNoCalibrationFixes) {
  EvaluateReport report;
  report.predictor = "p";
  report.backend = "onednn_cpu";
  ModelEvaluation a, b, c;
  a.name = "efficientnet_b0";
  a.stand_ins = {{"conv-bn-swish -> conv-bn-relu", 16}, {"mul -> add", 2}};
  b.name = "vit";
  b.stand_ins = {{"conv-bn-swish -> conv-bn-relu", 1}};
  b.uncovered_ops = 12;
  c.name = "resnet18";
  report.models = {a, b, c};
  std::string table = report.to_table();
  EXPECT_TRUE(contains(table, "2 of 3 models have kernels predicted by another kernel's regressor: "
                              "conv-bn-swish -> conv-bn-relu x17, mul -> add x2")) << table;
  EXPECT_TRUE(contains(table, "1 of 3 models have ops no predictor counts (12 ops")) << table;
  EXPECT_FALSE(contains(table, "noisy measurements")) << table;
  const Json j = report.to_json();
  EXPECT_EQ(j["models"][0]["stand_ins"]["conv-bn-swish -> conv-bn-relu"], 16);
  EXPECT_EQ(j["models"][1]["uncovered_ops"], 12);
  EXPECT_FALSE(j["models"][2].contains("stand_ins"));
  EXPECT_FALSE(j.contains("measurement_quality"));

  report.measurement_quality = {{"verdict", "noisy"}, {"reasons", {"drift"}}};
  table = report.to_table();
  EXPECT_TRUE(contains(table, "the predictor was built on noisy measurements")) << table;
  EXPECT_EQ(report.to_json()["measurement_quality"]["verdict"], "noisy");
}

// The split of --kernels is of the plain sum of kernels: its identity is the prediction's only without a
// composition term; with one the line names the sum.
TEST(EvaluateReport, TheSplitsIdentityNamesThePlainSumUnderACompositionTerm) {
  EvaluateReport report;
  ModelEvaluation m;
  m.name = "resnet18";
  m.measured_ms = 10;
  m.predicted_ms = 11;
  m.split = KernelSplit{9.5, 9};
  report.models = {m};
  report.kernels["k0"] = KernelEvaluation{};
  std::string table = report.to_table();
  EXPECT_TRUE(contains(table, "(prediction = measured × (1 + predictors) × (1 + composition))")) << table;
  report.composition = CompositionModel{};
  table = report.to_table();
  EXPECT_TRUE(contains(table, "(the plain sum of kernels = measured × (1 + predictors) × (1 + composition); the "
                              "composition term multiplies it into the prediction)")) << table;
  EXPECT_FALSE(contains(table, "(prediction = measured")) << table;
}

// The report is judged as a person sees it: Chromium prints it to PDF and the PDF's text is read back.
TEST(EvaluateReport, ChromiumRendersTheSummaryChartsAndTable) {
  const CliResult which = run_program({"/bin/sh", "-c", "command -v chromium && command -v pdftotext"});
  if (which.exit_code != 0) GTEST_SKIP() << "chromium or pdftotext is not installed (scripts/install-deps.sh installs both)";
  EvaluateReport report;
  report.predictor = "demo_predictor";
  report.backend = "onednn_cpu";
  report.protocol.repeats = 4;
  const double t0 = 1.7e9;
  for (const auto& [name, predicted, measured] : std::vector<std::tuple<std::string, double, double>>{
           {"mobilenet_v2_r224_w1.0", 9.5, 9.0}, {"resnet18_r224", 30.0, 24.0}, {"resnet18_r160", 15.0, 14.8}}) {
    ModelEvaluation m;
    m.name = name;
    m.family = network_family(name);
    m.predicted_ms = predicted;
    m.measured_ms = measured;
    m.repeats_ms = {measured, measured * 1.03, measured * 1.01, measured * 1.2};
    m.repeat_times = {t0, t0 + 60, t0 + 120, t0 + 180};
    m.split_half_deviation = 0.01;
    report.models.push_back(m);
  }
  ModelEvaluation failed;
  failed.name = "odd_model";
  failed.family = "odd_model";
  failed.error = "prediction failed: Loop is not supported";
  report.models.push_back(failed);
  std::vector<const ModelEvaluation*> all;
  for (const auto& m : report.models) all.push_back(&m);
  report.summary = summarize(all, RepeatStatistic::min);
  report.by_family["resnet18"] = summarize({&report.models[1], &report.models[2]}, RepeatStatistic::min);
  report.by_family["mobilenet_v2"] = summarize({&report.models[0]}, RepeatStatistic::min);
  const std::string long_family = "an_architecture_family_with_a_rather_long_name";
  report.by_family[long_family] = summarize({&report.models[0]}, RepeatStatistic::min);

  TempDir tmp;
  write_text(tmp / "report.html", report.to_html());
  const CliResult pdf = run_program({"chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
                                     "--user-data-dir=" + (tmp / "profile").string(),
                                     "--print-to-pdf=" + (tmp / "report.pdf").string(), "file://" + (tmp / "report.html").string()});
  ASSERT_TRUE(fs::exists(tmp / "report.pdf")) << pdf.err;
  const CliResult text = run_program({"pdftotext", (tmp / "report.pdf").string(), "-"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  // Words as shown, whatever the line breaks of the layout.
  std::string shown;
  for (char c : text.out)
    if (!std::isspace(static_cast<unsigned char>(c)) || (!shown.empty() && shown.back() != ' ')) shown += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
  EXPECT_TRUE(contains(shown, "Latency predictor demo_predictor on onednn_cpu")) << shown;
  // 1 of 3 scored models is off by more than 10 % (resnet18_r224, +25 %).
  EXPECT_TRUE(contains(shown, "3 scored of 4 (1 not scored)")) << shown;
  // The result in a sentence above everything else, next to the measurement's own ceiling.
  EXPECT_TRUE(contains(shown, "The predictor is within ±10 % of the measured latency on 66.7% of the 3 scored models"))
      << shown;
  EXPECT_TRUE(contains(shown, "so the predictor, not the measurement, limits the accuracy")) << shown;
  EXPECT_TRUE(contains(shown, "1 model could not be scored")) << shown;
  EXPECT_LT(shown.find("The predictor is within"), shown.find("3 scored of 4")) << shown;
  EXPECT_TRUE(contains(shown, "within ±10% 66.7%")) << shown;
  EXPECT_TRUE(contains(shown, "Predicted versus measured")) << shown;
  EXPECT_TRUE(contains(shown, "measured latency (ms)")) << shown;  // the scatter's axis, drawn as SVG text
  EXPECT_TRUE(contains(shown, "Error by model family")) << shown;
  EXPECT_TRUE(contains(shown, "RMSPE")) << shown;
  EXPECT_TRUE(contains(shown, "minutes since the first measurement")) << shown;  // the drift chart
  EXPECT_TRUE(contains(shown, "Loop is not supported")) << shown;
  EXPECT_TRUE(contains(shown, "+25.0%")) << shown;
  const std::string html = read_text(tmp / "report.html");
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // A long family label, right-aligned at x, starts inside the picture (12 px text: at most ~7 px a character).
  const std::string label = ">" + long_family + " (1)</text>";
  const size_t at = html.find(label);
  ASSERT_NE(at, std::string::npos);
  const size_t x_at = html.rfind("<text x=\"", at) + 9;
  EXPECT_GE(std::stod(html.substr(x_at)), 7.0 * static_cast<double>(label.size() - 8)) << html.substr(x_at, 80);
  // No external resource: the only URL is the SVG namespace.
  const auto occurrences = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = html.find(needle); at != std::string::npos; at = html.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(occurrences("http"), occurrences("http://www.w3.org/2000/svg"));
}

}  // namespace
}  // namespace nnmeter::test
