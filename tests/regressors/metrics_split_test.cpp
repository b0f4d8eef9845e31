// nn-Meter's latency metrics, the 80/20 split and the regressor parameter table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "nnmeter/kernel_training.h"

namespace nnmeter {
namespace {

TEST(LatencyMetrics, MatchHandComputedValues) {
  // Relative errors 0.04, 0.09, 0.145, 0 (kept away from the 5/10/15 % boundaries).
  const std::vector<double> y_true = {10, 20, 40, 50};
  const std::vector<double> y_pred = {10.4, 21.8, 34.2, 50};
  const LatencyMetrics m = latency_metrics(y_pred, y_true);
  EXPECT_EQ(m.count, 4u);
  EXPECT_NEAR(m.rmse, std::sqrt((0.16 + 3.24 + 33.64 + 0) / 4), 1e-12);
  EXPECT_NEAR(m.rmspe, 100 * std::sqrt((0.0016 + 0.0081 + 0.021025 + 0) / 4), 1e-9);
  EXPECT_NEAR(m.rmse_over_mean, std::sqrt((0.16 + 3.24 + 33.64) / 4) / 30, 1e-12);
  EXPECT_DOUBLE_EQ(m.acc5, 0.5);
  EXPECT_DOUBLE_EQ(m.acc10, 0.75);
  EXPECT_DOUBLE_EQ(m.acc15, 1.0);
}

TEST(LatencyMetrics, ErrorIsRelativeToTheMeasurement) {
  // Over-prediction by 10 % of the truth counts as within 10 %; the divisor is y_true, not y_pred.
  EXPECT_NEAR(relative_error(2.2, 2.0), 0.1, 1e-12);
  EXPECT_NEAR(relative_error(2.0, 2.2), 0.2 / 2.2, 1e-12);
  const LatencyMetrics m = latency_metrics({1.5}, {1.0});
  EXPECT_DOUBLE_EQ(m.rmspe, 50.0);
  EXPECT_DOUBLE_EQ(m.acc15, 0.0);
}

TEST(LatencyMetrics, RejectsBadInput) {
  EXPECT_THROW(latency_metrics({1.0, 2.0}, {1.0}), Error);
  EXPECT_THROW(latency_metrics({}, {}), Error);
  EXPECT_THROW(latency_metrics({1.0}, {0.0}), Error);
}

TEST(LatencyMetrics, JsonRoundTrip) {
  const LatencyMetrics m = latency_metrics({10.4, 21.8, 34.2, 50}, {10, 20, 40, 50});
  const LatencyMetrics back = LatencyMetrics::from_json(m.to_json());
  EXPECT_EQ(back.to_json(), m.to_json());
}

TEST(TrainTestSplit, EightyTwentyPartitionOfAllRows) {
  for (size_t n : {2u, 5u, 100u, 101u, 1234u}) {
    const SplitIndices s = train_test_split(n);
    EXPECT_EQ(s.test.size(), static_cast<size_t>(std::ceil(0.2 * static_cast<double>(n)))) << n;
    EXPECT_EQ(s.train.size() + s.test.size(), n);
    std::set<size_t> all(s.train.begin(), s.train.end());
    all.insert(s.test.begin(), s.test.end());
    EXPECT_EQ(all.size(), n);
    EXPECT_EQ(*all.rbegin(), n - 1);
  }
}

TEST(TrainTestSplit, DeterministicPerSeedAndShuffled) {
  const SplitIndices a = train_test_split(500, 0.2, 10), b = train_test_split(500, 0.2, 10);
  EXPECT_EQ(a.train, b.train);
  EXPECT_EQ(a.test, b.test);
  const SplitIndices c = train_test_split(500, 0.2, 11);
  EXPECT_NE(a.test, c.test);
  // Shuffled: the test part is not simply the first or last 100 rows.
  EXPECT_FALSE(std::is_sorted(a.test.begin(), a.test.end()));
  EXPECT_LT(*std::min_element(a.test.begin(), a.test.end()), 400u);
  EXPECT_GE(*std::max_element(a.test.begin(), a.test.end()), 100u);
}

TEST(TrainTestSplit, NeedsTwoRows) {
  EXPECT_THROW(train_test_split(1), Error);
  EXPECT_THROW(train_test_split(0), Error);
}

TEST(RegressorParams, ReproducesNnMeterTable) {
  RegressorParams p = default_regressor_params("conv-bn-relu", "tflite_cpu");
  EXPECT_EQ(p.mode, RegressorMode::random_forest);
  EXPECT_EQ(p.max_depth, 70);
  EXPECT_EQ(p.n_estimators, 320);
  EXPECT_EQ(p.max_features, 6);
  EXPECT_EQ(p.seed, 10u);
  p = default_regressor_params("conv-bn-relu", "tflite_gpu");
  EXPECT_EQ(std::tie(p.max_depth, p.n_estimators, p.max_features), std::make_tuple(80, 550, 5));
  p = default_regressor_params("dwconv-bn-relu", "openvino_vpu");
  EXPECT_EQ(std::tie(p.max_depth, p.n_estimators, p.max_features), std::make_tuple(100, 650, 5));
  p = default_regressor_params("se", "tflite_cpu");
  EXPECT_EQ(std::tie(p.max_depth, p.n_estimators, p.max_features), std::make_tuple(20, 290, 2));
}

TEST(RegressorParams, OtherBackendsUseTheTfliteCpuRow) {
  for (const char* kernel : {"conv-bn-relu", "fc", "concat", "add"}) {
    const RegressorParams a = default_regressor_params(kernel, "onednn_cpu");
    const RegressorParams b = default_regressor_params(kernel, "tflite_cpu");
    EXPECT_EQ(a.to_json(), b.to_json()) << kernel;
  }
}

TEST(RegressorParams, ConvVariantsShareTheConvAndDwconvRows) {
  const RegressorParams conv = default_regressor_params("conv-bn-relu", "tflite_cpu");
  const RegressorParams dw = default_regressor_params("dwconv-bn-relu", "tflite_cpu");
  EXPECT_EQ(default_regressor_params("conv-bn-hswish", "tflite_cpu").to_json(), conv.to_json());
  EXPECT_EQ(default_regressor_params("conv-bn-relu6", "tflite_cpu").to_json(), conv.to_json());
  EXPECT_EQ(default_regressor_params("dwconv-bn", "tflite_cpu").to_json(), dw.to_json());
  EXPECT_NE(conv.to_json(), dw.to_json());
}

TEST(RegressorParams, UntunedKernelsGetTheFixedAutoFallback) {
  // nn-Meter passes max_features="auto" here, which scikit-learn >= 1.3 rejects; 0 = all features.
  for (auto [kernel, backend] : {std::pair{"mykernel", "tflite_cpu"}, std::pair{"channelshuffle", "tflite_gpu"},
                                 std::pair{"split", "openvino_vpu"}}) {
    const RegressorParams p = default_regressor_params(kernel, backend);
    EXPECT_EQ(std::tie(p.max_depth, p.n_estimators, p.max_features), std::make_tuple(50, 370, 0)) << kernel;
  }
}

TEST(RegressorParams, JsonRoundTripAndValidation) {
  RegressorParams p = default_gbdt_params();
  p.log_target = false;
  p.threads = 3;
  EXPECT_EQ(RegressorParams::from_json(p.to_json(), "test").to_json(), p.to_json());
  EXPECT_THROW(RegressorParams::from_json({{"n_estimator", 5}}, "test"), Error);  // misspelled key
  EXPECT_THROW(RegressorParams::from_json({{"mode", "svm"}}, "test"), Error);
  EXPECT_THROW(RegressorParams::from_json({{"subsample", 0}}, "test"), Error);
  EXPECT_THROW(RegressorParams::from_json({{"max_depth", "deep"}}, "test"), Error);
  try {
    RegressorParams::from_json({{"eta", 2.0}}, "ws/predictorbuild_config.yaml");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ws/predictorbuild_config.yaml"), std::string::npos);
  }
}

}  // namespace
}  // namespace nnmeter
