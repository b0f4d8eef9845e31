#!/usr/bin/env python3
"""The oracle bound of a kernel-sum predictor, from one `nn-meter evaluate --kernels` results.json.

Every model's kernels were measured alone in the same shuffled order as the model; their sum (each kernel's
statistic of its repeats, times its groups) is what a perfect kernel predictor would predict. The script scores
that sum, and the predictor's own sum of kernels, against the measured models: plain, and scaled by a composition
term fitted on these models (in sample: an upper bound) and with each family held out (fitted on the other
families). The forms: one factor; factor × footprint^c (calibrate's form); a factor per kernel type; and terms in
the bytes the kernels read and write, the per-kernel work a network shares between neighbouring kernels. Next to
them the measurement's own repeatability (split halves of each model's repeats) and the kernel sums' (even vs odd
repeats of every kernel). Pure Python: no numpy on a bare machine.
Usage: bench/oracle_bound.py OUT/evaluate/results.json"""
import json
import math
import sys
from collections import Counter


def solve(a, b):
    """Least squares: the normal equations by Gaussian elimination (a handful of unknowns)."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] * y for r, y in zip(a, b))] for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-300:
            return [0.0] * n
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                m[r] = [x - f * y for x, y in zip(m[r], m[c])]
    return [m[i][n] / m[i][i] for i in range(n)]


def kernel_bytes(kernel, c):
    """MB read (input), held (weights) and written (output) by one kernel of this config, float32."""
    hw = c.get("HW", 1)
    cin = c.get("CIN", sum(c.get(f"CIN{i}", 0) for i in range(1, 5)))
    if kernel == "fc":
        return c["CIN"] * 4e-6, c["CIN"] * c["COUT"] * 4e-6, c["COUT"] * 4e-6
    if "conv" in kernel:
        k, s, cout = c["KERNEL_SIZE"], c["STRIDES"], c["COUT"]
        weights = k * k * (1 if kernel.startswith("dwconv") else cin) * cout
        return hw * hw * cin * 4e-6, weights * 4e-6, math.ceil(hw / s) ** 2 * cout * 4e-6
    return hw * hw * cin * 4e-6, 0.0, hw * hw * cin * 4e-6


def load(path):
    doc = json.load(open(path))
    kernels = {k["id"]: k for k in doc.get("kernels", [])}
    rows = []
    for m in doc["models"]:
        if m.get("measured_ms") is None or "kernels_measured_ms" not in m:
            continue
        r = Counter()
        by_type = {"oracle": Counter(), "predicted": Counter()}
        for use in m["kernel_uses"]:
            k, groups = kernels[use["id"]], use["groups"]
            repeats = k["repeats_ms"]
            r["oracle"] += k["measured_ms"] * groups
            r["predicted"] += use["predicted_ms"]
            r["even"] += min(repeats[0::2]) * groups
            r["odd"] += min(repeats[1::2] or repeats) * groups
            by_type["oracle"][k["kernel"]] += k["measured_ms"] * groups
            by_type["predicted"][k["kernel"]] += use["predicted_ms"]
            read, held, written = kernel_bytes(k["kernel"], k["config"])
            r["read"] += read * groups
            r["held"] += held * groups
            r["written"] += written * groups
        rows.append({"model": m["model"], "family": m["family"], "measured": m["measured_ms"],
                     "footprint": m["footprint_mb"], "split_half": m["split_half_deviation"], "by_type": by_type, **r})
    return doc, rows


def features(row, source, form, types):
    total = row[source]
    if form == "factor":
        return [total]
    if form == "footprint":  # log-linear in footprint, as calibrate fits it
        return [total, total * math.log(row["footprint"])]
    if form == "kernel types":
        return [row["by_type"][source].get(t, 0.0) for t in types]
    if form == "bytes read, held":
        return [total, row["read"] * 1e-3, row["held"] * 1e-3]
    raise ValueError(form)


def fitted(train, source, form, types):
    # Relative least squares (each row divided by its measurement), in the log for the footprint form.
    if form == "footprint":
        xs = [math.log(r["footprint"]) for r in train]
        ys = [math.log(r["measured"] / r[source]) for r in train]
        c1, c0 = solve([[x, 1.0] for x in xs], ys)
        lo, hi = min(xs), max(xs)
        return lambda r: r[source] * math.exp(c0 + c1 * min(max(math.log(r["footprint"]), lo), hi))
    if form == "kernel types":
        # A type the training families lack (SE only in EfficientNet, ...) takes the one factor fitted on them.
        present = [t for t in types if any(r["by_type"][source].get(t, 0.0) > 0 for r in train)]
        w = dict(zip(present, solve([[f / r["measured"] for f in features(r, source, form, present)] for r in train],
                                    [1.0] * len(train))))
        other = fitted(train, source, "factor", types)
        return lambda r: (sum(w.get(t, 0.0) * v for t, v in r["by_type"][source].items()) +
                          other({source: sum(v for t, v in r["by_type"][source].items() if t not in w)}))
    w = solve([[f / r["measured"] for f in features(r, source, form, types)] for r in train], [1.0] * len(train))
    return lambda r: sum(a * b for a, b in zip(w, features(r, source, form, types)))


def score(errors):
    n = len(errors)
    return (f"±5 % {100 * sum(abs(e) <= 0.05 for e in errors) / n:5.1f}  ±10 % {100 * sum(abs(e) <= 0.10 for e in errors) / n:5.1f}"
            f"  RMSPE {100 * math.sqrt(sum(e * e for e in errors) / n):4.1f}  mean {100 * sum(errors) / n:+5.1f}")


def main():
    doc, rows = load(sys.argv[1])
    if not rows:
        sys.exit(f"{sys.argv[1]}: no model with every kernel measured (run nn-meter evaluate --kernels)")
    types = sorted({t for r in rows for t in r["by_type"]["oracle"]})
    families = sorted({r["family"] for r in rows})
    print(f"{len(rows)} models ({len(families)} families), {len(doc['kernels'])} distinct kernels; "
          f"model repeats {doc['protocol']['repeats']}, kernel repeats {doc.get('kernel_repeats')}")
    print(f"  measurement's own repeatability (split halves of each model's repeats): "
          f"±5 % {100 * sum(r['split_half'] <= 0.05 for r in rows) / len(rows):5.1f}  "
          f"±10 % {100 * sum(r['split_half'] <= 0.10 for r in rows) / len(rows):5.1f}")
    print(f"  kernel sums' own repeatability (even vs odd repeats of every kernel): "
          f"{score([r['even'] / r['odd'] - 1 for r in rows])}")
    print(f"  kernel predictors vs kernels measured alone (Σ per model): "
          f"{score([r['predicted'] / r['oracle'] - 1 for r in rows])}")
    for source, label in (("oracle", "Σ kernels measured alone (oracle)"), ("predicted", "Σ kernels predicted")):
        print(f"\n{label}")
        print(f"  {'plain sum':18s} {score([r[source] / r['measured'] - 1 for r in rows])}")
        for form in ("factor", "footprint", "kernel types", "bytes read, held"):
            inside = fitted(rows, source, form, types)
            held_out = {}
            for family in families:
                predict = fitted([r for r in rows if r["family"] != family], source, form, types)
                held_out.update({r["model"]: predict(r) for r in rows if r["family"] == family})
            print(f"  {form:18s} in sample {score([inside(r) / r['measured'] - 1 for r in rows])}")
            print(f"  {'':18s} family out {score([held_out[r['model']] / r['measured'] - 1 for r in rows])}")
    oracle = fitted(rows, "oracle", "footprint", types)
    predicted = fitted(rows, "predicted", "footprint", types)
    print("\nper model, worst oracle first (footprint term in sample; composition: Σ measured alone vs the model):")
    print(f"{'model':30s} {'ms':>7s} {'MB':>5s} {'halves':>7s} {'oracle':>7s} {'predictor':>9s} {'kernels':>8s} {'composition':>11s}")
    for r in sorted(rows, key=lambda r: -abs(oracle(r) / r["measured"] - 1)):
        print(f"{r['model']:30s} {r['measured']:7.2f} {r['footprint']:5.0f} {100 * r['split_half']:6.1f}% "
              f"{100 * (oracle(r) / r['measured'] - 1):+6.1f}% {100 * (predicted(r) / r['measured'] - 1):+8.1f}% "
              f"{100 * (r['predicted'] / r['oracle'] - 1):+7.1f}% {100 * (r['oracle'] / r['measured'] - 1):+10.1f}%")


if __name__ == "__main__":
    main()
