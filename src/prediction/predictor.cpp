// LatencyPredictor: a predictor folder (kernel regressors + fusion rules) and the feature parsers of its
// kernels, loaded once; predict_* = IR → kernels → one batched regressor call per predictor kernel → sum.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "common/io.h"
#include "common/text.h"
#include "common/warn_once.h"
#include "nnmeter/registry.h"
#include "prediction/internal.h"

namespace nnmeter {

struct LatencyPredictor::State {
  std::string name;
  LoadedPredictor predictor;
  FusionRules rules;
  std::map<std::string, std::unique_ptr<FeatureParser>, std::less<>> parsers;  // per kernel of the folder
  std::optional<CompositionModel> composition;
  std::optional<PredictionInterval> interval;
};

namespace {

// Versions compare numerically part by part ("1.10" > "1.9"), text parts as text.
bool version_less(const std::string& a, const std::string& b) {
  auto parts = [](const std::string& v) {
    std::vector<std::string> out;
    size_t start = 0;
    for (size_t dot; (dot = v.find('.', start)) != std::string::npos; start = dot + 1) out.push_back(v.substr(start, dot - start));
    out.push_back(v.substr(start));
    return out;
  };
  const auto pa = parts(a), pb = parts(b);
  for (size_t i = 0; i < std::min(pa.size(), pb.size()); ++i) {
    const bool na = !pa[i].empty() && pa[i].find_first_not_of("0123456789") == std::string::npos;
    const bool nb = !pb[i].empty() && pb[i].find_first_not_of("0123456789") == std::string::npos;
    if (na && nb && pa[i].size() != pb[i].size()) return pa[i].size() < pb[i].size();
    if (pa[i] != pb[i]) return pa[i] < pb[i];
  }
  return pa.size() < pb.size();
}

std::string available(const std::vector<PredictorEntry>& entries) {
  if (entries.empty()) return "none registered; build one with nn-meter build and register its meta.yaml";
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.name + " (version " + e.version + ")");
  return fmt::format("available: {}", fmt::join(names, ", "));
}

FusionRules load_rules(const fs::path& folder, const std::string& name) {
  const fs::path file = folder / kFusionRulesFile;
  if (!fs::exists(file))
    throw Error(fmt::format("predictor {} has no fusion rules ({} is missing); rebuild with nn-meter build or run "
                            "nn-meter ruletest",
                            name, file.string()));
  return FusionRules::from_json(io::load_json_file(file), file.string());
}

std::unique_ptr<FeatureParser> parser_for(const std::string& kernel, const Registry* registry) {
  for (auto& info : builtin_kernels())
    if (info.name == kernel) return info.create(Json::object()).parser;
  const Registry fallback;
  return find_kernel(registry ? *registry : fallback, kernel).create(Json::object()).parser;
}

// torch.onnx.export folds BN into the conv before it, so real exports have conv-relu where a predictor built
// on nn-Meter's kernels has conv-bn-relu. On a backend that fuses conv and bn (its rule obeyed) the two cost
// the same, so the one regressor is the other's own, not a stand-in.
bool bn_twin(const std::string& kernel, const std::string& candidate, const FusionRules& rules) {
  for (const std::string type : {"gconv", "dwconv", "conv"}) {
    auto with_bn = [&](const std::string& k) {
      if (k.rfind(type + "-bn", 0) == 0) return k;
      return k == type + "-block" ? type + "-bn" : type + "-bn" + k.substr(type.size());
    };
    if (kernel.rfind(type + "-", 0) == 0 && candidate.rfind(type + "-", 0) == 0)
      return kernel != candidate && with_bn(kernel) == with_bn(candidate) &&
             rules.can_fuse(type == "gconv" ? "conv" : type, "bn");
  }
  return false;
}

}  // namespace

bool is_grouped_conv(const std::string& kernel) { return kernel.rfind("gconv-", 0) == 0; }

std::vector<std::string> elementwise_kernels(bool binary) {
  if (binary) return {"add", "addrelu", "relu", "hswish", "swish", "bn", "bnrelu"};
  return {"relu", "hswish", "swish", "bn", "bnrelu", "add", "addrelu"};
}

std::vector<std::string> stand_in_kernels(const std::string& kernel) {
  std::vector<std::string> out = {kernel};
  auto add = [&](std::string k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(std::move(k));
  };
  for (const std::string type : {"gconv", "dwconv", "conv"}) {
    if (kernel.rfind(type + "-", 0) != 0) continue;
    // The same activation first (BN folded into the conv costs nothing), then its nearest twin, then nn-Meter's
    // family order.
    std::vector<std::string> ops;  // "conv-bn-relu-add" → conv, bn, relu, add
    std::stringstream parts(kernel);
    for (std::string op; std::getline(parts, op, '-');) ops.push_back(op);
    const auto last_act = std::find_if(ops.rbegin(), ops.rend(), [](const std::string& op) {
      return op == "relu" || op == "relu6" || op == "hswish" || op == "swish";
    });
    const std::string act = last_act == ops.rend() ? "" : *last_act;
    const std::string twin = act == "relu" ? "relu6" : act == "relu6" ? "relu" : act == "swish" ? "hswish" : "swish";
    for (const std::string& a : act.empty() ? std::vector<std::string>{} : std::vector<std::string>{act, twin}) {
      add(type + "-bn-" + a);
      add(type + "-" + a);
    }
    for (const char* member : {"bn-relu", "bn-relu6", "relu", "bn", "relu6", "block", "hswish", "bn-hswish"})
      add(type + "-" + member);
    if (type == "gconv")
      for (auto& k : stand_in_kernels(kernel.substr(1))) add(std::move(k));
    return out;
  }
  if (kernel == "bnrelu") add("bn");
  if (kernel == "bn") add("bnrelu");
  if (kernel == "addrelu") add("add");
  if (kernel == "add") add("addrelu");
  if (kernel == "hswish") add("swish");
  if (kernel == "swish") add("hswish");
  if (kernel == "linear-gelu") add("linear");  // the GELU a fused kernel hides is a small part of it
  // A shuffle copies its tensor into the new order: the concat of its two halves moves the same bytes.
  if (kernel == "channelshuffle") add("concat");
  return out;
}

KernelConfig stand_in_config(const std::string& kernel, const std::string& predictor_kernel, KernelConfig config) {
  if (kernel == "channelshuffle" && predictor_kernel == "concat") {
    const int64_t hw = config["HW"].get<int64_t>(), cin = config["CIN"].get<int64_t>();
    return {{"HW", hw}, {"CIN1", cin / 2}, {"CIN2", cin - cin / 2}};
  }
  if (is_grouped_conv(kernel) && !is_grouped_conv(predictor_kernel)) {
    const int64_t groups = config["GROUPS"].get<int64_t>();
    for (const char* key : {"CIN", "COUT"}) config[key] = config[key].get<int64_t>() / groups;
  }
  return config;
}

LatencyPredictor LatencyPredictor::from_folder(const fs::path& folder) { return from_folder(folder, Registry()); }

LatencyPredictor LatencyPredictor::from_folder(const fs::path& folder, const Registry& registry) {
  auto state = std::make_shared<State>();
  state->predictor = load_predictor_folder(folder);
  state->name = state->predictor.meta().info.name.empty() ? folder.filename().string() : state->predictor.meta().info.name;
  state->rules = load_rules(folder, state->name);
  if (const Json& q = state->predictor.meta().measurement_quality; q.is_object() && q.value("verdict", "") == "noisy") {
    const Json reasons = q.value("reasons", Json::array());
    warn_once("noisy predictor " + fs::absolute(folder).string(),
              fmt::format("predictor {} was built on noisy measurements (measurement_quality in its predictor.json){}",
                          state->name, reasons.empty() || !reasons[0].is_string() ? "" : ": " + reasons[0].get<std::string>()));
  }
  if (const fs::path file = folder / kCompositionFile; fs::exists(file))
    state->composition = CompositionModel::from_json(io::load_json_file(file), file.string());
  if (const fs::path file = folder / kGeneralizationFile; fs::exists(file))
    if (const Json g = io::load_json_file(file); g.is_object() && g.contains("interval") && !g["interval"].is_null())
      state->interval = PredictionInterval::from_json(g["interval"], file.string());
  for (const auto& kernel : state->predictor.kernels()) {
    try {
      state->parsers[kernel] = parser_for(kernel, &registry);
    } catch (const Error& e) {
      warn_once(fmt::format("skipped kernel {} {}", fs::absolute(folder).string(), kernel),
                fmt::format("predictor {}: kernel '{}' is skipped, its feature parser is unavailable: {}", state->name,
                            kernel, e.what()));
    }
  }
  return LatencyPredictor(std::move(state));
}

LatencyPredictor LatencyPredictor::load(const Registry& registry, const std::string& name, const std::string& version) {
  const auto entries = registry.list_predictors();
  const PredictorEntry* best = nullptr;
  for (const auto& e : entries) {
    if (e.name != name || (!version.empty() && e.version != version)) continue;
    if (!best || version_less(best->version, e.version)) best = &e;
  }
  if (!best) {
    const std::string what = version.empty() ? "'" + name + "'" : "'" + name + "' version " + version;
    throw Error(fmt::format("no registered predictor {} ({})", what, available(entries)));
  }
  return from_folder(best->package_location, registry);
}

const std::string& LatencyPredictor::name() const { return state_->name; }
const FusionRules& LatencyPredictor::fusion_rules() const { return state_->rules; }
const LoadedPredictor& LatencyPredictor::kernel_predictors() const { return state_->predictor; }
const std::optional<CompositionModel>& LatencyPredictor::composition() const { return state_->composition; }
const std::optional<PredictionInterval>& LatencyPredictor::interval() const { return state_->interval; }

ModelPrediction LatencyPredictor::predict_file(const fs::path& onnx_file, const InputShapes& shapes) const {
  return predict_ir(load_onnx_ir(onnx_file, shapes));
}

ModelPrediction LatencyPredictor::predict_ir(const ModelIr& ir) const {
  const State& s = *state_;
  ModelPrediction out;
  out.model = ir.origin;
  for (const auto& n : ir.nodes)
    if (n.type != "Placeholder") ++out.node_count;
  std::unordered_map<std::string_view, const IrNode*> by_name;  // built only when something is uncovered
  auto uncover = [&](const std::vector<std::string>& nodes, const std::string& reason) {
    if (by_name.empty())
      for (const auto& n : ir.nodes) by_name.emplace(n.name, &n);
    for (const auto& node : nodes) out.uncovered.push_back({node, by_name.at(node)->type, reason});
  };
  auto pick = [&](const std::vector<std::string>& options) -> std::string {
    for (const auto& o : options)
      if (s.parsers.count(o)) return o;
    return "";
  };

  std::map<std::string, std::vector<size_t>> batches;  // predictor kernel → its kernels (indices in out.kernels)
  for (auto& k : detect_kernels(ir, s.rules)) {
    KernelPrediction p{std::move(k.name), std::move(k.op), "", std::move(k.kernel), std::move(k.config), {}, 0.0,
                       1, k.work, "", std::move(k.nodes), false};
    if (k.kind == KernelKind::unsupported) {
      uncover(p.nodes, k.reason);
      continue;
    }
    if (k.kind == KernelKind::layout) {
      p.note = "layout op: 0 ms by construction";
      out.kernels.push_back(std::move(p));
      continue;
    }
    const bool ew = k.kind == KernelKind::elementwise;
    const std::vector<std::string> options = ew ? elementwise_kernels(k.binary) : stand_in_kernels(p.kernel);
    p.predictor_kernel = pick(options);
    if (p.predictor_kernel.empty()) {
      uncover(p.nodes, fmt::format("predictor {} has no {} predictor (nor {})", s.name, ew ? "element-wise" : p.kernel,
                             fmt::join(options, ", ")));
      continue;
    }
    // No grouped conv kernel: GROUPS independent convs of CIN/GROUPS → COUT/GROUPS.
    if (is_grouped_conv(p.kernel) && !is_grouped_conv(p.predictor_kernel)) p.groups = p.config["GROUPS"].get<int64_t>();
    p.config = stand_in_config(p.kernel, p.predictor_kernel, std::move(p.config));
    const bool twin = !ew && bn_twin(p.kernel, p.predictor_kernel, s.rules);
    p.stand_in = ew || (p.predictor_kernel != p.kernel && !twin);
    if (ew)
      p.note = fmt::format("element-wise {} covered by the {} predictor", p.op, p.predictor_kernel);
    else if (twin)
      p.note = fmt::format("predicted by {}: the backend fuses BN into the conv (fusion rules), so they cost the same",
                           p.predictor_kernel);
    else if (p.stand_in)
      p.note = fmt::format("no {} predictor; predicted by {}", p.kernel, p.predictor_kernel);
    if (p.groups > 1)
      p.note += fmt::format("{}grouped conv: {} x {}(CIN {} -> COUT {})", p.note.empty() ? "" : "; ", p.groups,
                            p.predictor_kernel, p.config["CIN"].get<int64_t>(), p.config["COUT"].get<int64_t>());
    if (p.work != 1)
      p.note += fmt::format("{}non-square kernel: {:.3g} of the work of its KERNEL_SIZE {} square", p.note.empty() ? "" : "; ",
                            p.work, p.config["KERNEL_SIZE"].get<int64_t>());
    p.features = s.parsers.at(p.predictor_kernel)->get_feature_by_config(p.config);
    batches[p.predictor_kernel].push_back(out.kernels.size());
    out.kernels.push_back(std::move(p));
  }

  FeatureMatrix rows;
  for (const auto& [kernel, members] : batches) {
    rows.clear();
    for (size_t i : members) rows.push_back(out.kernels[i].features);
    const std::vector<double> ms = s.predictor.predict(kernel, rows);
    for (size_t i = 0; i < members.size(); ++i) {
      KernelPrediction& kp = out.kernels[members[i]];
      kp.latency_ms = ms[i] * static_cast<double>(kp.groups) * kp.work;
    }
  }
  for (const auto& kp : out.kernels) {
    out.kernels_ms += kp.latency_ms;
    if (s.composition && s.composition->unscaled_kernels.count(kp.predictor_kernel))
      out.unscaled_ms += kp.latency_ms;
    else if (!kp.predictor_kernel.empty())
      out.scaled_kernels += static_cast<double>(kp.groups);
  }
  out.footprint_mb = model_footprint_mb(ir);
  out.latency_ms = out.kernels_ms;
  if (s.composition) {
    out.composition_factor = s.composition->factor(out.footprint_mb);
    const KernelSums sums = out.kernel_sums();
    out.neighbour_factor = s.composition->neighbours.factor(sums, out.footprint_mb);
    out.level = s.composition->level;
    out.latency_ms = s.composition->predict(out.kernels_ms, out.unscaled_ms, out.footprint_mb, out.scaled_kernels, sums);
  }
  out.interval = s.interval;

  if (const auto stand_ins = out.stand_ins(); !stand_ins.empty()) {
    std::vector<std::string> parts;
    size_t n = 0;
    for (const auto& [what, count] : stand_ins) {
      parts.push_back(fmt::format("{} x{}", what, count));
      n += count;
    }
    // Said once per model and predictor in a process (common/warn_once.h): a loop predicting it again repeats nothing.
    warn_once(fmt::format("stand-ins {} {} {}", s.name, ir.origin, fmt::join(parts, ", ")),
              fmt::format("{}: {} kernels are predicted by another kernel's regressor (the predictor has none of their "
                          "own): {}", ir.origin, n, fmt::join(parts, ", ")));
  }
  if (!out.uncovered.empty()) {
    std::map<std::string, size_t> types;
    for (const auto& u : out.uncovered) ++types[u.type];
    std::vector<std::string> parts;
    for (const auto& [t, n] : types) parts.push_back(fmt::format("{} x{}", t, n));
    warn_once(fmt::format("uncovered {} {} {}", s.name, ir.origin, fmt::join(parts, ", ")),
              fmt::format("{}: {} of {} ops ({:.1f}%) have no predictor and are not counted: {}", ir.origin,
                          out.uncovered.size(), out.node_count,
                          100.0 * static_cast<double>(out.uncovered.size()) /
                              static_cast<double>(std::max<size_t>(1, out.node_count)),
                          fmt::join(parts, ", ")));
  }
  return out;
}

std::map<std::string, size_t> ModelPrediction::stand_ins() const {
  std::map<std::string, size_t> out;
  for (const auto& k : kernels)
    if (k.stand_in) ++out[fmt::format("{} -> {}", k.kernel.empty() ? k.op : k.kernel, k.predictor_kernel)];
  return out;
}

KernelSums ModelPrediction::kernel_sums() const {
  KernelSums out;
  for (const auto& k : kernels)
    if (!k.predictor_kernel.empty()) {
      out.by_predictor_kernel[k.predictor_kernel] += k.latency_ms;
      out.by_kernel[k.kernel.empty() ? k.op : k.kernel] += k.latency_ms;
    }
  return out;
}

Json ModelPrediction::to_json() const {
  Json ks = Json::array();
  for (const auto& k : kernels) {
    Json j = {{"name", k.name},         {"op", k.op},     {"kernel", k.kernel},   {"predictor_kernel", k.predictor_kernel},
              {"config", k.config},     {"features", k.features}, {"latency_ms", k.latency_ms}, {"nodes", k.nodes}};
    if (k.groups > 1) j["groups"] = k.groups;
    if (k.work != 1) j["work"] = k.work;
    if (!k.note.empty()) j["note"] = k.note;
    if (k.stand_in) j["stand_in"] = true;
    ks.push_back(std::move(j));
  }
  Json un = Json::array();
  for (const auto& u : uncovered) un.push_back({{"node", u.node}, {"type", u.type}, {"reason", u.reason}});
  return {{"model", utf8_replaced(model)},  // a file name is any bytes
          {"latency_ms", latency_ms},
          {"kernels_ms", kernels_ms},
          {"unscaled_ms", unscaled_ms},
          {"scaled_kernels", scaled_kernels},
          {"footprint_mb", footprint_mb},
          {"composition_factor", composition_factor},
          {"neighbour_factor", neighbour_factor},
          {"level", level},
          {"interval_ms", interval ? Json::array({latency_ms * interval->low, latency_ms * interval->high}) : Json(nullptr)},
          {"interval", interval ? interval->to_json() : Json(nullptr)},
          {"kernels", ks},
          {"uncovered", un},
          {"stand_ins", stand_ins()},
          {"node_count", node_count}};
}

}  // namespace nnmeter
