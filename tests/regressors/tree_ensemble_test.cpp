// KernelRegressor evaluates the trees itself; its predictions must be XGBoost's own, bit for bit.
#include <gtest/gtest.h>
#include <xgboost/c_api.h>

#include <cmath>
#include <cstring>

#include "common/io.h"
#include "regressors/power_law.h"
#include "regressors/tree_ensemble.h"
#include "regressors/synthetic_conv.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

// What the saved model predicts through XGBoost's in-place predict, including the baseline column and
// the log transform, as KernelRegressor predicted before it evaluated the trees itself.
std::vector<double> xgboost_predict(const fs::path& file, const FeatureMatrix& rows) {
  const std::string text = io::read_file(file);
  BoosterHandle b = nullptr;
  EXPECT_EQ(XGBoosterCreate(nullptr, 0, &b), 0);
  EXPECT_EQ(XGBoosterLoadModelFromBuffer(b, text.data(), text.size()), 0);
  const char* law_text = nullptr;
  int has_law = 0;
  EXPECT_EQ(XGBoosterGetAttr(b, "nnmeter_power_law", &law_text, &has_law), 0);
  const size_t cols = rows.front().size();
  std::optional<PowerLaw> law;
  if (has_law) law = PowerLaw::from_json(Json::parse(law_text), cols, "test");
  std::vector<float> input;
  std::vector<double> base;
  for (const auto& r : rows) {
    const std::vector<float> row(r.begin(), r.end());
    input.insert(input.end(), row.begin(), row.end());
    if (law) base.push_back(law->eval(row.data()));
    if (law) input.push_back(static_cast<float>(base.back()));
  }
  const Json array = {{"data", {reinterpret_cast<uintptr_t>(input.data()), true}},
                      {"shape", {rows.size(), cols + (law ? 1 : 0)}},
                      {"typestr", "<f4"},
                      {"version", 3}};
  const char* config =
      R"({"type":0,"training":false,"iteration_begin":0,"iteration_end":0,"strict_shape":false,"missing":NaN,"cache_id":0})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  EXPECT_EQ(XGBoosterPredictFromDense(b, array.dump().c_str(), config, nullptr, &shape, &dim, &result), 0);
  const char* transform = nullptr;
  int has_transform = 0;
  EXPECT_EQ(XGBoosterGetAttr(b, "nnmeter_target_transform", &transform, &has_transform), 0);
  const bool log = std::string(transform) == "log";
  std::vector<double> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double v = result[i] + (law ? base[i] : 0.0);
    out.push_back(log ? std::exp(v) : v);
  }
  XGBoosterFree(b);
  return out;
}

// `missing`: some features NaN, which take each split's default branch (not with a baseline: the power
// law of a NaN is NaN). Rows repeat, as a network's blocks do.
void expect_same_as_xgboost(const RegressorParams& p, const std::string& label, bool missing = false) {
  const KernelDataset train = test::synthetic_conv_dataset(300, 1);
  FeatureMatrix rows = test::synthetic_conv_dataset(200, 2).features;
  rows.insert(rows.end(), rows.begin(), rows.begin() + 20);
  if (missing)
    for (size_t i = 0; i < rows.size(); i += 3) rows[i][i % rows[i].size()] = std::nan("");
  test::TempDir dir;
  const fs::path file = dir.path() / "model.json";
  KernelRegressor::train(train.features, train.labels, p).save(file);
  const std::vector<double> ours = KernelRegressor::load(file).predict(rows);
  const std::vector<double> theirs = xgboost_predict(file, rows);
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(ours[i], theirs[i]) << label << " row " << i;
}

TEST(TreeEnsemble, PredictsExactlyAsXgboost) {
  RegressorParams gbdt = default_gbdt_params();
  gbdt.rounds = 60;
  expect_same_as_xgboost(gbdt, "gbdt, log target, power-law baseline");
  gbdt.power_law_baseline = false;
  expect_same_as_xgboost(gbdt, "gbdt, log target", true);
  gbdt.log_target = false;
  expect_same_as_xgboost(gbdt, "gbdt, raw target");
  RegressorParams rf = default_regressor_params("conv-bn-relu", "onednn_cpu");
  rf.n_estimators = 30;
  expect_same_as_xgboost(rf, "random forest");
}

// The bytes of the predictor folder's tree cache: the same margins back, and damaged bytes refused.
TEST(TreeEnsemble, BytesRoundTripAndDamageIsRefused) {
  RegressorParams p = default_regressor_params("conv-bn-relu", "onednn_cpu");
  p.n_estimators = 20;
  p.power_law_baseline = false;
  const KernelDataset train = test::synthetic_conv_dataset(200, 1);
  test::TempDir dir;
  KernelRegressor::train(train.features, train.labels, p).save(dir / "m.json");
  const TreeEnsemble trees = TreeEnsemble::from_xgboost_json(io::load_json_file(dir / "m.json"), "m");
  std::string bytes;
  trees.append_bytes(bytes);
  std::string_view in = bytes;
  const TreeEnsemble back = TreeEnsemble::from_bytes(in, "cache");
  EXPECT_TRUE(in.empty());
  const FeatureMatrix rows = test::synthetic_conv_dataset(100, 2).features;
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  std::vector<float> want(rows.size()), got(rows.size());
  trees.predict(flat.data(), rows.size(), want.data());
  back.predict(flat.data(), rows.size(), got.data());
  EXPECT_EQ(got, want);

  // Layout: base score (4), feature count (8), root count (8) + roots (4 each), node count (8) + left links.
  uint64_t roots = 0;
  std::memcpy(&roots, bytes.data() + 12, 8);
  const size_t left = 12 + 8 + 4 * roots + 8;
  const auto refused = [&](int32_t link) {
    std::string damaged = bytes;
    std::memcpy(damaged.data() + left, &link, 4);  // the first tree's root
    std::string_view view = damaged;
    return test::error_of([&] { TreeEnsemble::from_bytes(view, "cache"); });
  };
  EXPECT_TRUE(test::contains(refused(0), "cache: tree 0 is not a tree")) << refused(0);
  EXPECT_TRUE(test::contains(refused(1 << 30), "cache: tree 0 links or splits out of range")) << refused(1 << 30);
  for (size_t cut : {size_t{0}, size_t{3}, bytes.size() / 2, bytes.size() - 1}) {
    std::string_view view(bytes.data(), cut);
    EXPECT_TRUE(test::contains(test::error_of([&] { TreeEnsemble::from_bytes(view, "cache"); }), "cache is truncated")) << cut;
  }
}

}  // namespace
}  // namespace nnmeter
