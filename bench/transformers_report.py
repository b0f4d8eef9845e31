#!/usr/bin/python3
"""The summary of bench/run_transformers_bench.sh OUT: per kernel, its held-out accuracy next to its split-half
repeat ceiling (OUT/ws/predictor_build/results/accuracy.json) and BF_linear_gelu's verdict; per model family and
overall, the calibrated predictor and the plain sum of kernels next to the measurement's ceiling; per kernel
type on the models' own kernels measured alone (evaluate --kernels), where the error lies.
Usage: bench/transformers_report.py OUT   (markdown on stdout)"""
import json
import os
import sys


def pct(x):
    return "-" if x is None else f"{100 * x:.1f} %"


def main(out):
    ws = os.path.join(out, "ws")
    acc = json.load(open(os.path.join(ws, "predictor_build", "results", "accuracy.json")))
    lines = ["## Kernels: held out, next to the repeat ceiling", "",
             "| kernel | samples | held out | ±5 % | ±10 % | RMSPE | ceiling ±5 % | ceiling ±10 % |",
             "|---|---|---|---|---|---|---|---|"]
    for a in acc:
        m, r = a["metrics"], a["repeatability"]
        lines.append(f"| {a['kernel']} | {a['samples']} | {m['count']} | {pct(m['acc5'])} | {pct(m['acc10'])} | "
                     f"{m['rmspe']:.1f} % | {pct(r['within5'])} | {pct(r['within10'])} |")
    rules = json.load(open(os.path.join(ws, "fusion_rule_test", "results", "detected_fusion_rule.json")))
    rule = rules.get("BF_linear_gelu", {})
    meta = json.load(open(os.path.join(ws, "predictor_build", "predictor", "predictor.json")))
    lines += ["", f"BF_linear_gelu: obey {rule.get('obey')}; measurement_quality of the build: "
                  f"{meta.get('measurement_quality', {}).get('verdict', '-')}", ""]

    ev = json.load(open(os.path.join(out, "evaluate", "results.json")))
    s, plain = ev["summary"], ev.get("kernel_sum_summary")
    lines += ["## Models (evaluate, the build's composition term)", "",
              "| | models | ±5 % | ±10 % | RMSPE | mean error |", "|---|---|---|---|---|---|",
              f"| calibrated predictor | {s['models']} | {pct(s['within5'])} | {pct(s['within10'])} | {s['rmspe']:.1f} % | "
              f"{100 * s['mean_error']:+.1f} % |"]
    if plain:
        lines.append(f"| plain sum of kernels | {plain['models']} | {pct(plain['within5'])} | {pct(plain['within10'])} | "
                     f"{plain['rmspe']:.1f} % | {100 * plain['mean_error']:+.1f} % |")
    r = s["repeatability"]
    lines.append(f"| measurement ceiling (split half, {ev['protocol']['repeats']} repeats) | {r['samples']} | "
                 f"{pct(r['within5'])} | {pct(r['within10'])} | | |")
    failed = [m["model"] for m in ev["models"] if m.get("failure")]
    lines += ["", f"Failed to predict or measure: {', '.join(failed) if failed else 'none'}.", "",
              "| family | models | ±5 % | ±10 % | RMSPE | ceiling ±10 % |", "|---|---|---|---|---|---|"]
    for fam, f in sorted(ev["by_family"].items()):
        lines.append(f"| {fam} | {f['models']} | {pct(f['within5'])} | {pct(f['within10'])} | {f['rmspe']:.1f} % | "
                     f"{pct(f['repeatability']['within10'])} |")
    lines += ["", "| model | measured ms | predicted ms | error | Σ kernels ms | kernels predicted / measured alone | "
                  "split-half dev. |", "|---|---|---|---|---|---|---|"]
    for m in sorted(ev["models"], key=lambda m: m["model"]):
        if m.get("failure"):
            continue
        split = (f"{m['kernels_predicted_ms']:.2f} / {m['kernels_measured_ms']:.2f}" if "kernels_measured_ms" in m else "-")
        lines.append(f"| {m['model']} | {m['measured_ms']:.2f} | {m['predicted_ms']:.2f} | {100 * m['error']:+.1f} % | "
                     f"{m.get('kernels_ms', 0):.2f} | {split} | {pct(m.get('split_half_deviation'))} |")
    if "by_kernel_type" in ev:
        lines += ["", "## The models' own kernels, measured alone", "",
                  "| kernel | distinct configs | measured | ±10 % | RMSPE | Σ predicted ms | Σ measured ms |",
                  "|---|---|---|---|---|---|---|"]
        for k, t in sorted(ev["by_kernel_type"].items(), key=lambda kv: -kv[1]["measured_ms"]):
            lines.append(f"| {k} | {t['configs']} | {t['measured']} | {pct(t['within10'])} | {t['rmspe']:.1f} % | "
                         f"{t['predicted_ms']:.1f} | {t['measured_ms']:.1f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
