// The trees of a trained XGBoost gbtree model, evaluated here instead of through XGBoost's in-place
// predict: a model-level prediction makes ~15 small batched calls, and XGBoost's per-call setup (array
// interface JSON, proxy matrix, thread pool) plus its block-of-rows traversal cost more than the trees.
// The result is XGBoost's bit for bit: float base score, then each tree's leaf added in tree order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter {

class TreeEnsemble {
 public:
  // From XGBoost's JSON model (the document as saved; unneeded per-node statistics may be left out), with
  // the feature count it declares (learner_model_param.num_feature). A model this class cannot evaluate
  // exactly (not gbtree, categorical splits, several targets) or one that is not structurally sound (links
  // out of range, cycles, splits on features beyond the count, non-finite values) → one-line Error naming
  // `origin` and the tree.
  static TreeEnsemble from_xgboost_json(const Json& model, const std::string& origin);

  size_t feature_count() const { return feature_count_; }

  // The ensemble as bytes (the predictor folder's tree cache, regressors/model_cache.h), appended to `out`,
  // and read back from the front of `in`, which is advanced past them. The bytes are this machine's
  // native layout: the cache never leaves the folder it was written in. Reading checks the structure as
  // from_xgboost_json does (links, features, values), so damaged bytes give an Error, never a bad read.
  void append_bytes(std::string& out) const;
  static TreeEnsemble from_bytes(std::string_view& in, const std::string& origin);

  // The raw margins of `count` rows of feature values stored one after another (NaN = missing, takes the
  // default branch). Tree by tree over all rows, so each tree is read from memory once per batch; every
  // row still adds its leaves in tree order, as XGBoost does.
  void predict(const float* rows, size_t count, float* margins) const;

 private:
  // XGBoost allocates a node's children together (right = left + 1) and relies on it when predicting;
  // so does this class, which makes the step down the tree branch-free.
  struct Node {
    int32_t left = -1;  // -1: a leaf, whose value is `value`
    uint32_t feature = 0;
    float value = 0;  // split threshold (go left when x < value) or leaf value
    bool default_left = false;
  };

  float base_score_ = 0;
  size_t feature_count_ = 0;
  std::vector<Node> nodes_;       // all trees, each tree's node ids offset to its root
  std::vector<int32_t> roots_;
};

}  // namespace nnmeter
