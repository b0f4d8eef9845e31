#include "regressors/tree_ensemble.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "common/bytes.h"

namespace nnmeter {

namespace {

const Json& member(const Json& j, const char* key, const std::string& origin) {
  if (!j.is_object()) throw Error(origin + " is not a complete XGBoost model (a mapping is expected where '" + key + "' is): rebuild the predictor");
  auto it = j.find(key);
  if (it == j.end()) throw Error(origin + " is not a complete XGBoost model (no '" + key + "'): rebuild the predictor");
  return *it;
}

// The node arrays of one tree, read without trusting their JSON types: a fraction, a string or an
// out-of-range index is a corrupt file, never a conversion.
struct TreeArrays {
  std::vector<int64_t> left, right, feature, default_left, type;
  std::vector<double> value;
};

// `key`'s list, each entry accepted by `valid` (else an Error saying it is not `what`).
template <class T, class Valid>
std::vector<T> entries(const Json& tree, const char* key, const std::string& where, Valid valid, const char* what) {
  const Json& a = member(tree, key, where);
  if (!a.is_array()) throw Error(where + ": '" + key + "' is not a list: rebuild the predictor");
  std::vector<T> out;
  out.reserve(a.size());
  for (const Json& v : a) {
    if (!valid(v)) throw Error(where + ": '" + key + "' holds " + v.dump() + ", not " + what + ": rebuild the predictor");
    out.push_back(v.get<T>());
  }
  return out;
}

std::vector<int64_t> integers(const Json& tree, const char* key, const std::string& where) {
  const auto index = [](const Json& v) {
    return v.is_number_integer() && !(v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT32_MAX}) &&
           v.get<int64_t>() >= INT32_MIN && v.get<int64_t>() <= INT32_MAX;
  };
  return entries<int64_t>(tree, key, where, index, "a node or feature index");
}

std::vector<double> finite_numbers(const Json& tree, const char* key, const std::string& where) {
  // Evaluated as float, so a double beyond float range is as unusable as inf.
  const auto finite = [](const Json& v) {
    return v.is_number() && std::fabs(v.get<double>()) <= static_cast<double>(std::numeric_limits<float>::max());
  };
  return entries<double>(tree, key, where, finite, "a finite value");
}

TreeArrays read_tree(const Json& tree, const std::string& where) {
  TreeArrays t{integers(tree, "left_children", where), integers(tree, "right_children", where),
               integers(tree, "split_indices", where), integers(tree, "default_left", where),
               integers(tree, "split_type", where),    finite_numbers(tree, "split_conditions", where)};
  const size_t n = t.left.size();
  if (n == 0 || t.right.size() != n || t.feature.size() != n || t.value.size() != n || t.default_left.size() != n ||
      t.type.size() != n)
    throw Error(where + " has node arrays of different lengths: rebuild the predictor");
  return t;
}

// Every node reachable from the root once: children in range and stored together (right = left + 1, which
// predict() relies on), splits on existing features, no child leading back up or shared by two parents
// (either would make predict() loop forever or visit a subtree twice). Unreachable nodes are allowed:
// XGBoost keeps pruned ones; they come back as false.
std::vector<bool> check_structure(const TreeArrays& t, size_t feature_count, const std::string& where) {
  const auto n = static_cast<int64_t>(t.left.size());
  std::vector<bool> seen(t.left.size(), false);
  std::vector<int64_t> stack = {0};
  while (!stack.empty()) {
    const int64_t i = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(i)])
      throw Error(fmt::format("{} is not a tree: node {} is reached twice (its links form a cycle or join): rebuild the predictor", where, i));
    seen[static_cast<size_t>(i)] = true;
    const auto k = static_cast<size_t>(i);
    if (t.type[k] != 0) throw Error(where + " has categorical splits, which nn-meter does not predict with");
    if (t.left[k] < 0) continue;
    if (t.left[k] >= n || t.right[k] != t.left[k] + 1 || t.right[k] >= n)
      throw Error(fmt::format("{}: node {} has children {} and {}, out of range or not stored together (the tree has {} nodes): rebuild the predictor",
                              where, i, t.left[k], t.right[k], n));
    if (t.feature[k] < 0 || static_cast<size_t>(t.feature[k]) >= feature_count)
      throw Error(fmt::format("{}: node {} splits on feature {}, but the model has {} features: rebuild the predictor", where, i,
                              t.feature[k], feature_count));
    stack.push_back(t.right[k]);
    stack.push_back(t.left[k]);
  }
  return seen;
}

}  // namespace

TreeEnsemble TreeEnsemble::from_xgboost_json(const Json& model, const std::string& origin) {
  const Json& learner = member(model, "learner", origin);
  const Json& booster = member(learner, "gradient_booster", origin);
  const Json& param = member(learner, "learner_model_param", origin);
  const auto text = [&](const Json& j, const char* key, const char* fallback) {
    const auto it = j.find(key);
    return it == j.end() ? std::string(fallback) : it->is_string() ? it->get<std::string>() : it->dump();
  };
  if (text(booster, "name", "") != "gbtree" || text(param, "num_target", "1") != "1" || text(param, "num_class", "0") != "0")
    throw Error(origin + " is not a single-target gbtree model, which nn-meter does not predict with");
  // A generous bound: nn-meter's kernels have fewer than ten features, and predict() sizes rows by it.
  constexpr size_t kMaxFeatures = 1 << 16;
  const std::string features = text(param, "num_feature", "");
  size_t feature_count = 0;
  const auto [at, ec] = std::from_chars(features.data(), features.data() + features.size(), feature_count);
  if (ec != std::errc() || at != features.data() + features.size() || feature_count == 0 || feature_count > kMaxFeatures)
    throw Error(origin + " has num_feature '" + features + "', not a feature count from 1 to " + std::to_string(kMaxFeatures) +
                ": rebuild the predictor");
  TreeEnsemble e;
  e.feature_count_ = feature_count;
  // XGBoost writes the float with enough digits to read it back exactly.
  const std::string base = text(param, "base_score", "");
  char* end = nullptr;
  e.base_score_ = std::strtof(base.c_str(), &end);
  if (base.empty() || end != base.c_str() + base.size() || !std::isfinite(e.base_score_))
    throw Error(origin + " has base_score '" + base + "', not a finite number: rebuild the predictor");
  const Json& trees = member(member(booster, "model", origin), "trees", origin);
  if (!trees.is_array()) throw Error(origin + ": 'trees' is not a list: rebuild the predictor");
  for (size_t index = 0; index < trees.size(); ++index) {
    const std::string where = fmt::format("{} tree {}", origin, index);
    const TreeArrays t = read_tree(trees[index], where);
    const std::vector<bool> reachable = check_structure(t, feature_count, where);
    const auto offset = static_cast<int32_t>(e.nodes_.size());
    e.roots_.push_back(offset);
    for (size_t i = 0; i < t.left.size(); ++i) {
      const bool leaf = t.left[i] < 0 || !reachable[i];
      e.nodes_.push_back({leaf ? -1 : static_cast<int32_t>(t.left[i]) + offset, leaf ? 0u : static_cast<uint32_t>(t.feature[i]),
                          static_cast<float>(t.value[i]), t.default_left[i] != 0});
    }
  }
  return e;
}

void TreeEnsemble::append_bytes(std::string& out) const {
  bytes::put(out, base_score_);
  bytes::put<uint64_t>(out, feature_count_);
  bytes::put_array(out, roots_);
  // Field by field, so no padding byte of Node reaches the file.
  std::vector<int32_t> left(nodes_.size());
  std::vector<uint32_t> feature(nodes_.size());
  std::vector<float> value(nodes_.size());
  std::vector<uint8_t> default_left(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    left[i] = nodes_[i].left;
    feature[i] = nodes_[i].feature;
    value[i] = nodes_[i].value;
    default_left[i] = nodes_[i].default_left ? 1 : 0;
  }
  bytes::put_array(out, left);
  bytes::put_array(out, feature);
  bytes::put_array(out, value);
  bytes::put_array(out, default_left);
}

TreeEnsemble TreeEnsemble::from_bytes(std::string_view& in, const std::string& origin) {
  TreeEnsemble e;
  e.base_score_ = bytes::take<float>(in, origin);
  const auto feature_count = bytes::take<uint64_t>(in, origin);
  e.roots_ = bytes::take_array<int32_t>(in, origin);
  // The four node fields are read in place and assembled directly: a cache is loaded on every prediction
  // from a fresh process, and intermediate copies of its arrays were a measurable share of that.
  const auto field = [&](size_t width) {
    const auto count = bytes::take<uint64_t>(in, origin);
    if (count > in.size() / width) throw Error(origin + " is truncated");
    return std::pair{count, bytes::take_raw(in, count * width, origin).data()};
  };
  const auto [n, left] = field(sizeof(int32_t));
  const auto [n_feature, feature] = field(sizeof(uint32_t));
  const auto [n_value, value] = field(sizeof(float));
  const auto [n_default, default_left] = field(sizeof(uint8_t));
  if (feature_count == 0 || feature_count > (1u << 16) || !std::isfinite(e.base_score_) || n_feature != n ||
      n_value != n || n_default != n || (e.roots_.empty() && n != 0))
    throw Error(origin + " has an inconsistent tree ensemble");
  e.feature_count_ = static_cast<size_t>(feature_count);
  e.nodes_.resize(static_cast<size_t>(n));
  for (size_t i = 0; i < e.nodes_.size(); ++i) {
    Node& node = e.nodes_[i];
    std::memcpy(&node.left, left + 4 * i, 4);
    std::memcpy(&node.feature, feature + 4 * i, 4);
    std::memcpy(&node.value, value + 4 * i, 4);
    node.default_left = default_left[i] != 0;
    if (node.left < 0) node.left = -1;
  }
  // Trees are consecutive blocks of nodes starting at their roots; within its block a tree must be one
  // (children in range and stored together, each node reached once), as predict() relies on.
  std::vector<bool> seen(e.nodes_.size(), false);
  std::vector<int64_t> stack;
  for (size_t t = 0; t < e.roots_.size(); ++t) {
    const int64_t begin = e.roots_[t];
    const int64_t end = t + 1 < e.roots_.size() ? e.roots_[t + 1] : static_cast<int64_t>(n);
    if (begin < 0 || begin >= end || end > static_cast<int64_t>(n) || (t == 0 && begin != 0))
      throw Error(fmt::format("{}: tree {} has no node block of its own", origin, t));
    stack.assign(1, begin);
    while (!stack.empty()) {
      const auto i = static_cast<size_t>(stack.back());
      stack.pop_back();
      const Node& node = e.nodes_[i];
      if (seen[i] || !std::isfinite(node.value)) throw Error(fmt::format("{}: tree {} is not a tree", origin, t));
      seen[i] = true;
      if (node.left < 0) continue;
      if (node.left < begin || int64_t{node.left} + 1 >= end || node.feature >= feature_count)
        throw Error(fmt::format("{}: tree {} links or splits out of range", origin, t));
      stack.push_back(node.left + 1);
      stack.push_back(node.left);
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
