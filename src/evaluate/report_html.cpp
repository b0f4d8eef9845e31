// The evaluation report as one self-contained HTML page: inline CSS and SVG, no script, no external
// resource, so it opens offline and can be attached to an issue or mailed as it is.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nnmeter/evaluate.h"

namespace nnmeter {

namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string pct(double v) { return fmt::format("{:.1f}%", 100 * v); }

// A plot area of the given size with margins for axes; maps data to pixels.
struct Frame {
  double width = 560, height = 400, left = 64, right = 16, top = 16, bottom = 48;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool log = false;
  double tx(double v) const { return left + (f(v) - f(x0)) / (f(x1) - f(x0)) * (width - left - right); }
  double ty(double v) const { return height - bottom - (f(v) - f(y0)) / (f(y1) - f(y0)) * (height - top - bottom); }
  double f(double v) const { return log ? std::log10(v) : v; }
};

std::string svg_open(const Frame& fr, const std::string& label) {
  return fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                     "role=\"img\" aria-label=\"{2}\">\n<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n",
                     fr.width, fr.height, escape(label));
}

// Tick values: powers of ten and their 2x/5x on a log axis, round steps on a linear one.
std::vector<double> ticks(double lo, double hi, bool log) {
  std::vector<double> out;
  if (log) {
    for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= static_cast<int>(std::ceil(std::log10(hi))); ++e)
      for (double m : {1.0, 2.0, 5.0}) {
        const double v = m * std::pow(10.0, e);
        if (v >= lo && v <= hi) out.push_back(v);
      }
    return out;
  }
  const double raw = (hi - lo) / 5;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 2 ? 2 * mag : raw / mag < 5 ? 5 * mag : 10 * mag;
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push_back(v);
  return out;
}

std::string axes(const Frame& fr, const std::string& xlabel, const std::string& ylabel, const char* unit) {
  std::string out;
  for (double v : ticks(fr.x0, fr.x1, fr.log)) {
    const double x = fr.tx(v);
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3:.1f}\" font-size=\"11\" text-anchor=\"middle\">{4:g}{5}</text>\n",
                       x, fr.top, fr.height - fr.bottom, fr.height - fr.bottom + 14, v, unit);
  }
  // A chart without a y label (the family bars) names its rows itself.
  for (double v : ylabel.empty() ? std::vector<double>{} : ticks(fr.y0, fr.y1, fr.log)) {
    const double y = fr.ty(v);
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#e4e4e4\"/>"
                       "<text x=\"{3:.1f}\" y=\"{4:.1f}\" font-size=\"11\" text-anchor=\"end\">{5:g}{6}</text>\n",
                       fr.left, y, fr.width - fr.right, fr.left - 4, y + 4, v, unit);
  }
  out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#888\"/>\n",
                     fr.left, fr.top, fr.width - fr.left - fr.right, fr.height - fr.top - fr.bottom);
  out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"middle\">{}</text>\n",
                     (fr.left + fr.width - fr.right) / 2, fr.height - 10, escape(xlabel));
  out += fmt::format("<text x=\"14\" y=\"{0:.1f}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0:.1f})\">"
                     "{1}</text>\n", (fr.top + fr.height - fr.bottom) / 2, escape(ylabel));
  return out;
}

const char* point_color(double error) { return std::abs(error) <= 0.10 ? "#1a7f37" : "#cf222e"; }

std::string scatter(const EvaluateReport& r) {
  double lo = 1e300, hi = 0;
  for (const auto& m : r.models)
    if (m.relative_error()) {
      lo = std::min({lo, *m.predicted_ms, *m.measured_ms});
      hi = std::max({hi, *m.predicted_ms, *m.measured_ms});
    }
  if (hi <= 0) return "<p>No model was both predicted and measured.</p>\n";
  Frame fr;
  fr.log = true;
  fr.x0 = fr.y0 = lo / 1.3;
  fr.x1 = fr.y1 = hi * 1.3;
  std::string out = svg_open(fr, "predicted versus measured latency");
  out += axes(fr, "measured latency (ms)", "predicted latency (ms)", "");
  // The ±10 % band around the diagonal.
  out += fmt::format("<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" fill=\"#1a7f37\" "
                     "fill-opacity=\"0.12\"><title>within ±10 %</title></polygon>\n",
                     fr.tx(fr.x0), fr.ty(fr.x0 * 1.1), fr.tx(fr.x1 / 1.1), fr.ty(fr.x1), fr.tx(fr.x1), fr.ty(fr.x1 * 0.9),
                     fr.tx(fr.x0 / 0.9), fr.ty(fr.x0));
  out += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n",
                     fr.tx(fr.x0), fr.ty(fr.x0), fr.tx(fr.x1), fr.ty(fr.x1));
  for (const auto& m : r.models) {
    const auto e = m.relative_error();
    if (!e) continue;
    out += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.8\">"
                       "<title>{}: measured {:.3f} ms, predicted {:.3f} ms ({:+.1f}%)</title></circle>\n",
                       fr.tx(*m.measured_ms), fr.ty(*m.predicted_ms), point_color(*e), escape(m.name), *m.measured_ms,
                       *m.predicted_ms, 100 * *e);
  }
  return out + "</svg>\n";
}

std::string family_bars(const EvaluateReport& r) {
  std::vector<std::pair<std::string, const AccuracySummary*>> rows;
  double span = 0.1;
  for (const auto& [family, s] : r.by_family)
    if (s.models > 0) {
      rows.emplace_back(family, &s);
      span = std::max(span, std::abs(s.mean_error) + 0.02);
    }
  if (rows.empty()) return "<p>No family has a scored model.</p>\n";
  // Room for the longest label at 12 px sans-serif (at most ~7 px a character), so no family name is cut.
  size_t longest = 0;
  for (const auto& [family, s] : rows) longest = std::max(longest, fmt::format("{} ({})", family, s->models).size());
  Frame fr;
  fr.left = std::max(170.0, 7.0 * static_cast<double>(longest) + 12);
  fr.width = fr.left + 590;
  fr.right = 290;
  fr.height = 40 + 26.0 * static_cast<double>(rows.size()) + fr.bottom;
  fr.x0 = -100 * span;
  fr.x1 = 100 * span;
  std::string out = svg_open(fr, "mean prediction error by model family");
  out += axes(Frame{fr.width, fr.height, fr.left, fr.right, fr.top, fr.bottom, fr.x0, fr.x1, 0, 1, false},
              "mean prediction error (%)", "", "%");
  double y = fr.top + 12;
  for (const auto& [family, s] : rows) {
    const double x0 = fr.tx(0), x1 = fr.tx(100 * s->mean_error);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" text-anchor=\"end\">{} ({})</text>\n", fr.left - 6,
                       y + 12, escape(family), s->models);
    out += fmt::format("<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\"><title>{}: "
                       "mean error {:+.1f}%</title></rect>\n",
                       std::min(x0, x1), y, std::max(1.0, std::abs(x1 - x0)), s->mean_error > 0 ? "#bc4c00" : "#0969da",
                       escape(family), 100 * s->mean_error);
    out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">RMSPE {:.1f}%, ±10% {}, repeat ±10% {}</text>\n",
                       fr.width - fr.right + 6, y + 12, s->rmspe, pct(s->within10), pct(s->repeatability.within10));
    y += 26;
  }
  return out + "</svg>\n";
}

std::string drift(const EvaluateReport& r) {
  struct Dot {
    double minutes, deviation;
    std::string model;
  };
  std::vector<Dot> dots;
  double t0 = 1e300;
  for (const auto& m : r.models)
    for (double t : m.repeat_times)
      if (t > 0) t0 = std::min(t0, t);
  for (const auto& m : r.models) {
    if (m.repeats_ms.size() < 2 || m.repeat_times.size() != m.repeats_ms.size()) continue;
    const double mid = LatencyStats::from_samples(m.repeats_ms).median;
    for (size_t i = 0; i < m.repeats_ms.size(); ++i)
      if (m.repeat_times[i] > 0 && mid > 0) dots.push_back({(m.repeat_times[i] - t0) / 60, m.repeats_ms[i] / mid - 1, m.name});
  }
  if (dots.size() < 2) return "<p>Drift needs at least two repeats per model.</p>\n";
  Frame fr;
  fr.height = 300;
  fr.x0 = 0;
  fr.x1 = std::max(0.5, std::max_element(dots.begin(), dots.end(), [](auto& a, auto& b) { return a.minutes < b.minutes; })->minutes);
  double dev = 0.05;
  for (const auto& d : dots) dev = std::max(dev, std::min(0.5, std::abs(d.deviation)));
  fr.y0 = -100 * dev;
  fr.y1 = 100 * dev;
  std::string out = svg_open(fr, "each repeat against its model's median repeat over the run");
  out += axes(fr, "minutes since the first measurement", "repeat / model's median repeat − 1 (%)", "");
  for (const auto& d : dots)
    out += fmt::format("<circle class=\"drift\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"#6e7781\" fill-opacity=\"0.6\">"
                       "<title>{} at {:.1f} min: {:+.1f}%</title></circle>\n",
                       fr.tx(d.minutes), fr.ty(std::clamp(100 * d.deviation, fr.y0, fr.y1)), escape(d.model), d.minutes,
                       100 * d.deviation);
  // The median of each tenth of the run: a level that moves over time is drift, not noise.
  std::sort(dots.begin(), dots.end(), [](const Dot& a, const Dot& b) { return a.minutes < b.minutes; });
  std::string path;
  const size_t bins = std::min<size_t>(10, dots.size());
  for (size_t b = 0; b < bins; ++b) {
    const size_t lo = b * dots.size() / bins, hi = (b + 1) * dots.size() / bins;
    std::vector<double> devs, mins;
    for (size_t i = lo; i < hi; ++i) devs.push_back(100 * dots[i].deviation), mins.push_back(dots[i].minutes);
    path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", fr.tx(LatencyStats::from_samples(mins).median),
                        fr.ty(std::clamp(LatencyStats::from_samples(devs).median, fr.y0, fr.y1)));
  }
  out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#8250df\" stroke-width=\"2\"/>\n", path);
  return out + "</svg>\n";
}

std::string model_table(const EvaluateReport& r) {
  std::string out =
      "<table><thead><tr><th>model</th><th>family</th><th>measured (ms)</th><th>predicted (ms)</th><th>error</th>"
      "<th>repeat deviation</th><th>repeats (ms)</th></tr></thead><tbody>\n";
  for (const auto& m : r.models) {
    if (!m.error.empty()) {
      out += fmt::format("<tr class=\"failed\"><td>{}</td><td>{}</td><td colspan=\"5\">{}</td></tr>\n", escape(m.name),
                         escape(m.family), escape(m.error));
      continue;
    }
    std::string repeats;
    for (double v : m.repeats_ms) repeats += (repeats.empty() ? "" : ", ") + fmt::format("{:.3f}", v);
    const double e = m.relative_error().value_or(0);
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{:.4f}</td><td>{:.4f}</td><td class=\"{}\">{:+.1f}%</td><td>{}</td>"
                       "<td>{}</td></tr>\n",
                       escape(m.name), escape(m.family), m.measured_ms.value_or(0), m.predicted_ms.value_or(0),
                       std::abs(e) <= 0.10 ? "ok" : "off", 100 * e,
                       m.split_half_deviation ? pct(*m.split_half_deviation) : "-", repeats);
  }
  return out + "</tbody></table>\n";
}

// Only with `evaluate --kernels`: each model's error split into the kernel predictors' and the composition's,
// and each predictor kernel on the distinct configs the models use.
std::string kernel_tables(const EvaluateReport& r) {
  const auto signed_pct = [](double v) { return fmt::format("{:+.1f}%", 100 * v); };
  std::string out =
      "<h2>Where the error comes from</h2>\n<p>Every kernel the predictor detects was also measured alone, by the same "
      "protocol, as the builder measures its samples. <em>predictors</em>: the kernels' predictions against those "
      "measurements; <em>composition</em>: the kernels measured alone against the model measured whole.</p>\n"
      "<table><thead><tr><th>model</th><th>prediction</th><th>predictors</th><th>composition</th></tr></thead><tbody>\n";
  for (const auto& m : r.models) {
    const auto c = m.composition_error();
    const auto e = m.relative_error();
    if (!m.split || !c || !e) continue;
    out += fmt::format("<tr><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td></tr>\n", escape(m.name),
                       std::abs(*e) <= 0.10 ? "ok" : "off", signed_pct(*e), signed_pct(m.split->predictor_error()),
                       signed_pct(*c));
  }
  out += "</tbody></table>\n<h3>Kernel predictors on the models' kernels</h3>\n"
         "<table><thead><tr><th>kernel</th><th>distinct configs</th><th>within ±10%</th><th>RMSPE</th>"
         "<th>Σ predicted (ms)</th><th>Σ measured (ms)</th><th>error</th></tr></thead><tbody>\n";
  for (const auto& [name, t] : r.by_kernel_type)
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td><td>{:.3f}</td><td>{:.3f}</td><td>{}</td></tr>\n",
                       escape(name), t.configs, t.measured ? pct(t.within10) : "-", t.rmspe, t.predicted_ms,
                       t.measured_ms, t.measured_ms > 0 ? signed_pct(t.predicted_ms / t.measured_ms - 1) : "-");
  return out + "</tbody></table>\n";
}

// The result in a sentence: how many models the predictor gets within ±10 %, against the share the
// measurement itself repeats within ±10 % (no predictor can be judged beyond it).
std::string headline(const EvaluateReport& r, size_t failed) {
  const AccuracySummary& s = r.summary;
  if (s.models == 0) return "No model could be scored: see the table of models below.";
  std::string out = fmt::format("The predictor is within ±10 % of the measured latency on {} of the {} scored models "
                                "(RMSPE {:.1f} %); ",
                                pct(s.within10), s.models, s.rmspe);
  if (s.repeatability.samples == 0)
    out += "the models' repeats were too few to tell how well the measurement itself repeats.";
  else if (s.within10 + 0.05 >= s.repeatability.within10)
    out += fmt::format("the measurement repeats within ±10 % on {}, so it is as close as this machine's measurements "
                       "can show.", pct(s.repeatability.within10));
  else
    out += fmt::format("the measurement repeats within ±10 % on {}, so the predictor, not the measurement, limits "
                       "the accuracy.", pct(s.repeatability.within10));
  if (failed > 0) out += fmt::format(" {} model{} could not be scored.", failed, failed == 1 ? "" : "s");
  return out;
}

}  // namespace

std::string EvaluateReport::to_html() const {
  const AccuracySummary& s = summary;
  size_t failed = 0;
  for (const auto& m : models) failed += !m.error.empty();
  std::string out = fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>nn-meter evaluate: {0} on {1}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #1f2328; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border: 1px solid #d0d7de; padding: 3px 8px; text-align: right; }}
td:first-child, th:first-child, td:nth-child(2), th:nth-child(2) {{ text-align: left; }}
td.ok {{ color: #1a7f37; }} td.off {{ color: #cf222e; }} tr.failed td {{ color: #9a6700; text-align: left; }}
.summary td {{ text-align: left; }}
p.headline {{ font-size: 16px; max-width: 60em; }}
</style></head><body>
<h1>Latency predictor {0} on {1}</h1>
<p class="headline">{13}</p>
<table class="summary">
<tr><td>models</td><td>{2} scored of {3} ({4} not scored)</td></tr>
<tr><td>prediction</td><td>RMSPE {5:.1f}%, within ±5% {6}, within ±10% {7}, mean error {8:+.1f}%</td></tr>
<tr><td>measurement repeatability</td><td>within ±5% {9}, within ±10% {10} (two halves of {11} repeats in fresh processes, {12} of each half): the ceiling for the line above</td></tr>
</table>
)",
                                escape(predictor), escape(backend), s.models, models.size(), failed, s.rmspe, pct(s.within5),
                                pct(s.within10), 100 * s.mean_error, pct(s.repeatability.within5),
                                pct(s.repeatability.within10), protocol.repeats, to_string(protocol.statistic),
                                escape(headline(*this, failed)));
  if (s.kendall_tau)
    out.replace(out.rfind("</table>"), 8,
                fmt::format("<tr><td>ranking</td><td>Kendall τ {:.3f}, Spearman ρ {:.3f} (the two halves of the repeats "
                            "rank the models with τ {}: the ceiling)</td></tr>\n</table>",
                            *s.kendall_tau, s.spearman.value_or(0),
                            s.repeatability.kendall_tau ? fmt::format("{:.3f}", *s.repeatability.kendall_tau) : "-"));
  if (composition && kernel_sum_summary) {
    const AccuracySummary& k = *kernel_sum_summary;
    const std::string row = fmt::format(
        "<tr><td>plain sum of kernels</td><td>RMSPE {:.1f}%, within ±5% {}, within ±10% {}, mean error {:+.1f}% (the "
        "same measurements, without the {})</td></tr>\n</table>\n"
        "<details><summary>Calibration details</summary><p>{}</p></details>",
        k.rmspe, pct(k.within5), pct(k.within10), 100 * k.mean_error,
        calibration ? fmt::format("composition fitted on the {} networks of --calibrate-on measured in the same order",
                                  calibration->before.models)
                    : std::string("predictor's calibrated composition"),
        escape(composition->describe() + (composition->describe_fit().empty() ? "" : "; " + composition->describe_fit())));
    out.replace(out.rfind("</table>"), 8, row);
  }
  if (const auto& o = own_composition_summary)
    out.replace(out.rfind("</table>"), 8,
                fmt::format("<tr><td>predictor's own composition</td><td>RMSPE {:.1f}%, within ±5% {}, within ±10% {}, mean "
                            "error {:+.1f}% (the same measurements, as predict gives them: the term fitted when the "
                            "predictor was built; the gap is the machine's level since then)</td></tr>\n</table>",
                            o->rmspe, pct(o->within5), pct(o->within10), 100 * o->mean_error));
  out += "<h2>Predicted versus measured</h2>\n<p>Green: within ±10 % (the shaded band); red: outside it.</p>\n" + scatter(*this);
  out += "<h2>Error by model family</h2>\n" + family_bars(*this);
  out += "<h2>Drift over the run</h2>\n<p>Each dot is one repeat against its model's median repeat; the line is the "
         "median of each tenth of the run. A line that wanders is drift of the device; a wide cloud around a flat "
         "line is noise between processes.</p>\n" + drift(*this);
  if (!kernels.empty()) out += kernel_tables(*this);
  out += "<h2>Models</h2>\n" + model_table(*this);
  out += fmt::format("<p>Backend config: <code>{}</code></p>\n</body></html>\n", escape(backend_config.dump()));
  return out;
}

}  // namespace nnmeter
