#!/usr/bin/env python3
"""The summary of bench/run_sharding_bench.sh OUT: wall times, each shard's measuring time against what the plan
expected, the plan's expected time on more devices, and the merged labels (with and without SHARD_LEVELS
normalize) against the single-host build's. Usage: sharding_report.py OUT > OUT/summary.md"""
import glob
import json
import os
import statistics
import sys


def records(path):
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
    return out


def journals(results):
    return sorted(glob.glob(os.path.join(results, "profile_journal_*.jsonl")))


def kernel_of(journal):
    return os.path.basename(journal)[len("profile_journal_"):-len(".jsonl")]


def repeats(ws):
    """(kernel, id) -> the records of its measured repeats in a build's journals."""
    out = {}
    for path in journals(os.path.join(ws, "predictor_build", "results")):
        for r in records(path):
            if r.get("ok"):
                out.setdefault((kernel_of(path), r["id"]), []).append(r)
    return out


def labels_single(ws):
    """(kernel, id) -> label (ms): the minimum of the repeats' medians, as the protocol records it."""
    return {k: min(r["median"] for r in rs) for k, rs in repeats(ws).items()}


def labels_merged(ws):
    """(kernel, id) -> (label as measured, label normalized, shard) from a merged build's journal."""
    return {k: (min(r["median"] * r.get("shard_level", 1.0) for r in rs), min(r["median"] for r in rs),
                rs[0].get("shard", "")) for k, rs in repeats(ws).items()}


def agreement(ref, other):
    dev = [abs(other[k] / ref[k] - 1) for k in ref if k in other]
    n = len(dev)
    return (n, 100 * sum(d <= 0.05 for d in dev) / n, 100 * sum(d <= 0.10 for d in dev) / n,
            100 * statistics.median(dev))


def per_job_seconds(ws):
    """(kernel, id) -> measured seconds of its repeats in a one-host run: the time from the previous record's end to
    its own end, over every journal of the run (drift probes included) in time order."""
    results = os.path.join(ws, "predictor_build", "results")
    rows = []
    for path in journals(results):
        rows += [(r["t"], (kernel_of(path), r["id"])) for r in records(path)]
    probes = os.path.join(results, "drift_probes.jsonl")
    if os.path.exists(probes):
        rows += [(r["t"], None) for r in records(probes)]
    rows.sort()
    out = {}
    for (t0, _), (t1, key) in zip(rows, rows[1:]):
        if key is not None:
            out[key] = out.get(key, 0) + (t1 - t0)
    return out


def shard_times(ws):
    """shard folder -> (measurements, seconds from its first record's end to its last's, jobs)."""
    out = {}
    for d in sorted(glob.glob(os.path.join(ws, "predictor_build", "shards", "*", "*-of-*"))):
        ts, jobs = [], set()
        for path in glob.glob(os.path.join(d, "*.jsonl")):
            kernel = os.path.basename(path).split("-", 1)[1][len("profile_journal_"):-len(".jsonl")] \
                if "profile_journal_" in path else None
            for r in records(path):
                ts.append(r["t"])
                if kernel:
                    jobs.add((kernel, r["id"]))
        out[os.path.basename(d)] = (len(ts), max(ts) - min(ts), jobs)
    return out


def main(out_dir):
    single, sharded, loaded = (os.path.join(out_dir, p) for p in ("single", "sharded", "loaded"))
    print("# Sharded build bench\n")
    wall = {"single": float(open(single + ".done").read())}
    for part in ("sharded", "loaded"):
        t0, t_shards, t_end = map(float, open(os.path.join(out_dir, part + ".done")).read().split())
        wall[part] = (t_end - t0, t_shards - t0, t_end - t_shards)
    print("| run | wall time | of which shards | merge + train |\n|---|---|---|---|")
    print(f"| one host | {wall['single']:.0f} s | | |")
    for part in ("sharded", "loaded"):
        w = wall[part]
        print(f"| 2 shards ({'quiet' if part == 'sharded' else 'shard 1 shares its core'}) | {w[0]:.0f} s | "
              f"{w[1]:.0f} s | {w[2]:.0f} s |")

    plan = json.load(open(os.path.join(sharded + ".plan.json")))
    plan_file = json.load(open(os.path.join(sharded, "predictor_build", "shards", "plan.json")))
    cost = {}
    for b in plan_file["batches"]:
        for j in b["jobs"]:
            cost[(kernel_of(b["journal"]), j["id"])] = j["cost_s"]
    measured = per_job_seconds(single)
    common = [k for k in cost if k in measured]
    total_expected = sum(cost[k] for k in common)
    total_measured = sum(measured[k] for k in common)
    ratios = sorted(measured[k] / cost[k] for k in common)
    print(f"\n## Expected time (the plan's cost model) against the single host's measured time\n")
    print(f"- {len(common)} models: expected {total_expected:.0f} s, measured {total_measured:.0f} s "
          f"(x{total_measured / total_expected:.2f}); per model measured/expected: median {statistics.median(ratios):.2f}, "
          f"10th-90th percentile {ratios[len(ratios) // 10]:.2f}-{ratios[9 * len(ratios) // 10]:.2f}")
    for part in ("sharded", "loaded"):
        for name, (n, seconds, jobs) in shard_times(os.path.join(out_dir, part)).items():
            exp = sum(cost.get(k, 0) for k in jobs)
            meas = sum(measured.get(k, 0) for k in jobs)
            print(f"- {part} shard {name}: {n} measurements in {seconds:.0f} s; its models took {meas:.0f} s on the "
                  f"single host, expected {exp:.0f} s")
    scale = total_measured / total_expected
    print("\n## The plan's expected wall time on N devices (largest shard), scaled by measured/expected above\n")
    print("| devices | largest shard | mean shard | largest / mean |\n|---|---|---|---|")
    for d in plan["devices"]:
        if d["shards"] in (1, 2, 4, 16, 64):
            print(f"| {d['shards']} | {d['largest_s'] * scale:.0f} s | {d['mean_s'] * scale:.0f} s | "
                  f"{d['largest_s'] / d['mean_s']:.2f} |")

    ref = labels_single(single)
    print("\n## Labels against the single host's (share within ±5 % / ±10 %, median deviation)\n")
    print("| run | labels | ±5 % | ±10 % | median deviation |\n|---|---|---|---|---|")
    for part, title in (("sharded", "2 shards, quiet"), ("loaded", "2 shards, shard 1 loaded")):
        merged = labels_merged(os.path.join(out_dir, part))
        for which, label in ((0, "as measured (SHARD_LEVELS off)"), (1, "normalize")):
            n, a5, a10, med = agreement(ref, {k: v[which] for k, v in merged.items()})
            print(f"| {title}, {label} | {n} | {a5:.1f} % | {a10:.1f} % | {med:.1f} % |")
        for shard in sorted({v[2] for v in merged.values()}):
            n, a5, a10, med = agreement(ref, {k: v[0] for k, v in merged.items() if v[2] == shard})
            print(f"| {title}, shard {shard} only, as measured | {n} | {a5:.1f} % | {a10:.1f} % | {med:.1f} % |")
    for part in ("sharded", "loaded"):
        log = open(os.path.join(out_dir, part + ".merge.log")).read().splitlines()
        for line in log:
            if "against the median of the shards" in line:
                print(f"\n{part}: {line.strip()}")


if __name__ == "__main__":
    main(sys.argv[1])
