// Regressor parameters: JSON round trip and nn-Meter's per-kernel random-forest table.
#include <array>
#include <optional>
#include <set>
#include <string_view>
#include <type_traits>

#include "nnmeter/regressor.h"

namespace nnmeter {

const char* to_string(RegressorMode mode) { return mode == RegressorMode::gbdt ? "gbdt" : "rf"; }

Json RegressorParams::to_json() const {
  return Json{{"mode", to_string(mode)},
              {"n_estimators", n_estimators},
              {"max_depth", max_depth},
              {"max_features", max_features},
              {"subsample", subsample},
              {"rounds", rounds},
              {"eta", eta},
              {"min_child_weight", min_child_weight},
              {"log_target", log_target},
              {"power_law_baseline", power_law_baseline},
              {"seed", seed},
              {"threads", threads}};
}

namespace {

template <class T>
void read_number(const Json& j, const char* key, T& out, const std::string& origin) {
  if (!j.contains(key)) return;
  const Json& v = j[key];
  const bool ok = std::is_floating_point_v<T> ? v.is_number() : (v.is_number_integer() || v.is_number_unsigned());
  if (!ok) throw Error(std::string("regressor parameter '") + key + "' in " + origin + " must be a number");
  out = v.get<T>();
}

void check_ranges(const RegressorParams& p, const std::string& origin) {
  auto fail = [&](const std::string& what) { throw Error("regressor parameter " + what + " in " + origin); };
  if (p.n_estimators < 1) fail("n_estimators must be >= 1");
  if (p.max_depth < 1) fail("max_depth must be >= 1 (unlimited depth is not supported by XGBoost's exact method)");
  if (p.max_features < 0) fail("max_features must be >= 0 (0 = all features)");
  if (!(p.subsample > 0 && p.subsample <= 1)) fail("subsample must be in (0, 1]");
  if (p.rounds < 1) fail("rounds must be >= 1");
  if (!(p.eta > 0 && p.eta <= 1)) fail("eta must be in (0, 1]");
  if (!(p.min_child_weight >= 0)) fail("min_child_weight must be >= 0");
  if (p.threads < 0) fail("threads must be >= 0 (0 = all cores)");
}

}  // namespace

RegressorParams RegressorParams::from_json(const Json& j, const std::string& origin) {
  if (!j.is_object()) throw Error("regressor parameters in " + origin + " must be a mapping");
  static const std::set<std::string, std::less<>> known = {"mode",   "n_estimators",     "max_depth",  "max_features",
                                                           "subsample", "rounds",      "eta",        "min_child_weight",
                                                           "log_target", "seed",       "threads",
                                                           "power_law_baseline"};
  for (const auto& [key, _] : j.items())
    if (!known.count(key)) throw Error("unknown regressor parameter '" + key + "' in " + origin);
  RegressorParams p;
  if (j.contains("mode")) {
    const std::string mode = j["mode"].is_string() ? j["mode"].get<std::string>() : "";
    if (mode == "rf" || mode == "random_forest") p.mode = RegressorMode::random_forest;
    else if (mode == "gbdt") p.mode = RegressorMode::gbdt;
    else throw Error("regressor mode in " + origin + " must be 'rf' or 'gbdt'");
  }
  read_number(j, "n_estimators", p.n_estimators, origin);
  read_number(j, "max_depth", p.max_depth, origin);
  read_number(j, "max_features", p.max_features, origin);
  read_number(j, "subsample", p.subsample, origin);
  read_number(j, "rounds", p.rounds, origin);
  read_number(j, "eta", p.eta, origin);
  read_number(j, "min_child_weight", p.min_child_weight, origin);
  read_number(j, "seed", p.seed, origin);
  read_number(j, "threads", p.threads, origin);
  for (auto [key, flag] : {std::pair{"log_target", &p.log_target}, std::pair{"power_law_baseline", &p.power_law_baseline}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_boolean()) throw Error(std::string("regressor parameter '") + key + "' in " + origin + " must be a boolean");
    *flag = j[key].get<bool>();
  }
  check_ranges(p, origin);
  return p;
}

namespace {

// max_depth / n_estimators / max_features, from nn-Meter's predictor_lib.py __PREDICTOR_ZOO__.
struct Tuned {
  int depth, trees, features;
};
struct Row {
  std::string_view kernel;
  std::optional<Tuned> cpu, gpu, vpu;  // tflite_cpu, tflite_gpu, openvino_vpu
};

const std::array<Row, 16>& zoo() {
  static const std::array<Row, 16> rows = {{
      {"conv-bn-relu", Tuned{70, 320, 6}, Tuned{80, 550, 5}, Tuned{100, 500, 5}},
      {"dwconv-bn-relu", Tuned{50, 240, 6}, Tuned{40, 240, 7}, Tuned{100, 650, 5}},
      {"fc", Tuned{50, 370, 2}, Tuned{70, 330, 4}, Tuned{70, 330, 4}},
      {"channelshuffle", Tuned{50, 370, 2}, std::nullopt, Tuned{50, 370, 2}},
      {"se", Tuned{20, 290, 2}, Tuned{50, 190, 2}, Tuned{50, 110, 2}},
      {"maxpool", Tuned{50, 210, 5}, Tuned{50, 370, 5}, Tuned{50, 370, 5}},
      {"global-avgpool", Tuned{70, 370, 2}, std::nullopt, std::nullopt},
      {"hswish", Tuned{50, 190, 2}, Tuned{50, 190, 2}, Tuned{50, 110, 2}},
      {"avgpool", Tuned{50, 370, 5}, Tuned{50, 370, 5}, Tuned{50, 390, 5}},
      {"bnrelu", Tuned{50, 370, 2}, Tuned{50, 190, 2}, Tuned{50, 570, 2}},
      {"relu", Tuned{50, 370, 2}, Tuned{50, 190, 2}, Tuned{50, 190, 2}},
      {"bn", Tuned{50, 370, 2}, Tuned{50, 190, 2}, Tuned{50, 390, 2}},
      {"concat", Tuned{100, 690, 5}, Tuned{100, 690, 5}, std::nullopt},
      {"addrelu", Tuned{50, 570, 3}, Tuned{50, 570, 3}, Tuned{50, 570, 3}},
      {"add", Tuned{50, 570, 3}, Tuned{50, 570, 3}, Tuned{50, 570, 3}},
      {"split", Tuned{50, 190, 2}, std::nullopt, std::nullopt},
  }};
  return rows;
}

// nn-Meter only tuned conv-bn-relu and dwconv-bn-relu; every conv/dwconv variant is predicted by those
// two at prediction time, so it trains with their settings too.
std::string_view table_kernel(std::string_view kernel) {
  if (kernel.find("dwconv") != std::string_view::npos) return "dwconv-bn-relu";
  if (kernel.find("conv") != std::string_view::npos) return "conv-bn-relu";
  return kernel;
}

}  // namespace

RegressorParams default_regressor_params(const std::string& kernel_type, const std::string& backend_name) {
  RegressorParams p;  // the fixed "auto" fallback: depth 50, 370 trees, max_features 0 = all features
  const std::string_view kernel = table_kernel(kernel_type);
  for (const Row& row : zoo()) {
    if (row.kernel != kernel) continue;
    const std::optional<Tuned>& tuned = backend_name == "tflite_gpu"     ? row.gpu
                                        : backend_name == "openvino_vpu" ? row.vpu
                                                                         : row.cpu;
    if (tuned) {
      p.max_depth = tuned->depth;
      p.n_estimators = tuned->trees;
      p.max_features = tuned->features;
    }
    break;
  }
  return p;
}

RegressorParams default_gbdt_params() {
  RegressorParams p;
  p.mode = RegressorMode::gbdt;
  p.rounds = 300;
  p.eta = 0.1;
  p.max_depth = 6;
  p.subsample = 0.8;
  p.max_features = 0;
  return p;
}

}  // namespace nnmeter
