// Model files are checked structurally on load: a tree whose links point back made predict()
// spin forever, and out-of-range links or features read outside the node and row arrays. Each defect is
// one Error naming the file and the tree.
#include <gtest/gtest.h>

#include "common/io.h"
#include "regressors/synthetic_conv.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

using test::contains;
using test::error_of;

class TreeValidation : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RegressorParams p = default_gbdt_params();
    p.rounds = 3;
    p.max_depth = 3;
    const KernelDataset d = test::synthetic_conv_dataset(100, 3);
    test::TempDir dir;
    KernelRegressor::train(d.features, d.labels, p).save(dir / "m.json");
    model_ = new Json(Json::parse(test::read_text(dir / "m.json")));
  }
  static void TearDownTestSuite() { delete model_; }

  static Json& tree(Json& m, size_t i) { return m["learner"]["gradient_booster"]["model"]["trees"][i]; }

  // The load error of `m` saved as a file.
  std::string load_error(const Json& m) {
    io::save_json_file(dir_ / "model.json", m);
    return error_of([&] { KernelRegressor::load(dir_ / "model.json"); });
  }

  void expect_refused(const Json& m, const std::string& expected) {
    const std::string e = load_error(m);
    EXPECT_TRUE(contains(e, (dir_ / "model.json").string())) << e;
    EXPECT_TRUE(contains(e, expected)) << e;
    EXPECT_FALSE(contains(e, "\n")) << e;
  }

  static Json* model_;
  test::TempDir dir_;
};
Json* TreeValidation::model_ = nullptr;

TEST_F(TreeValidation, TheTrainedModelLoads) { EXPECT_EQ(load_error(*model_), ""); }

TEST_F(TreeValidation, CyclesAreRejected) {
  Json self = *model_;
  tree(self, 0)["left_children"][0] = 0;  // the root's children: itself and node 1
  tree(self, 0)["right_children"][0] = 1;
  expect_refused(self, "tree 0 is not a tree: node 0 is reached twice");
  Json back = *model_;
  const auto left = tree(back, 1)["left_children"][0].get<size_t>();
  ASSERT_GE(left, 1u);
  tree(back, 1)["left_children"][left] = 0;  // a child of the root points back up
  tree(back, 1)["right_children"][left] = 1;
  expect_refused(back, "tree 1 is not a tree");
}

TEST_F(TreeValidation, LinksAndFeaturesMustBeInRange) {
  Json far = *model_;
  const size_t n = tree(far, 0)["left_children"].size();
  tree(far, 0)["left_children"][0] = n + 5;
  tree(far, 0)["right_children"][0] = n + 6;
  expect_refused(far, "tree 0: node 0 has children");
  Json apart = *model_;
  tree(apart, 0)["right_children"][0] = tree(apart, 0)["left_children"][0].get<int64_t>() + 2;
  expect_refused(apart, "not stored together");
  Json feature = *model_;
  tree(feature, 2)["split_indices"][0] = 99;
  expect_refused(feature, "tree 2: node 0 splits on feature 99, but the model has");
  Json negative = *model_;
  tree(negative, 0)["split_indices"][0] = -1;
  expect_refused(negative, "splits on feature -1");
  Json huge = *model_;
  tree(huge, 0)["left_children"][0] = int64_t{1} << 40;
  expect_refused(huge, "not a node or feature index");
  Json text = *model_;
  tree(text, 0)["left_children"][0] = "1";
  expect_refused(text, "'left_children' holds \"1\"");
}

TEST_F(TreeValidation, ValuesMustBeFinite) {
  Json split = *model_;
  tree(split, 0)["split_conditions"][0] = 1e39;  // beyond float
  expect_refused(split, "tree 0: 'split_conditions' holds 1e+39, not a finite value");
  Json base = *model_;
  base["learner"]["learner_model_param"]["base_score"] = "nan";
  expect_refused(base, "has base_score 'nan', not a finite number");
}

TEST_F(TreeValidation, ArraysAndCountsMustAgree) {
  Json shorter = *model_;
  tree(shorter, 0)["split_type"].erase(0);
  expect_refused(shorter, "tree 0 has node arrays of different lengths");
  Json zero = *model_;
  zero["learner"]["learner_model_param"]["num_feature"] = "0";
  expect_refused(zero, "has num_feature '0', not a feature count");
  Json fewer = *model_;
  fewer["learner"]["learner_model_param"]["num_feature"] = "2";
  expect_refused(fewer, "but the model has 2 features");
}

}  // namespace
}  // namespace nnmeter
