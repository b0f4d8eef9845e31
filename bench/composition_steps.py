#!/usr/bin/env python3
"""Reads bench/run_composition_steps.sh's output: every primitive of every network timed inside the network
against the same primitive in the predictor's kernel models measured alone, and splits each network's
composition error (Σ kernels alone − network) into
  layers      the matched primitives cost differently alone than in the network,
  extra       kernel primitives the network does not run (fused away there, e.g. an add into a conv),
  missing     network primitives no kernel model runs,
  overheads   a model's time (execute() timed whole) beyond the sum of its steps' medians: what runs between
              the primitives and the runs in which a step was slow.
A step's time is its median over the runs of the process whose steps add up to the least (the minimum over
the repeats, as the measurement protocol keeps it).
Pure Python: runs on a bare machine.

    composition_steps.py OUT_DIR|STEPS.jsonl.gz [ORACLE_RESULTS_JSON(.gz)]
    composition_steps.py --reduce OUT_DIR STEPS.jsonl.gz      (keeps one record per model and protocol)
"""
import collections
import glob
import gzip
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ORACLE = os.path.join(HERE, "results", "oracle-2026-11-27", "results.json.gz")


def reduce(records):
    """One record: the steps of the repeat (process) whose steps add up to the least, as the protocol keeps the
    minimum over the repeats (a minimum taken step by step would pick each step's luckiest process and sum
    to less than any run of the network did)."""
    best = min(records, key=lambda r: r["steps_sum_ms"])
    return {"steps": best["steps"], "steps_sum_ms": best["steps_sum_ms"], "total_ms": best["total_ms"],
            "repeats": len(records)}


def load(path):
    """{(model stem, protocol): reduced record} from a run's folder (its repeat*.jsonl) or from the reduced
    records `--reduce` wrote (.jsonl.gz). A network's record lists the distinct kernel models evaluate detected
    in it ("kernel_ids")."""
    if os.path.isfile(path):
        with gzip.open(path, "rt") as f:
            return {(r["model"], r["protocol"]): r for r in map(json.loads, f)}
    runs = collections.defaultdict(list)
    for name in sorted(glob.glob(os.path.join(path, "repeat*.jsonl"))):
        with open(name) as f:
            for line in f:
                r = json.loads(line)
                runs[(os.path.basename(r["model"])[: -len(".onnx")], r["protocol"])].append(r)
    data = {}
    for (model, protocol), records in runs.items():
        data[(model, protocol)] = {"model": model, "protocol": protocol, **reduce(records)}
        kernels = os.path.join(path, "kernels", model, "ev", "kernels")
        if os.path.isdir(kernels):
            data[(model, protocol)]["kernel_ids"] = sorted(f[: -len(".onnx")] for f in os.listdir(kernels)
                                                           if f.endswith(".onnx"))
    return data


def key(step):
    d = step.get("dims", {})
    return (step["primitive"],) + tuple(tuple(d.get(n, ())) for n in ("src", "src_1", "weights", "dst"))


def step_mb(step):
    """MB a step reads and writes (float32 tensors; weights once)."""
    n = 0
    for dims in step.get("dims", {}).values():
        size = 1
        for d in dims:
            size *= d
        n += size
    return 4.0 * n / 2**20


BUCKETS = [0, 4, 16, 32, 64, 128, float("inf")]


def family(model):
    return model.split("_r")[0]


def pct(a, b):
    return 100.0 * (a / b - 1.0) if b else float("nan")


def main():
    if sys.argv[1] == "--reduce":
        with gzip.open(sys.argv[3], "wt") as f:
            for record in load(sys.argv[2]).values():
                f.write(json.dumps(record) + "\n")
        return
    out = sys.argv[1]
    oracle_path = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_ORACLE
    opener = gzip.open if oracle_path.endswith(".gz") else open
    with opener(oracle_path, "rt") as f:
        oracle = json.load(f)
    # A use of `groups` > 1 stands for that many identical kernels (the groups of a grouped conv).
    uses = {m["model"]: [u["id"] for u in m["kernel_uses"] for _ in range(u.get("groups", 1))]
            for m in oracle["models"]}
    data = load(out)
    protocols = sorted({p for _, p in data})
    base = "cold0" if "cold0" in protocols else protocols[0]
    repeats = min(d["repeats"] for d in data.values())
    networks = {m for m, p in data if "kernel_ids" in data[(m, p)]}
    print(f"{out}: {len(networks)} networks and {len({m for m, _ in data} - networks)} kernel models, protocols "
          f"{', '.join(protocols)}; each model's steps from the process with the least sum of its {repeats} "
          f"repeats")

    by_kind = collections.defaultdict(lambda: collections.defaultdict(float))
    by_family = collections.defaultdict(lambda: collections.defaultdict(float))
    by_traffic = collections.defaultdict(lambda: collections.defaultdict(float))
    rows = []
    for model in sorted(uses):
        if any((m, p) not in data for m in [model] + uses[model] for p in protocols):
            continue  # a run still going, or one that stopped early
        net = data[(model, base)]
        pool = collections.defaultdict(list)  # key -> [(alone ms per protocol)]
        kernel_total = kernel_overhead = 0.0
        for kid in uses[model]:
            k = data[(kid, base)]
            kernel_total += k["total_ms"]
            kernel_overhead += k["total_ms"] - sum(s["ms"] for s in k["steps"])
            for i, s in enumerate(k["steps"]):
                pool[key(s)].append({p: data[(kid, p)]["steps"][i]["ms"] for p in protocols} | {"kind": s["primitive"]})
        matched = {p: 0.0 for p in protocols}
        matched_net = missing = traffic = 0.0
        for s in net["steps"]:
            bucket = next(i for i in range(len(BUCKETS) - 1) if traffic < BUCKETS[i + 1])
            traffic += step_mb(s)
            cands = pool.get(key(s))
            if not cands:
                missing += s["ms"]
                by_kind[s["primitive"]]["missing"] += s["ms"]
                continue
            c = cands.pop()
            matched_net += s["ms"]
            for p in protocols:
                matched[p] += c[p]
                by_kind[s["primitive"]][p] += c[p]
                by_family[family(model)][p] += c[p]
            by_kind[s["primitive"]]["net"] += s["ms"]
            by_family[family(model)]["net"] += s["ms"]
            for p in protocols:
                by_traffic[bucket][p] += c[p]
            by_traffic[bucket]["net"] += s["ms"]
            by_traffic[bucket]["steps"] += 1
        extra = sum(c[base] for left in pool.values() for c in left)
        for left in pool.values():
            for c in left:
                by_kind[c["kind"]]["extra"] += c[base]
        t = net["total_ms"]
        rows.append({
            "model": model, "ms": t, "composition": pct(kernel_total, t),
            "layers": 100 * (matched[base] - matched_net) / t, "extra": 100 * extra / t,
            "missing": -100 * missing / t, "kernel_overhead": 100 * kernel_overhead / t,
            "net_overhead": -100 * (t - sum(s["ms"] for s in net["steps"])) / t,
            "matched_share": 100 * matched_net / sum(s["ms"] for s in net["steps"]),
            **{f"layers_{p}": pct(matched[p], matched_net) for p in protocols}})

    if not rows:
        print(f"no network of {oracle_path} in {out} (its kernel uses are needed): only composition_cells.py "
              "reads this run")
        return
    print("\nper network, % of the network's time (cold0 = COLD_CACHE eviction only, the predictor's protocol):")
    print(f"{'model':32s} {'ms':>6s} {'compos.':>8s} = {'layers':>7s} {'extra':>6s} {'missing':>8s} "
          f"{'k.overh':>7s} {'n.overh':>7s}  {'matched':>7s}  " + " ".join(f"{'layers ' + p:>13s}" for p in protocols))
    for r in sorted(rows, key=lambda r: r["composition"]):
        print(f"{r['model']:32s} {r['ms']:6.2f} {r['composition']:+7.1f}% = {r['layers']:+6.1f}% {r['extra']:+5.1f}% "
              f"{r['missing']:+7.1f}% {r['kernel_overhead']:+6.1f}% {r['net_overhead']:+6.1f}%  {r['matched_share']:6.1f}%  "
              + " ".join(f"{r['layers_' + p]:+12.1f}%" for p in protocols))
    for name in ["composition", "layers", "extra", "missing", "kernel_overhead", "net_overhead"] + \
            [f"layers_{p}" for p in protocols]:
        v = [r[name] for r in rows]
        print(f"  {name:16s} mean {statistics.mean(v):+6.1f}%  sd {statistics.pstdev(v):5.1f}%  "
              f"range {min(v):+6.1f}..{max(v):+6.1f}%")

    print("\nby primitive (all networks; Σ alone against Σ inside the network, the matched steps):")
    for kind, v in sorted(by_kind.items(), key=lambda kv: -kv[1]["net"]):
        print(f"  {kind:14s} in network {v['net']:8.2f} ms  " +
              "  ".join(f"{p} {pct(v[p], v['net']):+6.1f}%" for p in protocols) +
              f"  extra {v['extra']:6.2f} ms  missing {v['missing']:6.2f} ms")
    print("\nby the MB the network moved before the step in its run (tensors read and written since the "
          "eviction; matched steps):")
    for b, v in sorted(by_traffic.items()):
        print(f"  {BUCKETS[b]:4.0f}..{BUCKETS[b + 1]:<4.0f} MB {int(v['steps']):5d} steps, in network {v['net']:8.2f} ms  "
              + "  ".join(f"{p} {pct(v[p], v['net']):+6.1f}%" for p in protocols))
    print("\nby family (matched steps):")
    for fam, v in sorted(by_family.items()):
        print(f"  {fam:20s} in network {v['net']:8.2f} ms  " + "  ".join(f"{p} {pct(v[p], v['net']):+6.1f}%" for p in protocols))


if __name__ == "__main__":
    main()
