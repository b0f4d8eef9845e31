#!/usr/bin/env python3
"""Latency levels with HUGE_PAGES false and true, and the profiling cost of both arms.

  huge_pages_levels.py NN_METER MODELS_DIR OUT.jsonl ROUNDS   measure (resumes: appends what is missing)
  huge_pages_levels.py --report OUT                             summarize run_overhead_bench.sh's OUT

Every model is measured ROUNDS times per arm, each time a single repeat in a fresh worker process
(`nn-meter backend onednn_cpu profile --repeats 1`), both arms interleaved in one seeded shuffled order, so
the process-to-process spread is in both arms alike. The report compares the arms by the mean of
minimums over 5 processes (the protocol's label) and shows each arm's own split-half repeatability.
"""
import csv
import json
import os
import random
import statistics as st
import subprocess
import sys
import time

ARGS = ["--num-threads", "1", "--warmup-runs", "5", "--num-runs", "10", "--num-rounds", "2", "--min-time-ms", "10",
        "--repeats", "1"]


def measure(nnm, models_dir, out_path, rounds):
    models = sorted(f for f in os.listdir(models_dir) if f.endswith(".onnx"))
    items = [(m, arm, r) for m in models for arm in ("false", "true") for r in range(rounds)]
    random.Random(11).shuffle(items)
    done = set()
    if os.path.exists(out_path):
        for line in open(out_path):
            r = json.loads(line)
            done.add((r["model"], r["huge_pages"], r["round"]))
    with open(out_path, "a") as out:
        for m, arm, r in items:
            if (m, arm, r) in done:
                continue
            start = time.time()
            p = subprocess.run([nnm, "--json", "backend", "onednn_cpu", "profile", "--onnx-path",
                                os.path.join(models_dir, m), "--huge-pages", arm] + ARGS, capture_output=True, text=True)
            wall = time.time() - start
            try:
                ms = json.loads(p.stdout)["result"]["latency_ms"]
            except (ValueError, KeyError):
                ms = None
            out.write(json.dumps({"model": m, "huge_pages": arm, "round": r, "ms": ms, "wall_s": wall, "t": start}) + "\n")
            out.flush()


def within(a, b, limit):
    return abs(a - b) / min(a, b) <= limit


def split_half(repeats_ms):
    """The protocol's split-half deviation of one sample: alternating halves in measuring order, min of each."""
    halves = [repeats_ms[0::2], repeats_ms[1::2]]
    a, b = min(halves[0]), min(halves[1])
    return abs(a - b) / min(a, b)


def journal_agreement(ws):
    per_kernel = {}
    results = os.path.join(ws, "predictor_build", "results")
    for name in sorted(os.listdir(results)):
        if not (name.startswith("profile_journal_") and name.endswith(".jsonl")):
            continue
        samples = {}
        for line in open(os.path.join(results, name)):
            r = json.loads(line)
            if r.get("ok") and "id" in r:
                samples.setdefault(r["id"], []).append((r["t"], r["median"]))
        devs = [split_half([m for _, m in sorted(v)]) for v in samples.values() if len(v) >= 2]
        per_kernel[name[len("profile_journal_"):-len(".jsonl")]] = devs
    return per_kernel


def report(out):
    rows = [json.loads(line) for line in open(os.path.join(out, "levels.jsonl"))]
    print("Latency (ms) per process, single repeats; label = minimum over 5 processes in measuring order")
    print(f"{'model':28s} {'huge':5s} {'n':>3s} {'min':>9s} {'median':>9s} {'max':>9s} {'wall s':>7s}  labels (min of 5)"
          "  label pairs within 5 %")
    shifts = []
    for m in sorted({r["model"] for r in rows}):
        labels = {}
        for arm in ("false", "true"):
            sel = sorted((r for r in rows if r["model"] == m and r["huge_pages"] == arm and r["ms"]), key=lambda r: r["t"])
            v = [r["ms"] for r in sel]
            if len(v) < 5:
                continue
            groups = [min(v[i:i + 5]) for i in range(0, len(v) - 4, 5)]
            pairs = [(a, b) for i, a in enumerate(groups) for b in groups[i + 1:]]
            agree = sum(within(a, b, 0.05) for a, b in pairs)
            labels[arm] = groups
            print(f"{m:28s} {arm:5s} {len(v):3d} {min(v):9.4f} {st.median(v):9.4f} {max(v):9.4f} "
                  f"{st.median(r['wall_s'] for r in sel):7.2f}  {' '.join(f'{g:.4f}' for g in groups)}  {agree}/{len(pairs)}")
        if len(labels) == 2:
            shifts.append((m, st.mean(labels["true"]) / st.mean(labels["false"]) - 1,
                           sum(within(a, b, 0.05) for a in labels["true"] for b in labels["false"]),
                           len(labels["true"]) * len(labels["false"])))
    print("\nHUGE_PAGES true against false: mean label, and label pairs across the arms within 5 %")
    for m, shift, agree, n in shifts:
        print(f"{m:28s} {100 * shift:+6.1f} %   {agree}/{n}")

    print("\nProfiling the kernel mix: seconds, and the split-half agreement of each sample's 5 repeats")
    per = {}
    for r in csv.DictReader(open(os.path.join(out, "profiling.csv"))):
        per.setdefault(r["kernel"], {})[r["huge_pages"]] = (float(r["seconds"]), int(r["measurements"]))
    agreement = {arm: journal_agreement(os.path.join(out, "ws_" + arm)) for arm in ("false", "true")}
    print(f"{'kernel':16s} {'meas.':>5s} {'s false':>8s} {'s true':>8s} {'ratio':>6s}  within 5 % false / true")
    totals = {"false": [0.0, []], "true": [0.0, []]}
    for k, arms in per.items():
        cells = []
        for arm in ("false", "true"):
            devs = agreement[arm].get(k, [])
            totals[arm][0] += arms[arm][0]
            totals[arm][1] += devs
            cells.append(f"{sum(d <= 0.05 for d in devs)}/{len(devs)}")
        print(f"{k:16s} {arms['false'][1]:5d} {arms['false'][0]:8.1f} {arms['true'][0]:8.1f} "
              f"{arms['true'][0] / arms['false'][0]:6.2f}  {cells[0]} / {cells[1]}")
    share = {arm: (sum(d <= 0.05 for d in totals[arm][1]) / len(totals[arm][1]),
                   sum(d <= 0.10 for d in totals[arm][1]) / len(totals[arm][1])) for arm in totals}
    print(f"{'total':16s} {'':5s} {totals['false'][0]:8.1f} {totals['true'][0]:8.1f} "
          f"{totals['true'][0] / totals['false'][0]:6.2f}  ±5 %: {100 * share['false'][0]:.1f} % / "
          f"{100 * share['true'][0]:.1f} %, ±10 %: {100 * share['false'][1]:.1f} % / {100 * share['true'][1]:.1f} %")


if __name__ == "__main__":
    if sys.argv[1] == "--report":
        report(sys.argv[2])
    else:
        measure(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
