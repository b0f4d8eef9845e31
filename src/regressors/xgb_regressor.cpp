// KernelRegressor over the XGBoost 1.7 C API. Handles are owned by small RAII types; every return code
// goes through check(), which turns XGBoost's thread-local last error into an nnmeter::Error.
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <regex>
#include <set>

#include "common/bytes.h"
#include "common/io.h"
#include "nnmeter/regressor.h"
#include "regressors/power_law.h"
#include "regressors/tree_ensemble.h"

namespace nnmeter {

namespace {

// Booster attributes that make a model file self-describing.
constexpr const char* kAttrVersion = "nnmeter_model_version";
constexpr const char* kAttrFeatures = "nnmeter_feature_names";
constexpr const char* kAttrTransform = "nnmeter_target_transform";
constexpr const char* kAttrParams = "nnmeter_regressor_params";
constexpr const char* kAttrBaseline = "nnmeter_power_law";  // present when the trees model a residual
constexpr int kModelFileVersion = 1;

// XGBoost's last error is "[hh:mm:ss] source.cc:123: message" followed by a stack trace; nn-meter errors
// are one line, so keep only the message.
std::string xgb_error() {
  static const std::regex prefix(R"(^\[[0-9:]+\] [^ ]+:[0-9]+: )");
  std::string text = XGBGetLastError();
  text = text.substr(0, text.find('\n'));
  return std::regex_replace(text, prefix, "");
}

void check(int rc, const std::string& what) {
  if (rc != 0) throw Error(what + " failed in XGBoost: " + xgb_error());
}

class DMatrix {
 public:
  DMatrix(const std::vector<float>& data, size_t rows, size_t cols) {
    check(XGDMatrixCreateFromMat(data.data(), rows, cols, std::nanf(""), &handle_), "creating the training matrix");
  }
  ~DMatrix() {
    if (handle_) XGDMatrixFree(handle_);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

struct BoosterDeleter {
  void operator()(void* handle) const { XGBoosterFree(handle); }
};
using BoosterPtr = std::unique_ptr<void, BoosterDeleter>;

BoosterPtr create_booster(const DMatrixHandle* cache, bst_ulong n) {
  BoosterHandle handle = nullptr;
  check(XGBoosterCreate(cache, n, &handle), "creating a booster");
  return BoosterPtr(handle);
}

void set_param(BoosterHandle b, const std::string& key, const std::string& value) {
  check(XGBoosterSetParam(b, key.c_str(), value.c_str()), "setting parameter " + key + "=" + value);
}

std::optional<std::string> get_attr(BoosterHandle b, const char* key) {
  const char* out = nullptr;
  int success = 0;
  check(XGBoosterGetAttr(b, key, &out, &success), std::string("reading attribute ") + key);
  if (!success || out == nullptr) return std::nullopt;
  return std::string(out);
}

// Row-major float copy; all rows must have `cols` entries.
std::vector<float> flatten(const FeatureMatrix& rows, size_t cols, const char* what) {
  std::vector<float> out;
  out.reserve(rows.size() * cols);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() != cols)
      throw Error(std::string(what) + ": row " + std::to_string(i) + " has " + std::to_string(rows[i].size()) +
                  " features, expected " + std::to_string(cols));
    for (double v : rows[i]) out.push_back(static_cast<float>(v));
  }
  return out;
}

// What the trees see: the features, plus the power-law estimate as one more column when there is a
// baseline. That column is the kernel's "size" axis (e.g. HW²·CIN for element-wise kernels), so a single
// split can follow a cache-level transition that would otherwise take many splits over HW and CIN.
std::vector<float> tree_input(const std::vector<float>& data, size_t rows, size_t cols, const PowerLaw* baseline,
                              std::vector<double>* baseline_values) {
  if (!baseline) return data;
  std::vector<float> out;
  out.reserve(rows * (cols + 1));
  for (size_t r = 0; r < rows; ++r) {
    const float* row = &data[r * cols];
    const double b = baseline->eval(row);
    out.insert(out.end(), row, row + cols);
    out.push_back(static_cast<float>(b));
    if (baseline_values) baseline_values->push_back(b);
  }
  return out;
}

std::string fmt_double(double v) {
  // XGBoost parses parameters with std::stod-like readers; full precision keeps them exact.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void configure(BoosterHandle b, const RegressorParams& p, size_t n_features, double base_score) {
  set_param(b, "validate_parameters", "1");
  set_param(b, "verbosity", "1");
  set_param(b, "objective", "reg:squarederror");
  // exact: deep sklearn-like trees are fast with it; lossguide with unlimited depth is pathological
  // (docs/notes-predictor.md).
  set_param(b, "tree_method", "exact");
  set_param(b, "nthread", std::to_string(p.threads));
  set_param(b, "seed", std::to_string(p.seed));
  set_param(b, "max_depth", std::to_string(p.max_depth));
  set_param(b, "min_child_weight", fmt_double(p.min_child_weight));
  set_param(b, "subsample", fmt_double(p.subsample));
  set_param(b, "base_score", fmt_double(base_score));
  if (p.max_features > 0 && static_cast<size_t>(p.max_features) < n_features) {
    // XGBoost keeps floor(colsample · n) features; the +0.5 guards 6/7·7 = 5.9999… from losing a feature.
    set_param(b, "colsample_bynode", fmt_double((p.max_features + 0.5) / static_cast<double>(n_features)));
  }
  if (p.mode == RegressorMode::random_forest) {
    set_param(b, "num_parallel_tree", std::to_string(p.n_estimators));
    set_param(b, "eta", "1");
    // Leaves hold the plain mean of their targets, like sklearn's trees; min_child_weight ≥ 1 keeps the
    // division safe.
    set_param(b, "lambda", "0");
  } else {
    set_param(b, "eta", fmt_double(p.eta));
  }
}

// The trees' output per row. A network repeats blocks, so its batches repeat rows: each distinct row is
// evaluated once.
std::vector<float> unique_row_margins(const TreeEnsemble& trees, const std::vector<float>& input, size_t rows, size_t cols) {
  const size_t bytes = cols * sizeof(float);
  auto row = [&](size_t i) { return &input[i * cols]; };
  std::vector<size_t> order(rows);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return std::memcmp(row(a), row(b), bytes) < 0; });
  std::vector<float> distinct;             // the distinct rows, one after another
  std::vector<size_t> slot(rows);          // row → its index among the distinct rows
  for (size_t k = 0; k < rows; ++k) {
    const size_t i = order[k];
    if (k == 0 || std::memcmp(row(i), row(order[k - 1]), bytes) != 0) distinct.insert(distinct.end(), row(i), row(i) + cols);
    slot[i] = distinct.size() / cols - 1;
  }
  std::vector<float> distinct_margins(distinct.size() / cols);
  trees.predict(distinct.data(), distinct_margins.size(), distinct_margins.data());
  std::vector<float> margins(rows);
  for (size_t i = 0; i < rows; ++i) margins[i] = distinct_margins[slot[i]];
  return margins;
}

}  // namespace

struct KernelRegressor::Impl {
  BoosterPtr booster;
  size_t n_features = 0;
  std::vector<std::string> feature_names;
  bool log_target = false;
  std::optional<PowerLaw> baseline;  // in log space; the booster predicts log(latency) − baseline
  TreeEnsemble trees;                // the booster's trees, which predict() evaluates
  std::mutex save_mutex;             // XGBoost's save buffer is per-booster state
};

KernelRegressor::KernelRegressor() = default;
KernelRegressor::~KernelRegressor() = default;
KernelRegressor::KernelRegressor(KernelRegressor&&) noexcept = default;
KernelRegressor& KernelRegressor::operator=(KernelRegressor&&) noexcept = default;

bool KernelRegressor::empty() const { return !impl_; }
size_t KernelRegressor::feature_count() const { return impl_ ? impl_->n_features : 0; }
bool KernelRegressor::log_target() const { return impl_ && impl_->log_target; }
const std::vector<std::string>& KernelRegressor::feature_names() const {
  static const std::vector<std::string> none;
  return impl_ ? impl_->feature_names : none;
}

void KernelRegressor::set_threads(int threads) {
  if (!impl_) throw Error("set_threads on an empty regressor: train or load it first");
  // Restored from the tree cache: no booster, and predict() never used its threads.
  if (!impl_->booster) return;
  set_param(impl_->booster.get(), "nthread", std::to_string(threads));
}

KernelRegressor KernelRegressor::train(const FeatureMatrix& x, const std::vector<double>& y, const RegressorParams& p,
                                       const std::vector<std::string>& feature_names) {
  if (x.empty()) throw Error("cannot train a regressor on zero samples");
  if (x.size() != y.size())
    throw Error("regressor training: " + std::to_string(x.size()) + " feature rows but " + std::to_string(y.size()) +
                " labels");
  const size_t cols = x.front().size();
  if (cols == 0) throw Error("regressor training: feature rows are empty");
  if (!feature_names.empty() && feature_names.size() != cols)
    throw Error("regressor training: " + std::to_string(feature_names.size()) + " feature names for " +
                std::to_string(cols) + " features");
  const std::vector<float> data = flatten(x, cols, "regressor training");

  std::vector<float> target(y.size());
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i]) || (p.log_target && y[i] <= 0))
      throw Error("regressor training: label " + std::to_string(i) + " is " + std::to_string(y[i]) +
                  (p.log_target ? " (log target needs latencies > 0)" : " (not finite)"));
    target[i] = static_cast<float>(p.log_target ? std::log(y[i]) : y[i]);
  }
  std::optional<PowerLaw> baseline;
  if (p.log_target && p.power_law_baseline) baseline = PowerLaw::fit(data, x.size(), cols, target);
  std::vector<double> baseline_values;
  const std::vector<float> input = tree_input(data, x.size(), cols, baseline ? &*baseline : nullptr, &baseline_values);
  for (size_t i = 0; i < baseline_values.size(); ++i) target[i] = static_cast<float>(target[i] - baseline_values[i]);
  const size_t tree_cols = baseline ? cols + 1 : cols;
  const double base_score = std::accumulate(target.begin(), target.end(), 0.0) / static_cast<double>(target.size());

  DMatrix dtrain(input, x.size(), tree_cols);
  check(XGDMatrixSetFloatInfo(dtrain.get(), "label", target.data(), target.size()), "setting training labels");
  const DMatrixHandle cache[] = {dtrain.get()};
  BoosterPtr booster = create_booster(cache, 1);
  configure(booster.get(), p, tree_cols, base_score);
  const int rounds = p.mode == RegressorMode::random_forest ? 1 : p.rounds;
  for (int i = 0; i < rounds; ++i) check(XGBoosterUpdateOneIter(booster.get(), i, dtrain.get()), "training round");

  std::vector<std::string> names = feature_names;
  if (names.empty())
    for (size_t i = 0; i < cols; ++i) names.push_back("feature_" + std::to_string(i));
  BoosterHandle b = booster.get();
  check(XGBoosterSetAttr(b, kAttrVersion, std::to_string(kModelFileVersion).c_str()), "setting model attributes");
  check(XGBoosterSetAttr(b, kAttrFeatures, Json(names).dump().c_str()), "setting model attributes");
  check(XGBoosterSetAttr(b, kAttrTransform, p.log_target ? "log" : "raw"), "setting model attributes");
  check(XGBoosterSetAttr(b, kAttrParams, p.to_json().dump().c_str()), "setting model attributes");
  if (baseline) check(XGBoosterSetAttr(b, kAttrBaseline, baseline->to_json().dump().c_str()), "setting model attributes");

  // Reload from the model's own JSON: the in-memory model is then exactly what save() writes (identical
  // predictions after a round trip), and the booster drops its reference to the training matrix.
  bst_ulong len = 0;
  const char* buf = nullptr;
  check(XGBoosterSaveModelToBuffer(b, R"({"format":"json"})", &len, &buf), "serializing the trained model");
  KernelRegressor r = from_json_text(std::string(buf, len), "the trained model");
  r.set_threads(p.threads);
  return r;
}

std::vector<double> KernelRegressor::predict(const FeatureMatrix& rows) const {
  if (!impl_) throw Error("predict on an empty regressor: train or load it first");
  if (rows.empty()) return {};
  const std::vector<float> data = flatten(rows, impl_->n_features, "prediction input");
  const PowerLaw* baseline = impl_->baseline ? &*impl_->baseline : nullptr;
  std::vector<double> baseline_values;
  const std::vector<float> input = tree_input(data, rows.size(), impl_->n_features, baseline, &baseline_values);
  const size_t cols = impl_->n_features + (baseline ? 1 : 0);
  const std::vector<float> margins = unique_row_margins(impl_->trees, input, rows.size(), cols);
  std::vector<double> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    double v = margins[i];
    if (baseline) v += baseline_values[i];
    out[i] = impl_->log_target ? std::exp(v) : v;
  }
  return out;
}

void KernelRegressor::save(const fs::path& file) const {
  if (!impl_) throw Error("cannot save an empty regressor to " + file.string());
  if (!impl_->booster)
    throw Error("cannot save to " + file.string() + " a regressor restored from a predictor folder's tree cache: load its model file");
  bst_ulong len = 0;
  const char* buf = nullptr;
  std::lock_guard lock(impl_->save_mutex);
  check(XGBoosterSaveModelToBuffer(impl_->booster.get(), R"({"format":"json"})", &len, &buf),
        "saving model " + file.string());
  io::write_file_atomic(file, std::string_view(buf, len));
}

KernelRegressor KernelRegressor::load(const fs::path& file) {
  return from_json_text(read_model_file(file), "model file " + file.string());
}

std::string KernelRegressor::read_model_file(const fs::path& file) {
  if (!fs::exists(file)) throw Error("model file " + file.string() + " does not exist");
  if (fs::is_directory(file)) throw Error("model file " + file.string() + " is a folder, not an XGBoost JSON model");
  return io::read_file(file);
}

KernelRegressor KernelRegressor::from_json_text(const std::string& text, const std::string& origin) {
  // XGBoost's own parser can fail with messages that do not name the file; parse first. Per-node training
  // statistics are dropped while parsing: they are most of the file and prediction does not read them.
  const Json::parser_callback_t skip_statistics = [](int, Json::parse_event_t event, Json& parsed) {
    static const std::set<std::string> unused = {"base_weights", "loss_changes", "sum_hessian", "parents"};
    return event != Json::parse_event_t::key || !unused.count(parsed.get<std::string>());
  };
  const Json doc = Json::parse(text, skip_statistics, /*allow_exceptions=*/false);
  if (doc.is_discarded()) throw Error(origin + " is not valid JSON (corrupt or truncated): rebuild the predictor");
  // Checked before XGBoost reads the file: its loader trusts the trees' links as predict() would.
  TreeEnsemble trees = TreeEnsemble::from_xgboost_json(doc, origin);
  BoosterPtr booster = create_booster(nullptr, 0);
  // XGBoost takes a buffer for JSON only when its first byte is '{'; anything else (even the leading
  // whitespace JSON allows) goes to its legacy binary reader, which trusts length fields in the data.
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || text[start] != '{')
    throw Error(origin + " is not an XGBoost JSON model (no JSON object): rebuild the predictor");
  if (XGBoosterLoadModelFromBuffer(booster.get(), text.data() + start, text.size() - start) != 0)
    throw Error(origin + " is not an XGBoost model (" + xgb_error() + "): rebuild the predictor");

  BoosterHandle b = booster.get();
  const auto version = get_attr(b, kAttrVersion);
  if (!version) throw Error(origin + " was not written by nn-meter (no " + kAttrVersion + ")");
  if (*version != std::to_string(kModelFileVersion))
    throw Error(origin + " has model version " + *version + ", this nn-meter reads version " +
                std::to_string(kModelFileVersion) + ": rebuild the predictor");
  KernelRegressor r;
  r.impl_ = std::make_unique<Impl>();
  bst_ulong n_features = 0;
  check(XGBoosterGetNumFeature(b, &n_features), "reading the feature count of " + origin);
  if (n_features != trees.feature_count())
    throw Error(origin + " has " + std::to_string(trees.feature_count()) + " features in its trees' parameters but XGBoost reads " +
                std::to_string(n_features) + ": rebuild the predictor");
  const auto law = get_attr(b, kAttrBaseline);
  if (law && n_features < 2) throw Error(origin + " has a power-law baseline but no feature: rebuild the predictor");
  if (law) --n_features;  // the trees' last column is the baseline itself
  r.impl_->n_features = n_features;
  const auto transform = get_attr(b, kAttrTransform);
  if (!transform || (*transform != "log" && *transform != "raw"))
    throw Error(origin + " has no valid " + kAttrTransform + " attribute");
  r.impl_->log_target = *transform == "log";
  const auto names = get_attr(b, kAttrFeatures);
  const Json names_json = names ? Json::parse(*names, nullptr, false) : Json();
  if (!names_json.is_array() || names_json.size() != n_features)
    throw Error(origin + " has " + std::to_string(n_features) +
                " features but its feature-name attribute does not list as many");
  for (const auto& n : names_json) r.impl_->feature_names.push_back(n.is_string() ? n.get<std::string>() : n.dump());
  if (law) {
    if (!r.impl_->log_target) throw Error(origin + " has a power-law baseline but no log target: rebuild the predictor");
    r.impl_->baseline = PowerLaw::from_json(Json::parse(*law, nullptr, false), n_features, origin);
  }
  r.impl_->trees = std::move(trees);
  r.impl_->booster = std::move(booster);
  r.set_threads(1);
  return r;
}

std::string KernelRegressor::cache_payload() const {
  if (!impl_) throw Error("an empty regressor has no tree cache");
  std::string out;
  bytes::put<uint64_t>(out, impl_->n_features);
  bytes::put_text(out, Json(impl_->feature_names).dump());
  bytes::put<uint8_t>(out, impl_->log_target ? 1 : 0);
  // The baseline's JSON keeps its doubles exact (nlohmann writes them to round-trip), as the model file does.
  bytes::put_text(out, impl_->baseline ? impl_->baseline->to_json().dump() : std::string());
  impl_->trees.append_bytes(out);
  return out;
}

KernelRegressor KernelRegressor::from_cache_payload(std::string_view payload, const std::string& origin) {
  KernelRegressor r;
  r.impl_ = std::make_unique<Impl>();
  Impl& m = *r.impl_;
  m.n_features = static_cast<size_t>(bytes::take<uint64_t>(payload, origin));
  const Json names = Json::parse(bytes::take_text(payload, origin), nullptr, /*allow_exceptions=*/false);
  if (!names.is_array() || names.size() != m.n_features) throw Error(origin + " has a malformed feature list");
  for (const auto& n : names) {
    if (!n.is_string()) throw Error(origin + " has a malformed feature list");
    m.feature_names.push_back(n.get<std::string>());
  }
  m.log_target = bytes::take<uint8_t>(payload, origin) != 0;
  if (const std::string law = bytes::take_text(payload, origin); !law.empty()) {
    if (!m.log_target) throw Error(origin + " has a power-law baseline but no log target");
    m.baseline = PowerLaw::from_json(Json::parse(law, nullptr, false), m.n_features, origin);
  }
  m.trees = TreeEnsemble::from_bytes(payload, origin);
  if (!payload.empty() || m.trees.feature_count() != m.n_features + (m.baseline ? 1 : 0))
    throw Error(origin + " does not describe one regressor");
  return r;
}

}  // namespace nnmeter
