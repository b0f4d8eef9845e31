// The power-law baseline of the kernel regressor: it carries latency's multiplicative trend, so the
// regressor extrapolates beyond the sampled sizes, and it survives a save/load round trip.
#include <gtest/gtest.h>

#include <cmath>

#include "nnmeter/kernel_training.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

// An element-wise-like kernel: latency ∝ HW²·CIN plus a small fixed cost.
std::pair<FeatureMatrix, std::vector<double>> elementwise_data(int max_hw) {
  FeatureMatrix x;
  std::vector<double> y;
  for (int hw = 2; hw <= max_hw; hw += 2)
    for (int cin = 8; cin <= 256; cin *= 2) {
      x.push_back({static_cast<double>(hw), static_cast<double>(cin)});
      y.push_back(0.0005 + 1e-6 * hw * hw * cin);
    }
  return {x, y};
}

RegressorParams params(bool baseline) {
  RegressorParams p = default_gbdt_params();
  p.power_law_baseline = baseline;
  return p;
}

TEST(PowerLawBaseline, ExtrapolatesBeyondTheSampledSizesWhereTreesAloneCannot) {
  const auto [x, y] = elementwise_data(28);
  // Twice and four times the largest sampled HW.
  const FeatureMatrix far = {{56, 256}, {112, 128}};
  const std::vector<double> truth = {0.0005 + 1e-6 * 56 * 56 * 256, 0.0005 + 1e-6 * 112 * 112 * 128};
  const auto with = KernelRegressor::train(x, y, params(true)).predict(far);
  const auto without = KernelRegressor::train(x, y, params(false)).predict(far);
  for (size_t i = 0; i < far.size(); ++i) {
    EXPECT_LT(std::fabs(with[i] - truth[i]) / truth[i], 0.10) << "row " << i << ": " << with[i] << " vs " << truth[i];
    // Trees alone stop at the largest latency they saw (28x28x256), far below the truth.
    EXPECT_GT(std::fabs(without[i] - truth[i]) / truth[i], 0.5) << "row " << i;
  }
}

TEST(PowerLawBaseline, SaveLoadGivesIdenticalPredictionsAndTheSameFeatureCount) {
  const auto [x, y] = elementwise_data(20);
  const KernelRegressor model = KernelRegressor::train(x, y, params(true), {"HW", "CIN"});
  test::TempDir tmp;
  model.save(tmp / "m.json");
  const KernelRegressor loaded = KernelRegressor::load(tmp / "m.json");
  EXPECT_EQ(loaded.feature_count(), 2u);
  EXPECT_EQ(loaded.feature_names(), (std::vector<std::string>{"HW", "CIN"}));
  EXPECT_EQ(loaded.predict(x), model.predict(x));
  EXPECT_THROW(loaded.predict({{1, 2, 3}}), Error);  // the baseline column is internal, not an input
}

TEST(PowerLawBaseline, CorruptBaselineIsANamedError) {
  const auto [x, y] = elementwise_data(10);
  test::TempDir tmp;
  KernelRegressor::train(x, y, params(true)).save(tmp / "m.json");
  std::string text = test::read_text(tmp / "m.json");
  const size_t at = text.find("\\\"coef\\\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 8, "\\\"coefX\\\"");
  test::write_text(tmp / "m.json", text);
  const std::string error = test::error_of([&] { KernelRegressor::load(tmp / "m.json"); });
  EXPECT_NE(error.find("m.json"), std::string::npos) << error;
  EXPECT_NE(error.find("power-law"), std::string::npos) << error;
}

}  // namespace
}  // namespace nnmeter
