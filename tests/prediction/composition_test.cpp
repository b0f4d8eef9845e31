// The composition term: footprint of a model, the fit, the factor's clamping, kernels left unscaled,
// composition.json validation, and a predictor folder that carries one (latency = unscaled + rest × factor).
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <map>

#include "networks/architectures.h"
#include "prediction/onnx_model.h"
#include "common/io.h"
#include "prediction/prediction_fixtures.h"

namespace nnmeter {
namespace {

using test::contains;
using test::error_of;

TEST(Composition, FootprintCountsEveryOutputAndWeightAsFloat32) {
  ModelIr ir;
  ir.nodes.push_back({"x", "Placeholder", {}, {"c"}, {}, {{1, 3, 8, 8}}, Json::object()});
  ir.nodes.push_back({"c", "Conv", {"x"}, {"r"}, {{1, 3, 8, 8}}, {{1, 16, 8, 8}}, Json{{"weight_shape", {16, 3, 3, 3}}}});
  ir.nodes.push_back({"r", "Relu", {"c"}, {}, {{1, 16, 8, 8}}, {{1, 16, 8, 8}}, Json::object()});
  const double elements = 3 * 64 + 16 * 64 + 16 * 3 * 9 + 16 * 64;
  EXPECT_DOUBLE_EQ(model_footprint_mb(ir), elements * 4 / 1e6);
  // A real network: grows with resolution (activations) and with width (weights and activations).
  const auto fp = [](const char* arch, int64_t res, double width) {
    return model_footprint_mb(onnx_to_ir(networks::build(arch, res, width).model, arch));
  };
  EXPECT_GT(fp("mobilenet_v2", 128, 1.0), fp("mobilenet_v2", 96, 1.0));
  EXPECT_GT(fp("mobilenet_v2", 96, 1.4), fp("mobilenet_v2", 96, 1.0));
  EXPECT_GT(fp("resnet18", 96, 1.0), 46);  // 11.7 M float32 weights alone
}

TEST(Composition, FitRecoversAPowerOfTheFootprint) {
  std::vector<CompositionPoint> points;
  for (double f : {5.0, 12.0, 40.0, 90.0, 200.0})
    points.push_back({2.0, 2.0 * std::exp(-0.05 + 0.03 * std::log(f)), f});
  const CompositionModel m = fit_composition(points);
  EXPECT_NEAR(m.c0, -0.05, 1e-12);
  EXPECT_NEAR(m.c1, 0.03, 1e-12);
  EXPECT_DOUBLE_EQ(m.footprint_min_mb, 5.0);
  EXPECT_NEAR(m.footprint_max_mb, 200.0, 1e-9);
  EXPECT_NEAR(m.factor(40), std::exp(-0.05 + 0.03 * std::log(40.0)), 1e-12);
  // Never extrapolated: outside the calibrated footprints the factor of the nearest end.
  EXPECT_DOUBLE_EQ(m.factor(1), m.factor(5));
  EXPECT_DOUBLE_EQ(m.factor(5000), m.factor(m.footprint_max_mb));
}

TEST(Composition, FewPointsOrOneSizeFitTheConstantOnly) {
  // Three networks: no slope, the geometric mean of measured / Σ kernels.
  const CompositionModel three = fit_composition({{1, 1.1, 10}, {1, 1.2, 50}, {2, 2.4, 200}});
  EXPECT_EQ(three.c1, 0);
  EXPECT_NEAR(std::exp(three.c0), std::cbrt(1.1 * 1.2 * 1.2), 1e-12);
  // Five networks whose footprints span less than 2×: no slope either.
  const CompositionModel narrow = fit_composition({{1, 1.1, 10}, {1, 1.2, 12}, {1, 1.1, 14}, {1, 1.3, 16}, {1, 1.0, 19}});
  EXPECT_EQ(narrow.c1, 0);
  EXPECT_TRUE(contains(error_of([] { fit_composition({}); }), "no measured model"));
  EXPECT_TRUE(contains(error_of([] { fit_composition({{1, 0, 10}}); }), "non-positive"));
  EXPECT_TRUE(contains(error_of([] { fit_composition({{1, 1, NAN}}); }), "non-positive"));
}

TEST(Composition, NetworksWhoseKernelsArePredictedWrongDoNotTiltTheTerm) {
  // 20 networks on a power of the footprint (±1 % of noise), and 3 small-input ResNets whose kernel sums the
  // predictor missed by 17 %: a kernel-predictor error the term must not spread over every network.
  std::vector<CompositionPoint> points;
  for (int i = 0; i < 20; ++i) {
    const double f = 5.0 * std::pow(1.2, i), noise = i % 2 ? 0.01 : -0.01;
    points.push_back({2.0, 2.0 * std::exp(-0.05 + 0.03 * std::log(f) + noise), f});
  }
  for (double f : {60.0, 100.0, 140.0})
    points.push_back({2.0 / 1.17 / std::exp(-0.05 + 0.03 * std::log(f)), 2.0, f, 0, fmt::format("resnet_{}", f)});
  const CompositionModel m = fit_composition(points);
  EXPECT_NEAR(m.c1, 0.03, 0.005);
  for (double f : {10.0, 50.0, 150.0}) EXPECT_NEAR(m.factor(f), std::exp(-0.05 + 0.03 * std::log(f)), 0.015);
  // The file says how: Huber's weights, and exactly the three set aside, by name, each far below 1.
  const Json& fit = m.calibration.at("fit");
  EXPECT_EQ(fit.at("method"), "huber");
  EXPECT_EQ(fit.at("networks"), 23);
  ASSERT_EQ(fit.at("down_weighted").size(), 3u) << fit.dump();
  for (const Json& d : fit.at("down_weighted")) {
    EXPECT_TRUE(contains(d.at("model").get<std::string>(), "resnet_")) << d.dump();
    EXPECT_LT(d.at("weight").get<double>(), 0.3) << d.dump();
  }
  EXPECT_TRUE(contains(m.describe_fit(), "Huber's weights, 3 of 23 networks down-weighted: resnet_60 (0.")) << m.describe_fit();
  EXPECT_EQ(CompositionModel::from_json(m.to_json(), "c.json").describe_fit(), m.describe_fit());
  // Under 8 networks: plain least squares, and it says so.
  const std::vector<CompositionPoint> few(points.begin(), points.begin() + 7);
  EXPECT_EQ(fit_composition(few).calibration.at("fit").at("method"), "least_squares");
  EXPECT_EQ(fit_composition(few).describe_fit(), "least squares");
  // A file from before the field: nothing claimed.
  CompositionModel old = m;
  old.calibration.erase("fit");
  EXPECT_EQ(old.describe_fit(), "");
  // A hand-edited record is not worth failing a report over.
  for (const Json& bad : {Json("text"), Json{{"fit", 3}}, Json{{"fit", {{"method", "huber"}, {"down_weighted", 5}}}},
                          Json{{"fit", {{"method", "huber"}, {"networks", "x"}, {"down_weighted", {{{"weight", "y"}}}}}}}}) {
    old.calibration = bad;
    EXPECT_EQ(old.describe_fit(), "") << bad.dump();
  }
  // Plain least squares lifts the term by ~6 % at 150 MB: more than the ±5 % a prediction is judged by.
  double mx = 0, my = 0;
  for (const auto& p : points) mx += std::log(p.footprint_mb) / points.size(), my += std::log(p.measured_ms / p.kernels_ms) / points.size();
  double sxx = 0, sxy = 0;
  for (const auto& p : points) {
    const double dx = std::log(p.footprint_mb) - mx;
    sxx += dx * dx, sxy += dx * (std::log(p.measured_ms / p.kernels_ms) - my);
  }
  const double least_squares = std::exp(my - sxy / sxx * mx + sxy / sxx * std::log(150.0));
  EXPECT_GT(least_squares - std::exp(-0.05 + 0.03 * std::log(150.0)), 0.04);
}

TEST(Composition, UnscaledKernelsKeepTheirTimeAndTheRestIsFitted) {
  // Networks whose fc part (u) is as predicted while the rest follows the power of the footprint.
  std::vector<CompositionPoint> points;
  for (double f : {5.0, 12.0, 40.0, 90.0, 200.0}) {
    const double kernels = 3.0, u = f / 100;
    points.push_back({kernels, u + (kernels - u) * std::exp(-0.04 + 0.02 * std::log(f)), f, u});
  }
  const CompositionModel m = fit_composition(points, {"fc"});
  EXPECT_EQ(m.unscaled_kernels, std::set<std::string>{"fc"});
  EXPECT_NEAR(m.c0, -0.04, 1e-12);
  EXPECT_NEAR(m.c1, 0.02, 1e-12);
  EXPECT_NEAR(m.latency(3.0, 0.4, 40, 12, {}), 0.4 + 2.6 * m.factor(40), 1e-12);
  EXPECT_DOUBLE_EQ(m.latency(3.0, 0, 40, 12, {}), 3.0 * m.factor(40));
  EXPECT_TRUE(contains(m.describe(), "fc unscaled"));
  // The same networks with every kernel scaled (no unscaled part): another term, bent by the fc part.
  for (auto& p : points) p.unscaled_ms = 0;
  EXPECT_GT(std::abs(fit_composition(points).c1 - 0.02), 1e-3);
  // Unscaled kernels taking a whole network leave nothing to fit.
  EXPECT_TRUE(contains(error_of([] { fit_composition({{1, 2, 10, 1}}, {"fc"}); }), "fc take 1 ms"));
  EXPECT_TRUE(contains(error_of([] { fit_composition({{2, 1, 10, 1}}, {"fc"}); }), "nothing left to scale"));
  EXPECT_TRUE(contains(error_of([] { fit_composition({{2, 3, 10, -1}}); }), "non-positive"));
}

TEST(Composition, JsonRoundTripsAndBadFilesNameThemselves) {
  CompositionModel m = fit_composition({{1, 1.05, 4}, {1, 1.1, 20}, {1, 1.12, 60}, {1, 1.2, 150}});
  m.calibration = {{"models", 4}};
  const CompositionModel back = CompositionModel::from_json(m.to_json(), "c.json");
  EXPECT_DOUBLE_EQ(back.c0, m.c0);
  EXPECT_DOUBLE_EQ(back.c1, m.c1);
  EXPECT_DOUBLE_EQ(back.factor(33), m.factor(33));
  EXPECT_EQ(back.calibration["models"], 4);
  EXPECT_TRUE(back.unscaled_kernels.empty());
  m.unscaled_kernels = {"fc", "conv-bn"};
  EXPECT_EQ(CompositionModel::from_json(m.to_json(), "c.json").unscaled_kernels, m.unscaled_kernels);
  Json old_file = m.to_json();  // written before kernels could be left unscaled: every kernel scaled
  old_file.erase("unscaled_kernels");
  EXPECT_TRUE(CompositionModel::from_json(old_file, "c.json").unscaled_kernels.empty());

  const auto err = [&](const std::function<void(Json&)>& edit) {
    Json j = m.to_json();
    edit(j);
    return error_of([&] { CompositionModel::from_json(j, "/p/composition.json"); });
  };
  EXPECT_TRUE(contains(err([](Json& j) { j = Json::array(); }), "/p/composition.json: not a JSON object"));
  EXPECT_TRUE(contains(err([](Json& j) { j["format_version"] = 2; }), "format_version"));
  EXPECT_TRUE(contains(err([](Json& j) { j["c1"] = "x"; }), "'c1' must be a finite number"));
  EXPECT_TRUE(contains(err([](Json& j) { j.erase("c0"); }), "'c0'"));
  EXPECT_TRUE(contains(err([](Json& j) { j["footprint_mb_range"] = {5}; }), "[min, max]"));
  EXPECT_TRUE(contains(err([](Json& j) { j["footprint_mb_range"] = {0, 5}; }), "0 < min <= max"));
  EXPECT_TRUE(contains(err([](Json& j) { j["footprint_mb_range"] = {9, 5}; }), "0 < min <= max"));
  EXPECT_TRUE(contains(err([](Json& j) { j["c0"] = 10.0; }), "outside 0.001-1000"));
  EXPECT_TRUE(contains(err([](Json& j) { j["c0"] = -10.0; }), "nn-meter calibrate"));
  EXPECT_TRUE(contains(err([](Json& j) { j["unscaled_kernels"] = "fc"; }), "'unscaled_kernels' must be a list of kernel names"));
  EXPECT_TRUE(contains(err([](Json& j) { j["unscaled_kernels"] = {"fc", 3}; }), "'unscaled_kernels'"));
  EXPECT_TRUE(contains(err([](Json& j) { j["unscaled_kernels"] = {""}; }), "'unscaled_kernels'"));
}

// calibrate --refresh's level: format 3 (a reader of 1 or 2 refuses it), round-trips, multiplies every prediction,
// and garbage is refused.
TEST(Composition, ALevelIsVersionThreeAndMultipliesThePrediction) {
  CompositionModel m = fit_composition({{1, 1.05, 4}, {1, 1.1, 20}, {1, 1.12, 60}, {1, 1.2, 150}});
  EXPECT_EQ(m.to_json()["format_version"], 1);
  const double plain = m.predict(2.0, 0.5, 33, 8, {{{"conv", 2.0}}, {}});
  m.level = 1.25;
  m.relevel = {{"networks", 4}};
  const Json j = m.to_json();
  EXPECT_EQ(j["format_version"], 3);
  const CompositionModel back = CompositionModel::from_json(j, "c.json");
  EXPECT_DOUBLE_EQ(back.level, 1.25);
  EXPECT_EQ(back.relevel["networks"], 4);
  EXPECT_DOUBLE_EQ(back.predict(2.0, 0.5, 33, 8, {{{"conv", 2.0}}, {}}), 1.25 * plain);
  EXPECT_TRUE(contains(back.describe(), "re-levelled x1.250"));
  Json bad = j;
  bad["level"] = 5000;
  EXPECT_TRUE(contains(error_of([&] { CompositionModel::from_json(bad, "c.json"); }), "'level' 5e+03 is outside 0.001-1000"));
  bad.erase("level");
  EXPECT_TRUE(contains(error_of([&] { CompositionModel::from_json(bad, "c.json"); }), "'level' must be a finite number"));
}

// The kernel cost: what each kernel measured alone pays that a network pays once, taken off each scaled kernel
// before the footprint's factor, never more than half of them; fitted (either sign), format 4, refused when garbage.
TEST(Composition, AKernelCostIsFittedAndTakenOffEachKernelBeforeScaling) {
  const auto networks = [](double cost) {
    std::vector<CompositionPoint> points;
    for (int i = 0; i < 12; ++i) {
      const double f = 5.0 * std::pow(1.4, i), kernels = 1.0 + 0.3 * i, n = 40.0 + 25.0 * (i % 4);
      points.push_back({kernels, (kernels - cost * n) * std::exp(-0.05 + 0.03 * std::log(f)), f, 0, fmt::format("n{}", i), n});
    }
    return points;
  };
  const std::vector<CompositionPoint> points = networks(0.005);
  const CompositionModel m = fit_composition(points, {}, true);
  EXPECT_NEAR(m.kernel_cost_ms, 0.005, 1e-6);
  EXPECT_NEAR(m.c0, -0.05, 1e-4);
  EXPECT_NEAR(m.c1, 0.03, 1e-4);
  const Json& record = m.calibration["fit"]["kernel_cost"];
  EXPECT_DOUBLE_EQ(record["ms"].get<double>(), m.kernel_cost_ms);
  // The range: half the smallest mean kernel of a network (1.9 ms over 115 kernels).
  EXPECT_NEAR(record["range_ms"][1].get<double>(), 1.9 / 115 / 2, 1e-12);
  EXPECT_DOUBLE_EQ(record["range_ms"][0].get<double>(), -record["range_ms"][1].get<double>());
  // With the cost every network is predicted; without it (the default) the same networks are not.
  const CompositionModel plain = fit_composition(points);
  EXPECT_EQ(plain.kernel_cost_ms, 0);
  EXPECT_FALSE(plain.calibration["fit"].contains("kernel_cost"));
  double worst = 0, worst_plain = 0;
  for (const auto& p : points) {
    worst = std::max(worst, std::abs(std::log(m.latency(p.kernels_ms, 0, p.footprint_mb, p.scaled_kernels, {}) / p.measured_ms)));
    worst_plain = std::max(worst_plain, std::abs(std::log(plain.latency(p.kernels_ms, 0, p.footprint_mb, p.scaled_kernels, {}) / p.measured_ms)));
  }
  EXPECT_LT(worst, 1e-4);
  EXPECT_GT(worst_plain, 0.02);
  // Unscaled kernels keep their time; the cost comes off the rest, never more than half of it.
  EXPECT_NEAR(m.latency(3.0, 0.5, 40, 100, {}), 0.5 + (2.5 - m.kernel_cost_ms * 100) * m.factor(40), 1e-12);
  EXPECT_DOUBLE_EQ(m.latency(1.0, 0, 40, 1000, {}), 0.5 * m.factor(40));
  EXPECT_TRUE(contains(m.describe(), ", 5 µs less a kernel")) << m.describe();
  // Networks that pay more a kernel than their kernels alone: a negative cost.
  const CompositionModel more = fit_composition(networks(-0.003), {}, true);
  EXPECT_NEAR(more.kernel_cost_ms, -0.003, 1e-6);
  EXPECT_TRUE(contains(more.describe(), ", 3 µs more a kernel")) << more.describe();

  // Format 4 (a reader of 1-3 refuses it), with the level it carries as 3 does; round-trips.
  const Json j = m.to_json();
  EXPECT_EQ(j["format_version"], 4);
  EXPECT_EQ(j["level"], 1);
  const CompositionModel back = CompositionModel::from_json(j, "c.json");
  EXPECT_DOUBLE_EQ(back.kernel_cost_ms, m.kernel_cost_ms);
  EXPECT_DOUBLE_EQ(back.predict(3.0, 0.5, 40, 100, {{{"conv", 3.0}}, {}}), m.predict(3.0, 0.5, 40, 100, {{{"conv", 3.0}}, {}}));
  const auto err = [&](const std::function<void(Json&)>& edit) {
    Json bad = j;
    edit(bad);
    return error_of([&] { CompositionModel::from_json(bad, "/p/composition.json"); });
  };
  EXPECT_TRUE(contains(err([](Json& x) { x.erase("kernel_cost_ms"); }), "'kernel_cost_ms' must be a finite number"));
  EXPECT_TRUE(contains(err([](Json& x) { x["kernel_cost_ms"] = 5000; }), "'kernel_cost_ms' 5e+03 is outside ±1000"));
  EXPECT_TRUE(contains(err([](Json& x) { x.erase("level"); }), "'level' must be a finite number"));
  // A point with a negative count is refused like any other bad value.
  EXPECT_TRUE(contains(error_of([] { fit_composition({{1, 1, 10, 0, "x", -1}}, {}, true); }), "non-positive"));
}

// Kernel scales: networks whose dwconv part runs 1.4× its kernels alone and whose conv part 0.9× (a cost off
// each kernel, a factor by footprint on top) are predicted with a scale a type; without them they are not.
TEST(Composition, EachKernelTypeCanHaveItsOwnScale) {
  std::vector<CompositionPoint> points;
  for (int i = 0; i < 24; ++i) {
    const double f = 5.0 * std::pow(1.25, i), conv = 1.0 + 0.2 * (i % 5), dw = 0.2 + 0.3 * (i % 7), fc = 0.05 * (i % 3),
                 n = 40.0 + 10.0 * (i % 4);
    const double measured = (1.4 * dw + 0.9 * conv + fc - 0.002 * n) * std::exp(0.02 + 0.01 * std::log(f));
    points.push_back({conv + dw + fc, measured, f, 0, fmt::format("n{}", i), n, {{"conv", conv}, {"dwconv", dw}, {"fc", fc}}});
  }
  const auto worst = [&](const CompositionModel& m) {
    double w = 0;
    for (const auto& p : points)
      w = std::max(w, std::abs(std::log(m.latency(p.kernels_ms, 0, p.footprint_mb, p.scaled_kernels, p.kernels_by_type) /
                                        p.measured_ms)));
    return w;
  };
  const CompositionModel scaled = fit_composition(points, {}, true, 1e-6);
  ASSERT_EQ(scaled.kernel_scales.size(), 3u);
  EXPECT_NEAR(scaled.kernel_scales.at("dwconv") / scaled.kernel_scales.at("conv"), 1.4 / 0.9, 0.05);
  EXPECT_LT(worst(scaled), 0.01);
  EXPECT_GT(worst(fit_composition(points, {}, true)), 0.05);
  EXPECT_EQ(scaled.calibration["fit"]["kernel_scales"]["ridge"], 1e-6);
  // A hard ridge holds every scale at 1: the term without scales.
  const CompositionModel held = fit_composition(points, {}, true, 1e6);
  for (const auto& [kernel, scale] : held.kernel_scales) EXPECT_NEAR(scale, 1, 1e-3) << kernel;
  // Unscaled kernels get no scale; a network without types gets none either.
  EXPECT_FALSE(fit_composition(points, {"fc"}, true, 1e-6).kernel_scales.count("fc"));
  EXPECT_TRUE(fit_composition({{1, 1.05, 4}, {1, 1.1, 20}}, {}, false, 1e-3).kernel_scales.empty());
  EXPECT_TRUE(contains(scaled.describe(), "3 kernel scales x")) << scaled.describe();
  // A scale multiplies its type's Σ; a type the term has no scale for counts once.
  CompositionModel m;
  m.footprint_min_mb = m.footprint_max_mb = 10;
  m.kernel_scales = {{"dwconv", 1.5}};
  EXPECT_DOUBLE_EQ(m.latency(3.0, 0, 10, 5, {{"conv", 2.0}, {"dwconv", 1.0}}), 3.5);
  EXPECT_DOUBLE_EQ(m.latency(3.0, 0, 10, 5, {}), 3.0);

  // Format 5 (a reader of 1-4 refuses it), with the level and cost it carries; round-trips; bad scales refused.
  const Json j = scaled.to_json();
  EXPECT_EQ(j["format_version"], 5);
  const CompositionModel back = CompositionModel::from_json(j, "c.json");
  EXPECT_EQ(back.kernel_scales, scaled.kernel_scales);
  EXPECT_DOUBLE_EQ(back.kernel_cost_ms, scaled.kernel_cost_ms);
  const auto err = [&](const std::function<void(Json&)>& edit) {
    Json bad = j;
    edit(bad);
    return error_of([&] { CompositionModel::from_json(bad, "/p/composition.json"); });
  };
  EXPECT_TRUE(contains(err([](Json& x) { x.erase("kernel_scales"); }), "format_version 5 needs a 'kernel_scales' object"));
  EXPECT_TRUE(contains(err([](Json& x) { x["kernel_scales"]["conv"] = 0; }), "'kernel_scales.conv' must be a number in 0.01-100"));
  EXPECT_TRUE(contains(err([](Json& x) { x["kernel_scales"]["conv"] = "1"; }), "'kernel_scales.conv'"));
  EXPECT_TRUE(contains(err([](Json& x) { x.erase("kernel_cost_ms"); }), "'kernel_cost_ms' must be a finite number"));
}

// The neighbours' correction: the residuals of the calibration networks nearest in kernel mix (and, weighted,
// footprint), by median or inverse-distance mean; none with k = 0.
TEST(Composition, NeighboursCorrectByTheNearestNetworksResiduals) {
  const auto kernels = [](std::map<std::string, double> ms) { return KernelSums{{}, std::move(ms)}; };
  NeighbourCorrection c;
  c.networks = {{"conv_a", 10, {{"conv", 1.0}}, 1.12},
                {"conv_b", 20, {{"conv", 1.0}}, 1.10},
                {"conv_c", 40, {{"conv", 1.0}}, 1.08},
                {"dw_a", 20, {{"conv", 0.4}, {"dwconv", 0.6}}, 0.90},
                {"dw_b", 30, {{"conv", 0.5}, {"dwconv", 0.5}}, 0.92}};
  const KernelSums convs = kernels({{"conv", 5.0}});
  EXPECT_EQ(c.factor(convs, 20), 1);  // k = 0
  c.k = 3;
  EXPECT_DOUBLE_EQ(c.factor(convs, 20), 1.10);  // the three conv networks: median
  c.k = 2;
  EXPECT_DOUBLE_EQ(c.factor(convs, 20), (1.12 + 1.10) / 2);  // equal distances keep the calibration order
  // Only the mix counts at weight 0; with a weight the footprint picks among networks of the same mix.
  c.k = 1;
  EXPECT_DOUBLE_EQ(c.factor(convs, 40), 1.12);
  c.footprint_weight = 0.3;
  EXPECT_DOUBLE_EQ(c.factor(convs, 40), 1.08);
  // A network like the dwconv ones (shares, not milliseconds, are compared) takes their residuals.
  c.k = 2;
  EXPECT_DOUBLE_EQ(c.factor(kernels({{"conv", 1.8}, {"dwconv", 2.2}}), 25), (0.90 + 0.92) / 2);
  // Inverse-distance mean: a network equal to a calibration one is dominated by its residual.
  c.statistic = NeighbourCorrection::Statistic::InverseDistance;
  c.k = 5;
  EXPECT_NEAR(c.factor(convs, 20), 1.10, 1e-3);
  EXPECT_GT(c.factor(convs, 20), 1.08);
  EXPECT_EQ(kernel_mix({{"conv", 3}, {"fc", 1}}), (std::map<std::string, double>{{"conv", 0.75}, {"fc", 0.25}}));
  EXPECT_TRUE(kernel_mix({}).empty());
}

// The mix is by kernel as detected: a network of swish convs that the relu regressors predict is near the swish
// networks, not the relu ones; a file of format_version 2-5 compares mixes by predictor kernel as it was fitted.
TEST(Composition, NeighboursMixIsByKernelAsDetected) {
  NeighbourCorrection c;
  c.k = 1;
  c.networks = {{"relu_net", 20, {{"conv-bn-relu", 1.0}}, 0.93}, {"swish_net", 20, {{"conv-swish", 1.0}}, 1.15}};
  const KernelSums swish_by_relu{{{"conv-bn-relu", 4.0}}, {{"conv-swish", 4.0}}};
  EXPECT_DOUBLE_EQ(c.factor(swish_by_relu, 20), 1.15);
  c.mix_of = NeighbourCorrection::MixOf::PredictorKernel;
  EXPECT_DOUBLE_EQ(c.factor(swish_by_relu, 20), 0.93);
}

TEST(Composition, NeighboursRoundTripAsVersionSixAndBadOnesAreRefused) {
  CompositionModel m = fit_composition({{1, 1.05, 4}, {1, 1.1, 20}, {1, 1.12, 60}, {1, 1.2, 150}});
  EXPECT_EQ(m.to_json()["format_version"], 1);  // no neighbours: files older readers take
  m.neighbours.k = 2;
  m.neighbours.footprint_weight = 0.1;
  m.neighbours.statistic = NeighbourCorrection::Statistic::InverseDistance;
  m.neighbours.networks = {{"a", 10, {{"conv", 1.0}}, 1.1}, {"b", 50, {{"conv", 0.5}, {"fc", 0.5}}, 0.95}};
  const Json j = m.to_json();
  // A reader of versions 1-5 refuses it instead of predicting without it, or with mixes by predictor kernel.
  EXPECT_EQ(j["format_version"], 6);
  EXPECT_EQ(j["neighbours"]["mix_of"], "kernel");
  const CompositionModel back = CompositionModel::from_json(j, "c.json");
  EXPECT_EQ(back.neighbours.k, 2);
  EXPECT_EQ(back.neighbours.networks.size(), 2u);
  EXPECT_EQ(back.neighbours.mix_of, NeighbourCorrection::MixOf::Kernel);
  EXPECT_EQ(back.kernel_scales.size(), 0u);
  const KernelSums sums{{{"conv", 1}}, {{"conv", 2}, {"fc", 1}}};
  EXPECT_DOUBLE_EQ(back.neighbours.factor(sums, 30), m.neighbours.factor(sums, 30));
  EXPECT_TRUE(contains(m.describe(), "the 2 nearest of 2 calibration networks (inverse-distance mean, footprint weight 0.1)"));
  // With kernel scales, a kernel cost and a level they all come back.
  CompositionModel full = m;
  full.kernel_scales = {{"conv", 1.2}};
  full.kernel_cost_ms = 0.004;
  full.level = 1.05;
  const CompositionModel full_back = CompositionModel::from_json(full.to_json(), "c.json");
  EXPECT_EQ(full.to_json()["format_version"], 6);
  EXPECT_EQ(full_back.kernel_scales, full.kernel_scales);
  EXPECT_DOUBLE_EQ(full_back.kernel_cost_ms, 0.004);
  EXPECT_DOUBLE_EQ(full_back.level, 1.05);

  // Calibrated with mixes by predictor kernel (versions 2-5): read and re-written so (calibrate --refresh).
  CompositionModel old = m;
  old.neighbours.mix_of = NeighbourCorrection::MixOf::PredictorKernel;
  EXPECT_EQ(old.to_json()["format_version"], 2);
  const CompositionModel old_back = CompositionModel::from_json(old.to_json(), "c.json");
  EXPECT_EQ(old_back.neighbours.mix_of, NeighbourCorrection::MixOf::PredictorKernel);
  EXPECT_DOUBLE_EQ(old_back.neighbours.factor(sums, 30), old.neighbours.factor(sums, 30));
  EXPECT_NE(old_back.neighbours.factor(sums, 30), back.neighbours.factor(sums, 30));
  EXPECT_TRUE(contains(old.describe(), "footprint weight 0.1, mix by predictor kernel)"));

  const auto err = [&](const std::function<void(Json&)>& edit) {
    Json bad = j;
    edit(bad);
    return error_of([&] { CompositionModel::from_json(bad, "/p/composition.json"); });
  };
  EXPECT_TRUE(contains(err([](Json& x) { x["format_version"] = 7; }), "format_version must be 1, 2, 3, 4, 5 or 6"));
  EXPECT_TRUE(contains(err([](Json& x) { x["format_version"] = 2.5; }), "format_version must be 1, 2, 3, 4, 5 or 6"));
  EXPECT_TRUE(contains(err([](Json& x) { x.erase("neighbours"); }), "format_version 6 needs a 'neighbours' object"));
  EXPECT_TRUE(contains(err([](Json& x) { x.erase("level"); }), "'level' must be a finite number"));
  EXPECT_TRUE(contains(err([](Json& x) { x["kernel_scales"] = Json::object(); }), "format_version 6 needs a 'kernel_scales' object"));
  EXPECT_TRUE(contains(err([](Json& x) { x["neighbours"]["k"] = 0; }), "'neighbours.k' must be an integer >= 1"));
  EXPECT_TRUE(contains(err([](Json& x) { x["neighbours"]["k"] = 3; }), "at least k networks"));
  EXPECT_TRUE(contains(err([](Json& x) { x["neighbours"]["footprint_weight"] = -1; }), "footprint_weight"));
  EXPECT_TRUE(contains(err([](Json& x) { x["neighbours"]["statistic"] = "mean"; }), "'neighbours.statistic'"));
  EXPECT_TRUE(contains(err([](Json& x) { x["neighbours"]["networks"][1]["residual"] = 5000; }),
                       "'neighbours.networks[1]': residual 5e+03 is outside 0.001-1000"));
  EXPECT_TRUE(contains(err([](Json& x) { x["neighbours"]["networks"][0].erase("mix"); }), "needs a model name"));
  EXPECT_TRUE(contains(err([](Json& x) { x["neighbours"]["networks"][0]["mix"]["conv"] = 2; }), "in 0-1"));
  EXPECT_TRUE(contains(err([](Json& x) { x["neighbours"]["networks"][0] = 1; }), "must be an object"));
  EXPECT_TRUE(contains(err([](Json& x) { x["neighbours"]["networks"][0]["footprint_mb"] = 0; }), "/p/composition.json"));
}

TEST(Composition, PredictorFolderAppliesItsTerm) {
  test::TempDir dir;
  const fs::path folder = dir / "tiny";
  test::make_predictor_folder(folder, {"conv-bn-relu", "dwconv-bn-relu", "fc", "global-avgpool", "add", "relu"},
                              test::rules_json({"BF_conv_bn", "BF_conv_relu", "BF_dwconv_bn", "BF_dwconv_relu"}));
  const ModelIr ir = onnx_to_ir(networks::build("mobilenet_v2", 64).model, "mobilenet_v2");
  const ModelPrediction plain = LatencyPredictor::from_folder(folder).predict_ir(ir);
  EXPECT_FALSE(LatencyPredictor::from_folder(folder).composition());
  EXPECT_EQ(plain.composition_factor, 1);
  EXPECT_DOUBLE_EQ(plain.latency_ms, plain.kernels_ms);
  EXPECT_DOUBLE_EQ(plain.footprint_mb, model_footprint_mb(ir));

  const CompositionModel m = fit_composition({{1, 1.02, 1}, {1, 1.06, 8}, {1, 1.09, 30}, {1, 1.13, 120}});
  io::save_json_file(folder / kCompositionFile, m.to_json());
  const LatencyPredictor calibrated = LatencyPredictor::from_folder(folder);
  ASSERT_TRUE(calibrated.composition());
  const ModelPrediction p = calibrated.predict_ir(ir);
  EXPECT_DOUBLE_EQ(p.kernels_ms, plain.kernels_ms);  // the kernels are untouched
  EXPECT_DOUBLE_EQ(p.composition_factor, m.factor(p.footprint_mb));
  EXPECT_GT(p.composition_factor, 1);
  EXPECT_DOUBLE_EQ(p.latency_ms, p.kernels_ms * p.composition_factor);
  const Json j = p.to_json();
  EXPECT_DOUBLE_EQ(j["latency_ms"].get<double>(), p.latency_ms);
  EXPECT_DOUBLE_EQ(j["kernels_ms"].get<double>(), p.kernels_ms);
  EXPECT_DOUBLE_EQ(j["composition_factor"].get<double>(), p.composition_factor);

  EXPECT_EQ(p.unscaled_ms, 0);

  // fc left unscaled: its predicted time enters the latency as it is, the rest is scaled.
  CompositionModel with_fc = m;
  with_fc.unscaled_kernels = {"fc"};
  io::save_json_file(folder / kCompositionFile, with_fc.to_json());
  const ModelPrediction q = LatencyPredictor::from_folder(folder).predict_ir(ir);
  double fc_ms = 0;
  for (const auto& k : q.kernels)
    if (k.predictor_kernel == "fc") fc_ms += k.latency_ms;
  ASSERT_GT(fc_ms, 0);
  EXPECT_DOUBLE_EQ(q.unscaled_ms, fc_ms);
  EXPECT_DOUBLE_EQ(q.latency_ms, fc_ms + (q.kernels_ms - fc_ms) * q.composition_factor);
  EXPECT_LT(q.latency_ms, p.latency_ms);
  EXPECT_DOUBLE_EQ(q.to_json()["unscaled_ms"].get<double>(), fc_ms);

  // Re-levelled (calibrate --refresh): every prediction times the level, and the prediction says so.
  CompositionModel levelled = m;
  levelled.level = 1.1;
  io::save_json_file(folder / kCompositionFile, levelled.to_json());
  const ModelPrediction l = LatencyPredictor::from_folder(folder).predict_ir(ir);
  EXPECT_DOUBLE_EQ(l.latency_ms, p.latency_ms * 1.1);
  EXPECT_DOUBLE_EQ(l.level, 1.1);
  EXPECT_DOUBLE_EQ(l.to_json()["level"].get<double>(), 1.1);

  // With neighbours: the term's prediction times their correction for this network's kernel mix.
  CompositionModel with_neighbours = m;
  // The network's mix by kernel as detected (relu6 convs) differs from its mix by predictor kernel (the relu
  // regressors predict them): a calibration network of each mix, and the one of its mix as detected is the nearest.
  const KernelSums sums = plain.kernel_sums();
  ASSERT_NE(kernel_mix(sums.by_kernel), kernel_mix(sums.by_predictor_kernel));
  double by_kernel_ms = 0;
  for (const auto& [kernel, ms] : sums.by_kernel) by_kernel_ms += ms;
  EXPECT_DOUBLE_EQ(by_kernel_ms, plain.kernels_ms);
  with_neighbours.neighbours.k = 1;
  with_neighbours.neighbours.networks = {{"by_regressor", 10, kernel_mix(sums.by_predictor_kernel), 1.3},
                                         {"like_it", 10, kernel_mix(sums.by_kernel), 0.8}};
  io::save_json_file(folder / kCompositionFile, with_neighbours.to_json());
  const ModelPrediction n = LatencyPredictor::from_folder(folder).predict_ir(ir);
  EXPECT_DOUBLE_EQ(n.neighbour_factor, 0.8);
  EXPECT_DOUBLE_EQ(n.latency_ms, p.latency_ms * n.neighbour_factor);
  EXPECT_DOUBLE_EQ(n.to_json()["neighbour_factor"].get<double>(), n.neighbour_factor);
  EXPECT_EQ(p.neighbour_factor, 1);

  // With a kernel cost: it comes off every predicted kernel use before the factor.
  double uses = 0;
  for (const auto& k : p.kernels)
    if (!k.predictor_kernel.empty()) uses += static_cast<double>(k.groups);
  EXPECT_DOUBLE_EQ(p.scaled_kernels, uses);
  CompositionModel with_cost = m;
  with_cost.kernel_cost_ms = p.kernels_ms / uses / 4;
  io::save_json_file(folder / kCompositionFile, with_cost.to_json());
  const ModelPrediction c = LatencyPredictor::from_folder(folder).predict_ir(ir);
  EXPECT_NEAR(c.latency_ms, 0.75 * p.kernels_ms * p.composition_factor, 1e-12 * c.latency_ms);
  EXPECT_DOUBLE_EQ(c.to_json()["scaled_kernels"].get<double>(), uses);

  // A corrupt composition.json stops the load with the file's name, never a silent plain sum.
  test::write_text(folder / kCompositionFile, "{\"format_version\": 1, \"c0\": ");
  EXPECT_TRUE(contains(error_of([&] { LatencyPredictor::from_folder(folder); }), (folder / kCompositionFile).string()));
}

}  // namespace
}  // namespace nnmeter
