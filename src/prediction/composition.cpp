// The composition term: a network against the sum of its kernels measured alone. The builder measures each
// kernel after evicting its own buffers, so it starts from empty caches; inside a network every layer meets
// caches full of the layers before it (dirty activations to write back, cold TLB). Measured on onednn_cpu,
// the gap grows with the network's footprint: about nothing for networks that stay in the last-level cache,
// more for large ones (docs/profiling.md). One factor cannot fit both, so the term is a power of the
// footprint, fitted on measured networks. Some kernels take no part in that gap: a batch-1 fully connected
// layer streams weights far larger than the caches from memory alone as inside a network (AlexNet's and VGG's
// plain sums already near the measurement, which the footprint's factor overshot; bench/RESULTS-accuracy.md), so
// the term can leave named kernels unscaled. A kernel measured alone also pays a run's fixed cost that a network
// pays once, which weighs on networks of many small kernels (ShuffleNet) and not on ones of few large kernels
// (ResNets; docs/profiling.md); so the term can take a cost off each kernel before scaling. Nor do all kernel
// types meet the network the same way: memory-bound types (dwconv-bn-relu, bnrelu, concat) slow more inside it
// than the common factor, swish convs less, and scaling each type's Σ apart predicted families held out better
// (docs/accuracy.md), so the term can scale each type apart. What the term leaves is shared by networks of one
// architecture, so the residuals of the calibration networks nearest in kernel mix correct it
// (NeighbourCorrection).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "common/linear_solve.h"
#include "nnmeter/prediction.h"

namespace nnmeter {

double model_footprint_mb(const ModelIr& ir) {
  double elements = 0;
  const auto add = [&](const Shape& shape) {
    double n = 1;
    for (int64_t d : shape) n *= static_cast<double>(std::max<int64_t>(d, 1));
    elements += n;
  };
  for (const IrNode& n : ir.nodes) {
    for (const Shape& s : n.output_shapes) add(s);
    const auto w = n.attr.find("weight_shape");
    if (w != n.attr.end() && w->is_array()) add(w->get<Shape>());
  }
  return elements * 4 / 1e6;
}

double CompositionModel::factor(double footprint_mb) const {
  if (!(footprint_mb > 0)) return std::exp(c0);
  const double f = std::clamp(footprint_mb, footprint_min_mb, footprint_max_mb);
  return std::exp(c0 + c1 * std::log(f));
}

std::map<std::string, double> kernel_mix(const std::map<std::string, double>& ms_by_key) {
  double total = 0;
  for (const auto& [key, ms] : ms_by_key) total += ms;
  std::map<std::string, double> mix;
  if (total > 0)
    for (const auto& [key, ms] : ms_by_key) mix[key] = ms / total;
  return mix;
}

std::string to_string(NeighbourCorrection::Statistic s) {
  return s == NeighbourCorrection::Statistic::Median ? "median" : "inverse_distance";
}

namespace {

// Missing kernels count as a share of 0 on either side.
double mix_distance2(const std::map<std::string, double>& a, const std::map<std::string, double>& b) {
  double d = 0;
  for (const auto& [kernel, share] : a) {
    const auto it = b.find(kernel);
    const double diff = share - (it == b.end() ? 0.0 : it->second);
    d += diff * diff;
  }
  for (const auto& [kernel, share] : b)
    if (!a.count(kernel)) d += share * share;
  return d;
}

NeighbourCorrection neighbours_from_json(const Json& j, NeighbourCorrection::MixOf mix_of,
                                         const std::function<Error(const std::string&)>& bad) {
  const auto it = j.find("neighbours");
  if (it == j.end() || !it->is_object())
    throw bad(fmt::format("format_version {} needs a 'neighbours' object", j.at("format_version").dump()));
  const Json& o = *it;
  NeighbourCorrection c;
  c.mix_of = mix_of;
  const auto k = o.find("k");
  if (k == o.end() || !k->is_number_integer() || k->get<int64_t>() < 1) throw bad("'neighbours.k' must be an integer >= 1");
  const auto w = o.find("footprint_weight");
  if (w == o.end() || !w->is_number() || !std::isfinite(w->get<double>()) || w->get<double>() < 0)
    throw bad("'neighbours.footprint_weight' must be a finite number >= 0");
  c.footprint_weight = w->get<double>();
  const std::string statistic = o.value("statistic", std::string());
  if (statistic != "median" && statistic != "inverse_distance")
    throw bad("'neighbours.statistic' must be \"median\" or \"inverse_distance\"");
  c.statistic = statistic == "median" ? NeighbourCorrection::Statistic::Median : NeighbourCorrection::Statistic::InverseDistance;
  const auto networks = o.find("networks");
  if (networks == o.end() || !networks->is_array() || static_cast<int64_t>(networks->size()) < k->get<int64_t>())
    throw bad("'neighbours.networks' must list at least k networks");
  c.k = static_cast<int>(k->get<int64_t>());
  const auto finite = [](const Json& v) { return v.is_number() && std::isfinite(v.get<double>()); };
  for (const auto& n : *networks) {
    const std::string where = fmt::format("'neighbours.networks[{}]'", c.networks.size());
    if (!n.is_object()) throw bad(where + " must be an object");
    CompositionNeighbour x;
    x.model = n.value("model", std::string());
    const Json fp = n.value("footprint_mb", Json()), r = n.value("residual", Json()), mix = n.value("mix", Json());
    if (x.model.empty() || !finite(fp) || !(fp.get<double>() > 0) || !finite(r) || !mix.is_object())
      throw bad(where + " needs a model name, footprint_mb > 0, a finite residual and a mix object");
    x.footprint_mb = fp.get<double>();
    x.residual = r.get<double>();
    // As for the term: beyond three orders of magnitude the file is garbage, not a calibration.
    if (!(x.residual > 1e-3 && x.residual < 1e3)) throw bad(fmt::format("{}: residual {:.3g} is outside 0.001-1000", where, x.residual));
    for (const auto& [kernel, share] : mix.items()) {
      if (!finite(share) || share.get<double>() < 0 || share.get<double>() > 1)
        throw bad(where + ": every share of its mix must be a number in 0-1");
      x.mix[kernel] = share.get<double>();
    }
    c.networks.push_back(std::move(x));
  }
  return c;
}

}  // namespace

double NeighbourCorrection::factor(const KernelSums& sums, double footprint_mb) const {
  if (k <= 0 || !(footprint_mb > 0)) return 1;
  const auto mix = kernel_mix(mix_of == MixOf::Kernel ? sums.by_kernel : sums.by_predictor_kernel);
  std::vector<std::pair<double, double>> by_distance;  // (distance, residual)
  for (const auto& n : networks) {
    const double df = footprint_weight * (std::log(footprint_mb) - std::log(n.footprint_mb));
    by_distance.emplace_back(std::sqrt(mix_distance2(mix, n.mix) + df * df), n.residual);
  }
  if (by_distance.empty()) return 1;
  const size_t n = std::min(by_distance.size(), static_cast<size_t>(k));
  // Stable on ties, so equal distances keep the calibration order and the factor is reproducible.
  std::stable_sort(by_distance.begin(), by_distance.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (statistic == Statistic::InverseDistance) {
    // The offset keeps a network identical to a calibration one (distance 0) finite: its residual dominates.
    double sw = 0, sr = 0;
    for (size_t i = 0; i < n; ++i) {
      const double w = 1 / (by_distance[i].first + 1e-3);
      sw += w, sr += w * by_distance[i].second;
    }
    return sr / sw;
  }
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = by_distance[i].second;
  std::sort(r.begin(), r.end());
  return n % 2 == 1 ? r[n / 2] : (r[n / 2 - 1] + r[n / 2]) / 2;
}

std::string CompositionModel::describe() const {
  std::string out = fmt::format("x{:.3f} at {:.3g} MB … x{:.3f} at {:.3g} MB", factor(footprint_min_mb), footprint_min_mb,
                                factor(footprint_max_mb), footprint_max_mb);
  if (!unscaled_kernels.empty()) out += fmt::format(", {} unscaled", fmt::join(unscaled_kernels, ", "));
  if (kernel_cost_ms != 0)
    out += fmt::format(", {:.3g} µs {} a kernel", std::abs(kernel_cost_ms) * 1e3, kernel_cost_ms > 0 ? "less" : "more");
  if (!kernel_scales.empty()) {
    const auto [lo, hi] = std::minmax_element(kernel_scales.begin(), kernel_scales.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; });
    out += fmt::format(", {} kernel scales x{:.2f} ({}) … x{:.2f} ({})", kernel_scales.size(), lo->second, lo->first,
                       hi->second, hi->first);
  }
  if (neighbours.k > 0)
    out += fmt::format("; corrected by the {} nearest of {} calibration networks ({}, footprint weight {:g}{})", neighbours.k,
                       neighbours.networks.size(), neighbours.statistic == NeighbourCorrection::Statistic::Median
                                                       ? "median" : "inverse-distance mean", neighbours.footprint_weight,
                       neighbours.mix_of == NeighbourCorrection::MixOf::Kernel ? "" : ", mix by predictor kernel");
  if (level != 1) out += fmt::format("; re-levelled x{:.3f}", level);
  return out;
}

std::string CompositionModel::describe_fit() const {
  // calibration is a record, not part of the term: a hand-edited one must not break a prediction's report.
  try {
    const Json fit = calibration.value("fit", Json::object());
    const std::string method = fit.value("method", std::string());
    if (method == "least_squares") return "least squares";
    if (method != "huber") return "";
    std::vector<std::string> down;
    for (const auto& d : fit.value("down_weighted", Json::array()))
      down.push_back(fmt::format("{} ({:.2f})", d.value("model", std::string("?")), d.value("weight", 0.0)));
    if (down.empty()) return "Huber's weights, no network down-weighted";
    return fmt::format("Huber's weights, {} of {} networks down-weighted: {}", down.size(), fit.value("networks", 0),
                       fmt::join(down, ", "));
  } catch (const Json::exception&) {
    return "";
  }
}

Json CompositionModel::to_json() const {
  Json out = {{"format_version", 1},
              {"form", "unscaled kernels + other kernels * exp(c0 + c1 * ln(footprint_mb)), footprint clamped to the "
                       "calibrated range"},
              {"c0", c0},
              {"c1", c1},
              {"footprint_mb_range", {footprint_min_mb, footprint_max_mb}},
              {"unscaled_kernels", unscaled_kernels},
              {"calibration", calibration}};
  // Versions 5 and 6 carry the level (1 if never re-levelled) and the kernel cost (0 if none) whatever their values.
  const auto carry_level_and_cost = [&] {
    out["level"] = level;
    out["relevel"] = relevel;
    out["kernel_cost_ms"] = kernel_cost_ms;
  };
  if (level != 1 || kernel_cost_ms != 0) {
    // Version 3: a reader that does not know the level must refuse the file rather than predict without it.
    out["format_version"] = 3;
    out["level"] = level;
    out["relevel"] = relevel;
  }
  if (kernel_cost_ms != 0) {
    // Version 4, the same for the kernel cost; it carries the level (1 if never re-levelled) as version 3 does.
    out["format_version"] = 4;
    out["kernel_cost_ms"] = kernel_cost_ms;
    out["form"] = "unscaled kernels + (other kernels - kernel_cost_ms * their count, at least half of them) * "
                  "exp(c0 + c1 * ln(footprint_mb)), footprint clamped to the calibrated range";
  }
  if (!kernel_scales.empty()) {
    // Version 5, the same for the kernel scales; it carries the level and the kernel cost as version 4 does.
    out["format_version"] = 5;
    carry_level_and_cost();
    out["kernel_scales"] = kernel_scales;
    out["form"] = "unscaled kernels + (other kernels, each predictor kernel's sum times its kernel_scales entry (1 if "
                  "absent), - kernel_cost_ms * their count, at least half of them) * exp(c0 + c1 * ln(footprint_mb)), "
                  "footprint clamped to the calibrated range";
  }
  if (neighbours.k > 0) {
    // Version 2: a reader that knows only the term must refuse the file rather than predict without the correction.
    if (out["format_version"] == 1) out["format_version"] = 2;
    const bool by_kernel = neighbours.mix_of == NeighbourCorrection::MixOf::Kernel;
    out["form"] = out["form"].get<std::string>() + ", times the median or inverse-distance mean of the residuals "
                  "(measured / term) of the k calibration networks nearest in kernel mix (each " +
                  (by_kernel ? "kernel as detected" : "predictor kernel") + "'s share of the kernels' sum) and footprint";
    Json networks = Json::array();
    for (const auto& n : neighbours.networks)
      networks.push_back({{"model", n.model}, {"footprint_mb", n.footprint_mb}, {"residual", n.residual}, {"mix", n.mix}});
    out["neighbours"] = {{"k", neighbours.k},
                         {"footprint_weight", neighbours.footprint_weight},
                         {"statistic", to_string(neighbours.statistic)},
                         {"networks", std::move(networks)}};
    if (by_kernel) {
      // Version 6: mixes by kernel as detected; a reader of versions 2-5 would compare them with mixes by predictor
      // kernel, so it must refuse the file. It carries the level and the kernel cost as version 4 does, and kernel
      // scales when fitted.
      out["format_version"] = 6;
      carry_level_and_cost();
      out["neighbours"]["mix_of"] = "kernel";
    }
  }
  return out;
}

CompositionModel CompositionModel::from_json(const Json& j, const std::string& origin) {
  const auto bad = [&](const std::string& what) {
    return Error(fmt::format("{}: {}; recalibrate with nn-meter calibrate or delete the file", origin, what));
  };
  if (!j.is_object()) throw bad("not a JSON object");
  const Json version = j.value("format_version", Json());
  const double v = version.is_number() ? version.get<double>() : 0;
  if (!(v >= 1 && v <= 6 && v == std::floor(v))) throw bad("format_version must be 1, 2, 3, 4, 5 or 6");
  const auto number = [&](const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>())) throw bad(fmt::format("'{}' must be a finite number", key));
    return it->get<double>();
  };
  CompositionModel m;
  m.c0 = number("c0");
  m.c1 = number("c1");
  const auto range = j.find("footprint_mb_range");
  if (range == j.end() || !range->is_array() || range->size() != 2 || !(*range)[0].is_number() || !(*range)[1].is_number())
    throw bad("'footprint_mb_range' must be [min, max]");
  m.footprint_min_mb = (*range)[0].get<double>();
  m.footprint_max_mb = (*range)[1].get<double>();
  if (!(m.footprint_min_mb > 0) || !(m.footprint_max_mb >= m.footprint_min_mb) || !std::isfinite(m.footprint_max_mb))
    throw bad("'footprint_mb_range' must be 0 < min <= max");
  // Beyond three orders of magnitude the file is garbage, not a calibration (calibrate warns far earlier).
  for (double f : {m.footprint_min_mb, m.footprint_max_mb})
    if (std::abs(m.c0 + m.c1 * std::log(f)) > std::log(1000.0))
      throw bad(fmt::format("its factor at {:.3g} MB is {:.3g}, outside 0.001-1000", f, m.factor(f)));
  // Absent in files calibrated before kernels could be left unscaled: every kernel is scaled.
  if (const auto u = j.find("unscaled_kernels"); u != j.end()) {
    if (!u->is_array()) throw bad("'unscaled_kernels' must be a list of kernel names");
    for (const auto& name : *u) {
      if (!name.is_string() || name.get<std::string>().empty()) throw bad("'unscaled_kernels' must be a list of kernel names");
      m.unscaled_kernels.insert(name.get<std::string>());
    }
  }
  if (j.contains("neighbours") || v == 2 || v == 6)
    m.neighbours = neighbours_from_json(
        j, v == 6 ? NeighbourCorrection::MixOf::Kernel : NeighbourCorrection::MixOf::PredictorKernel, bad);
  if (v >= 3) {
    m.level = number("level");
    if (!(m.level >= 0.001 && m.level <= 1000)) throw bad(fmt::format("'level' {:.3g} is outside 0.001-1000", m.level));
    m.relevel = j.value("relevel", Json());
  }
  if (v >= 4) {
    m.kernel_cost_ms = number("kernel_cost_ms");
    // A kernel costs milliseconds at most on any device this predicts; a second is garbage, not a calibration.
    if (!(std::abs(m.kernel_cost_ms) < 1000)) throw bad(fmt::format("'kernel_cost_ms' {:.3g} is outside ±1000", m.kernel_cost_ms));
  }
  // Version 5 has kernel scales; version 6 has them when they were fitted.
  if (v == 5 || (v == 6 && j.contains("kernel_scales"))) {
    const auto scales = j.find("kernel_scales");
    if (scales == j.end() || !scales->is_object() || scales->empty())
      throw bad(fmt::format("format_version {:g} needs a 'kernel_scales' object of predictor kernel → scale", v));
    for (const auto& [kernel, scale] : scales->items()) {
      // As for the term: the fit clamps a scale to 0.25-4, so far beyond it the file is garbage.
      if (kernel.empty() || !scale.is_number() || !std::isfinite(scale.get<double>()) || !(scale.get<double>() >= 0.01) ||
          !(scale.get<double>() <= 100))
        throw bad(fmt::format("'kernel_scales.{}' must be a number in 0.01-100", kernel));
      m.kernel_scales[kernel] = scale.get<double>();
    }
  }
  m.calibration = j.value("calibration", Json::object());
  return m;
}

namespace {

// Σ of the scaled kernels, each type times its kernel scale.
double scaled_sum(const CompositionModel& m, double kernels_ms, double unscaled_ms,
                  const std::map<std::string, double>& kernels_by_type) {
  double sum = kernels_ms - unscaled_ms;
  for (const auto& [kernel, scale] : m.kernel_scales)
    if (!m.unscaled_kernels.count(kernel))
      if (const auto it = kernels_by_type.find(kernel); it != kernels_by_type.end()) sum += (scale - 1) * it->second;
  return sum;
}

// The scaled kernels' part of a network's time: what they sum to less each one's cost, never under half of it.
double scaled_part(double scaled_ms, double scaled_kernels, double kernel_cost_ms) {
  return std::max(scaled_ms - kernel_cost_ms * scaled_kernels, scaled_ms / 2);
}

// The term at a given kernel cost, with the residuals of its fit (ln measured/term's) and Huber's threshold
// (0: least squares).
struct TermFit {
  CompositionModel model;
  std::vector<double> residuals;
  double threshold = 0;
};

TermFit fit_term(const std::vector<CompositionPoint>& points, const std::set<std::string>& unscaled_kernels,
                 double kernel_cost_ms) {
  std::vector<double> x, y;
  for (const auto& p : points) {
    x.push_back(std::log(p.footprint_mb));
    y.push_back(std::log((p.measured_ms - p.unscaled_ms) /
                         scaled_part(p.kernels_ms - p.unscaled_ms, p.scaled_kernels, kernel_cost_ms)));
  }
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  TermFit t;
  CompositionModel& m = t.model;
  m.unscaled_kernels = unscaled_kernels;
  m.kernel_cost_ms = kernel_cost_ms;
  m.footprint_min_mb = std::exp(*lo);
  m.footprint_max_mb = std::exp(*hi);
  // A slope needs a few networks of clearly different sizes; otherwise it fits noise.
  const bool slope = points.size() >= 4 && *hi - *lo >= std::log(2.0);
  std::vector<double> w(x.size(), 1.0);
  const auto weighted_fit = [&] {
    double sw = 0, mx = 0, my = 0;
    for (size_t i = 0; i < x.size(); ++i) sw += w[i], mx += w[i] * x[i], my += w[i] * y[i];
    mx /= sw, my /= sw;
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < x.size(); ++i) sxx += w[i] * (x[i] - mx) * (x[i] - mx), sxy += w[i] * (x[i] - mx) * (y[i] - my);
    m.c1 = slope && sxx > 0 ? sxy / sxx : 0;
    m.c0 = my - m.c1 * mx;
  };
  const auto residuals = [&] {
    t.residuals.resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) t.residuals[i] = y[i] - m.c0 - m.c1 * x[i];
  };
  weighted_fit();
  residuals();
  // Huber's weights instead of plain least squares. A calibration network whose kernels the predictor misses
  // (on onednn_cpu the ResNets at small resolutions, their kernel sums well under the measurement where most
  // other networks' sit close to it) is an error of the kernel predictors, not of the composition; least squares
  // let those few tilt the term for every network. On the accuracy bench the robust fit raised the evaluated
  // networks' share within ±5 % in nearly every run and never worsened RMSPE (bench/RESULTS-accuracy.md). Fewer
  // than 8 networks say too little about the spread to call any of them an outlier.
  Json fit = {{"method", "least_squares"}, {"networks", points.size()}};
  if (points.size() >= 8) {
    for (int iteration = 0; iteration < 100; ++iteration) {
      std::vector<double> r(x.size());
      for (size_t i = 0; i < x.size(); ++i) r[i] = std::abs(t.residuals[i]);
      std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(r.size() / 2), r.end());
      // Robust spread (MAD); residuals within 1.3 % are never down-weighted, whatever the spread.
      t.threshold = 1.345 * std::max(1.4826 * r[r.size() / 2], 0.01);
      for (size_t i = 0; i < x.size(); ++i)
        w[i] = std::abs(t.residuals[i]) <= t.threshold ? 1.0 : t.threshold / std::abs(t.residuals[i]);
      const double c0 = m.c0, c1 = m.c1;
      weighted_fit();
      residuals();
      if (std::abs(m.c0 - c0) < 1e-12 && std::abs(m.c1 - c1) < 1e-12) break;
    }
    // Which networks the fit set aside is worth seeing: their kernels are usually what the predictor misses.
    Json down = Json::array();
    for (size_t i = 0; i < w.size(); ++i)
      if (w[i] < 1) down.push_back({{"model", points[i].name}, {"weight", w[i]}});
    fit = {{"method", "huber"}, {"networks", points.size()}, {"threshold", t.threshold}, {"down_weighted", std::move(down)}};
  }
  m.calibration["fit"] = std::move(fit);
  return t;
}

// Huber's loss at threshold c (squares when c is 0): how much a term leaves, comparable across kernel costs.
double huber_loss(const std::vector<double>& residuals, double c) {
  double loss = 0;
  for (double r : residuals) {
    const double a = std::abs(r);
    loss += c <= 0 || a <= c ? a * a / 2 : c * (a - c / 2);
  }
  return loss;
}

}  // namespace

double CompositionModel::latency(double kernels_ms, double unscaled_ms, double footprint_mb, double scaled_kernels,
                                 const std::map<std::string, double>& kernels_by_type) const {
  return unscaled_ms + scaled_part(scaled_sum(*this, kernels_ms, unscaled_ms, kernels_by_type), scaled_kernels, kernel_cost_ms) *
                           factor(footprint_mb);
}

namespace {

// The term with (or without) a kernel cost, on points already checked.
TermFit fit_with_cost(const std::vector<CompositionPoint>& points, const std::set<std::string>& unscaled_kernels,
                      bool fit_kernel_cost) {
  double cost_limit = std::numeric_limits<double>::infinity();
  for (const auto& p : points)
    if (p.scaled_kernels > 0) cost_limit = std::min(cost_limit, (p.kernels_ms - p.unscaled_ms) / p.scaled_kernels / 2);
  TermFit best = fit_term(points, unscaled_kernels, 0);
  if (!fit_kernel_cost || !std::isfinite(cost_limit)) return best;
  // One parameter, a loss that is smooth but not always convex in it: a grid over the whole range finds the
  // basin, a golden-section search between the best point's neighbours the minimum. The loss is Huber's at the
  // threshold of the fit without a cost, so every cost is judged by one yardstick.
  const double threshold = best.threshold;
  const auto loss_at = [&](double cost) { return huber_loss(fit_term(points, unscaled_kernels, cost).residuals, threshold); };
  constexpr int kGrid = 40;
  const auto grid = [&](int i) { return cost_limit * (2.0 * i / kGrid - 1); };
  int at = kGrid / 2;
  double least = huber_loss(best.residuals, threshold);
  for (int i = 0; i <= kGrid; ++i)
    if (i != kGrid / 2)
      if (const double l = loss_at(grid(i)); l < least) least = l, at = i;
  double a = grid(std::max(at - 1, 0)), b = grid(std::min(at + 1, kGrid));
  const double g = (std::sqrt(5.0) - 1) / 2;
  for (int i = 0; i < 40; ++i) {
    const double c = b - g * (b - a), d = a + g * (b - a);
    if (loss_at(c) < loss_at(d))
      b = d;
    else
      a = c;
  }
  double cost = (a + b) / 2;
  if (loss_at(cost) >= least) cost = grid(at);
  best = fit_term(points, unscaled_kernels, cost);
  best.model.calibration["fit"]["kernel_cost"] = {{"ms", cost}, {"range_ms", {-cost_limit, cost_limit}}};
  return best;
}

// The kernel scales that, under the term `t` (its factor, kernel cost and Huber's weights held), make the points'
// relative errors least, each pulled towards 1 by ridge · points: with U the unscaled ms, f the factor and c the
// cost, measured ≈ U + f · (Σ_type scale · ms − c · count) is linear in the scales. Clamped to 0.25-4: caches
// slow a layer by tens of percents, not by 4×.
std::map<std::string, double> fit_kernel_scales(const std::vector<CompositionPoint>& points, const std::vector<std::string>& types,
                                                const TermFit& t, double ridge) {
  const size_t k = types.size();
  std::vector<std::vector<double>> ata(k, std::vector<double>(k, 0.0));
  std::vector<double> aty(k, 0.0);
  for (size_t i = 0; i < points.size(); ++i) {
    const CompositionPoint& p = points[i];
    const double r = std::abs(t.residuals[i]);
    const double w = t.threshold <= 0 || r <= t.threshold ? 1.0 : t.threshold / r;
    const double f = t.model.factor(p.footprint_mb);
    std::vector<double> a(k, 0.0);
    for (size_t j = 0; j < k; ++j)
      if (const auto it = p.kernels_by_type.find(types[j]); it != p.kernels_by_type.end()) a[j] = f * it->second / p.measured_ms;
    const double y = (p.measured_ms - p.unscaled_ms + f * t.model.kernel_cost_ms * p.scaled_kernels) / p.measured_ms;
    for (size_t j = 0; j < k; ++j) {
      aty[j] += w * a[j] * y;
      for (size_t l = 0; l < k; ++l) ata[j][l] += w * a[j] * a[l];
    }
  }
  const double lambda = ridge * static_cast<double>(points.size());
  for (size_t j = 0; j < k; ++j) ata[j][j] += lambda, aty[j] += lambda;
  const std::vector<double> s = solve_linear(std::move(ata), std::move(aty), "kernel scales");
  std::map<std::string, double> scales;
  for (size_t j = 0; j < k; ++j) scales[types[j]] = std::clamp(s[j], 0.25, 4.0);
  return scales;
}

}  // namespace

CompositionModel fit_composition(const std::vector<CompositionPoint>& points, std::set<std::string> unscaled_kernels,
                                 bool fit_kernel_cost, double scale_ridge) {
  if (points.empty()) throw Error("no measured model to fit the composition on");
  for (const auto& p : points) {
    if (!(p.kernels_ms > 0) || !(p.measured_ms > 0) || !(p.footprint_mb > 0) || !std::isfinite(p.kernels_ms) ||
        !std::isfinite(p.measured_ms) || !std::isfinite(p.footprint_mb) || !(p.unscaled_ms >= 0) || !std::isfinite(p.unscaled_ms) ||
        !(p.scaled_kernels >= 0) || !std::isfinite(p.scaled_kernels))
      throw Error(fmt::format("composition point with a non-positive value (kernels {} ms, measured {} ms, footprint {} MB)",
                              p.kernels_ms, p.measured_ms, p.footprint_mb));
    if (!(p.unscaled_ms < p.kernels_ms) || !(p.unscaled_ms < p.measured_ms))
      throw Error(fmt::format("{} take {:.4g} ms of a network predicted at {:.4g} ms and measured at {:.4g} ms: nothing "
                              "left to scale", fmt::join(unscaled_kernels, ", "), p.unscaled_ms, p.kernels_ms, p.measured_ms));
  }
  TermFit fit = fit_with_cost(points, unscaled_kernels, fit_kernel_cost);
  std::vector<std::string> types;  // the scaled kernel types the networks spend time in
  for (const auto& p : points)
    for (const auto& [kernel, ms] : p.kernels_by_type)
      if (ms > 0 && !unscaled_kernels.count(kernel) && std::find(types.begin(), types.end(), kernel) == types.end())
        types.push_back(kernel);
  if (!(scale_ridge > 0) || types.empty()) return fit.model;
  // The scales and the term depend on each other: each fitted in turn with the other held. More rounds than these
  // hardly moved the held-out figures (docs/accuracy.md).
  constexpr int kRounds = 5;
  std::map<std::string, double> scales;
  std::vector<CompositionPoint> scaled = points;
  for (int round = 0; round < kRounds; ++round) {
    scales = fit_kernel_scales(points, types, fit, scale_ridge);
    fit.model.kernel_scales = scales;
    for (size_t i = 0; i < points.size(); ++i)
      scaled[i].kernels_ms = points[i].unscaled_ms + scaled_sum(fit.model, points[i].kernels_ms, points[i].unscaled_ms,
                                                                points[i].kernels_by_type);
    fit = fit_with_cost(scaled, unscaled_kernels, fit_kernel_cost);
  }
  fit.model.kernel_scales = std::move(scales);
  fit.model.calibration["fit"]["kernel_scales"] = {{"ridge", scale_ridge}, {"rounds", kRounds}};
  return fit.model;
}

}  // namespace nnmeter
