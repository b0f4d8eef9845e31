// KernelRegressor (XGBoost) and train_kernel_predictor on the synthetic conv-like dataset.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "regressors/synthetic_conv.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

using test::error_of;

// A small forest: enough to check plumbing without the cost of the 320-tree default.
RegressorParams small_rf() {
  RegressorParams p = default_regressor_params("conv-bn-relu", "onednn_cpu");
  p.n_estimators = 20;
  return p;
}

// Held-out accuracy of the default (log-target) regressors on 2000 synthetic samples; the fixed seeds
// make these exact numbers reproducible, the thresholds leave a margin. Measured: rf 0.917, gbdt 0.958
// (raw target: rf 0.537, gbdt 0.453) — see docs/notes-predictor.md.
TEST(KernelTraining, RandomForestLearnsConvLatencyWithin10Percent) {
  const KernelDataset data = test::synthetic_conv_dataset(2000, 1);
  const TrainResult r = train_kernel_predictor(data, default_regressor_params("conv-bn-relu", "onednn_cpu"), 0.1);
  ASSERT_TRUE(r.metrics);
  EXPECT_EQ(r.metrics->count, 400u);
  EXPECT_GE(r.metrics->acc10, 0.88);
  EXPECT_LT(r.metrics->rmspe, 8.0);
  // A separate fresh set, not only the internal 20 %.
  const KernelDataset fresh = test::synthetic_conv_dataset(1000, 2);
  EXPECT_GE(latency_metrics(r.model.predict(fresh.features), fresh.labels).acc10, 0.88);
}

TEST(KernelTraining, GradientBoostingLearnsConvLatencyWithin10Percent) {
  const KernelDataset data = test::synthetic_conv_dataset(2000, 1);
  const TrainResult r = train_kernel_predictor(data, default_gbdt_params(), 0.1);
  ASSERT_TRUE(r.metrics);
  EXPECT_GE(r.metrics->acc10, 0.92);
  const KernelDataset fresh = test::synthetic_conv_dataset(1000, 2);
  EXPECT_GE(latency_metrics(r.model.predict(fresh.features), fresh.labels).acc10, 0.92);
}

TEST(KernelTraining, LogTargetBeatsRawTargetOnRelativeError) {
  // Latencies span orders of magnitude; squared error on raw ms ignores the small kernels.
  const KernelDataset data = test::synthetic_conv_dataset(1000, 1);
  RegressorParams p = small_rf();
  const TrainResult log_fit = train_kernel_predictor(data, p, 0.1);
  p.log_target = false;
  const TrainResult raw_fit = train_kernel_predictor(data, p, 0.1);
  EXPECT_GT(log_fit.metrics->acc10, raw_fit.metrics->acc10 + 0.1);
  EXPECT_LT(log_fit.metrics->rmspe, raw_fit.metrics->rmspe);
}

TEST(KernelTraining, TrainingIsDeterministicForASeed) {
  const KernelDataset data = test::synthetic_conv_dataset(300, 3);
  const TrainResult a = train_kernel_predictor(data, small_rf(), 0.1);
  const TrainResult b = train_kernel_predictor(data, small_rf(), 0.1);
  EXPECT_EQ(a.model.predict(data.features), b.model.predict(data.features));
}

TEST(KernelTraining, ErrorPointsAreTheTestPointsAboveThreshold) {
  const KernelDataset data = test::synthetic_conv_dataset(300, 4);
  const TrainResult r = train_kernel_predictor(data, small_rf(), 0.05);
  ASSERT_EQ(r.test_points.size(), 60u);
  std::vector<size_t> expected;
  for (const TestPoint& t : r.test_points) {
    EXPECT_DOUBLE_EQ(t.y_true, data.labels[t.index]);
    EXPECT_DOUBLE_EQ(t.error, relative_error(t.y_pred, t.y_true));
    if (t.error > 0.05) expected.push_back(t.index);
  }
  EXPECT_FALSE(expected.empty());  // a 20-tree forest is not that good; otherwise the check is vacuous
  EXPECT_EQ(r.error_indices, expected);
  ASSERT_EQ(r.error_configs.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(r.error_configs[i], data.configs[expected[i]]);
  // Test rows are those of train_test_split over the valid rows.
  const SplitIndices split = train_test_split(300, 0.2, 10);
  for (size_t i = 0; i < split.test.size(); ++i) EXPECT_EQ(r.test_points[i].index, split.test[i]);
}

TEST(KernelTraining, NoConfigsMeansIndicesOnly) {
  KernelDataset data = test::synthetic_conv_dataset(200, 5);
  data.configs.clear();
  const TrainResult r = train_kernel_predictor(data, small_rf(), -1.0);  // every test point is an error point
  EXPECT_EQ(r.error_indices.size(), 40u);
  EXPECT_TRUE(r.error_configs.empty());
}

TEST(KernelTraining, FailedSamplesAreDropped) {
  KernelDataset data = test::synthetic_conv_dataset(200, 6);
  data.labels[3] = 0.0;
  data.labels[17] = -1.0;
  data.labels[50] = std::nan("");
  const TrainResult r = train_kernel_predictor(data, small_rf(), -1.0);
  EXPECT_EQ(r.sample_count, 197u);
  EXPECT_EQ(r.dropped_count, 3u);
  EXPECT_EQ(r.test_points.size(), 40u);  // ceil(0.2 * 197)
  for (const TestPoint& t : r.test_points) EXPECT_GT(data.labels[t.index], 0.0);
  const TrainResult f = train_kernel_predictor(data, small_rf(), 0.1, TrainMode::final);
  EXPECT_EQ(f.sample_count, 197u);
}

TEST(KernelTraining, AllFailedSamplesIsAnErrorPointingToTheLog) {
  KernelDataset data = test::synthetic_conv_dataset(20, 7);
  std::fill(data.labels.begin(), data.labels.end(), 0.0);
  const std::string msg = error_of([&] { train_kernel_predictor(data, small_rf(), 0.1, TrainMode::split, "fc"); });
  EXPECT_NE(msg.find("profile_error.log"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fc"), std::string::npos) << msg;
  EXPECT_THROW(train_kernel_predictor(data, small_rf(), 0.1, TrainMode::final), Error);
}

TEST(KernelTraining, MismatchedInputIsAnError) {
  KernelDataset data = test::synthetic_conv_dataset(20, 8);
  data.labels.pop_back();
  EXPECT_THROW(train_kernel_predictor(data, small_rf(), 0.1), Error);
  data = test::synthetic_conv_dataset(20, 8);
  data.features[5].pop_back();
  EXPECT_THROW(train_kernel_predictor(data, small_rf(), 0.1), Error);
  data = test::synthetic_conv_dataset(20, 8);
  data.configs.pop_back();
  EXPECT_THROW(train_kernel_predictor(data, small_rf(), 0.1), Error);
}

TEST(KernelTraining, FinalModeFitsAllDataWithoutMetrics) {
  const KernelDataset data = test::synthetic_conv_dataset(200, 9);
  const TrainResult r = train_kernel_predictor(data, small_rf(), 0.1, TrainMode::final);
  EXPECT_FALSE(r.metrics);
  EXPECT_TRUE(r.test_points.empty());
  EXPECT_TRUE(r.error_indices.empty());
  EXPECT_EQ(r.sample_count, 200u);
  EXPECT_EQ(r.model.predict(data.features).size(), 200u);
}

TEST(KernelTraining, TestResultCsvHasNnMeterColumns) {
  test::TempDir dir;
  const KernelDataset data = test::synthetic_conv_dataset(100, 10);
  const TrainResult r = train_kernel_predictor(data, small_rf(), 0.1);
  const fs::path csv = dir / "collection" / "TestResult_conv-bn-relu_prior.csv";
  write_test_result_csv(csv, data, r);
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, "feature0,feature1,feature2,feature3,feature4,feature5,feature6,True,Pred,Error");
  size_t lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_EQ(std::count(line.begin(), line.end(), ','), 9) << line;
  }
  EXPECT_EQ(lines, 20u);
}

TEST(KernelRegressor, SaveLoadGivesIdenticalPredictions) {
  test::TempDir dir;
  const KernelDataset data = test::synthetic_conv_dataset(300, 11);
  for (RegressorParams p : {small_rf(), default_gbdt_params()}) {
    p.log_target = p.mode == RegressorMode::gbdt;  // cover both transforms
    const KernelRegressor model = KernelRegressor::train(data.features, data.labels, p, data.feature_names);
    const fs::path file = dir / (std::string(to_string(p.mode)) + ".json");
    model.save(file);
    const KernelRegressor loaded = KernelRegressor::load(file);
    EXPECT_EQ(loaded.predict(data.features), model.predict(data.features));
    EXPECT_EQ(loaded.feature_names(), data.feature_names);
    EXPECT_EQ(loaded.feature_count(), 7u);
    EXPECT_EQ(loaded.log_target(), p.log_target);
  }
}

TEST(KernelRegressor, BatchPredictionEqualsRowByRow) {
  const KernelDataset data = test::synthetic_conv_dataset(200, 12);
  const KernelRegressor model = KernelRegressor::train(data.features, data.labels, small_rf());
  const std::vector<double> batch = model.predict(data.features);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(model.predict({data.features[i]}).front(), batch[i]);
  EXPECT_TRUE(model.predict({}).empty());
  EXPECT_THROW(model.predict({{1.0, 2.0}}), Error);  // wrong width
  EXPECT_EQ(model.feature_names().front(), "feature_0");  // default names
}

TEST(KernelRegressor, MissingOrCorruptModelFileNamesTheFile) {
  test::TempDir dir;
  const fs::path missing = dir / "nothere.json";
  EXPECT_NE(error_of([&] { KernelRegressor::load(missing); }).find(missing.string()), std::string::npos);

  const KernelDataset data = test::synthetic_conv_dataset(100, 13);
  const fs::path good = dir / "good.json";
  KernelRegressor::train(data.features, data.labels, small_rf()).save(good);
  const std::string text = test::read_text(good);

  const fs::path truncated = dir / "truncated.json";
  test::write_text(truncated, text.substr(0, text.size() / 2));
  const fs::path not_model = dir / "not_model.json";
  test::write_text(not_model, R"({"learner": 3})");
  const fs::path foreign = dir / "foreign.json";  // a valid XGBoost model without nn-meter's attributes
  Json j = Json::parse(text);
  j["learner"]["attributes"] = Json::object();
  test::write_text(foreign, j.dump());
  for (const fs::path& f : {truncated, not_model, foreign}) {
    const std::string msg = error_of([&] { KernelRegressor::load(f); });
    EXPECT_NE(msg.find(f.string()), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(KernelRegressor, EmptyOrBadTrainingInputIsAnError) {
  EXPECT_THROW(KernelRegressor::train({}, {}, small_rf()), Error);
  EXPECT_THROW(KernelRegressor::train({{1.0}, {2.0}}, {1.0}, small_rf()), Error);
  EXPECT_THROW(KernelRegressor::train({{1.0}, {2.0}}, {1.0, 0.0}, small_rf()), Error);  // log of 0
  EXPECT_THROW(KernelRegressor::train({{1.0}, {2.0}}, {1.0, 2.0}, small_rf(), {"a", "b"}), Error);
  const KernelRegressor empty;
  EXPECT_THROW(empty.predict({{1.0}}), Error);
}

}  // namespace
}  // namespace nnmeter
