"""Report of bench/run_xnnpack_bench.sh: per model the minimum over repeats of each engine, the latency
ratios to onednn_cpu, and each engine's split-half agreement (min of odd repeats vs min of even repeats)."""
import json
import sys
from collections import defaultdict

ENGINES = ["onednn_cpu", "xnnpack_cpu", "onnxruntime"]
runs = defaultdict(lambda: defaultdict(dict))
for line in open(sys.argv[1]):
    d = json.loads(line)
    runs[d["name"]][d["engine"]][d["repeat"]] = d["ms"]


def split_half(reps):
    odd = [v for r, v in reps.items() if r % 2 == 1]
    even = [v for r, v in reps.items() if r % 2 == 0]
    return abs(min(odd) - min(even)) / min(even) if odd and even else None


print("| model | onednn_cpu ms | xnnpack_cpu ms | ONNX Runtime ms | xnnpack / onednn | ORT / onednn | split-half Δ onednn / xnnpack / ORT |")
print("|---|---|---|---|---|---|---|")
ratios = defaultdict(list)
halves = defaultdict(list)
for name in runs:
    mins = {e: min(runs[name][e].values()) for e in ENGINES if runs[name][e]}
    if len(mins) < 3:
        continue
    sh = {e: split_half(runs[name][e]) for e in ENGINES}
    for e in ENGINES:
        if sh[e] is not None:
            halves[e].append(sh[e])
    ratios["xnnpack"].append(mins["xnnpack_cpu"] / mins["onednn_cpu"])
    ratios["ort"].append(mins["onnxruntime"] / mins["onednn_cpu"])
    print(f"| {name} | {mins['onednn_cpu']:.2f} | {mins['xnnpack_cpu']:.2f} | {mins['onnxruntime']:.2f} | "
          f"{ratios['xnnpack'][-1]:.2f} | {ratios['ort'][-1]:.2f} | "
          + " / ".join(f"{100 * sh[e]:.1f} %" for e in ENGINES) + " |")


def geomean(v):
    p = 1.0
    for x in v:
        p *= x
    return p ** (1 / len(v)) if v else float("nan")


print()
print(f"Geometric mean of the ratios over {len(ratios['xnnpack'])} models: xnnpack_cpu / onednn_cpu "
      f"{geomean(ratios['xnnpack']):.2f}, ONNX Runtime / onednn_cpu {geomean(ratios['ort']):.2f}.")
for e in ENGINES:
    v = halves[e]
    if v:
        within = sum(1 for x in v if x <= 0.05) / len(v)
        print(f"Split-half agreement of {e}: {100 * within:.0f} % of models within ±5 %, largest {100 * max(v):.1f} %.")
