#include "predictor/tree_ensemble.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace nnmeter {

namespace {

const Json& member(const Json& j, const char* key, const std::string& origin) {
  auto it = j.find(key);
  if (it == j.end()) throw Error(origin + " is not a complete XGBoost model (no '" + key + "'): rebuild the predictor");
  return *it;
}

}  // namespace

TreeEnsemble TreeEnsemble::from_xgboost_json(const Json& model, size_t feature_count, const std::string& origin) {
  const Json& learner = member(model, "learner", origin);
  const Json& booster = member(learner, "gradient_booster", origin);
  const Json& param = member(learner, "learner_model_param", origin);
  const std::string num_target = param.value("num_target", "1"), num_class = param.value("num_class", "0");
  if (booster.value("name", "") != "gbtree" || num_target != "1" || num_class != "0")
    throw Error(origin + " is not a single-target gbtree model, which nn-meter does not predict with");
  TreeEnsemble e;
  e.feature_count_ = feature_count;
  // XGBoost writes the float with enough digits to read it back exactly.
  e.base_score_ = std::strtof(member(param, "base_score", origin).get<std::string>().c_str(), nullptr);
  for (const Json& tree : member(member(booster, "model", origin), "trees", origin)) {
    const auto left = member(tree, "left_children", origin).get<std::vector<int32_t>>();
    const auto right = member(tree, "right_children", origin).get<std::vector<int32_t>>();
    const auto feature = member(tree, "split_indices", origin).get<std::vector<uint32_t>>();
    const auto value = member(tree, "split_conditions", origin).get<std::vector<float>>();
    const auto default_left = member(tree, "default_left", origin).get<std::vector<int>>();
    const auto type = member(tree, "split_type", origin).get<std::vector<int>>();
    const size_t n = left.size();
    if (n == 0 || right.size() != n || feature.size() != n || value.size() != n || default_left.size() != n || type.size() != n)
      throw Error(origin + " has a tree whose node arrays differ in length: rebuild the predictor");
    const auto offset = static_cast<int32_t>(e.nodes_.size());
    e.roots_.push_back(offset);
    for (size_t i = 0; i < n; ++i) {
      if (type[i] != 0) throw Error(origin + " has categorical splits, which nn-meter does not predict with");
      const bool leaf = left[i] < 0;
      if (!leaf && (right[i] != left[i] + 1 || right[i] >= static_cast<int32_t>(n) || feature[i] >= feature_count))
        throw Error(origin + " has a tree with a child or feature out of range: rebuild the predictor");
      e.nodes_.push_back({leaf ? -1 : left[i] + offset, feature[i], value[i], default_left[i] != 0});
    }
  }
  return e;
}

void TreeEnsemble::predict(const float* rows, size_t count, float* margins) const {
  std::fill(margins, margins + count, base_score_);
  std::vector<const Node*> at(count);
  for (int32_t root : roots_) {
    // All rows descend one level at a time: their node loads do not depend on each other, so they overlap
    // instead of forming one chain of cache misses per row.
    std::fill(at.begin(), at.end(), &nodes_[static_cast<size_t>(root)]);
    for (bool descending = true; descending;) {
      descending = false;
      for (size_t r = 0; r < count; ++r) {
        const Node* node = at[r];
        if (node->left < 0) continue;
        const float x = rows[r * feature_count_ + node->feature];
        const bool right = std::isnan(x) ? !node->default_left : !(x < node->value);
        at[r] = &nodes_[static_cast<size_t>(node->left + right)];
        descending = true;
      }
    }
    for (size_t r = 0; r < count; ++r) margins[r] += at[r]->value;
  }
}

}  // namespace nnmeter
