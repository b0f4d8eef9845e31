#!/usr/bin/env python3
"""How much of each evaluated network's predicted time falls on layers that are exactly a training sample.

Reads OUT of `SAMPLE_MODELS=1 bench/run_accuracy_bench.sh`: the workspace's sampled configs (results/<kernel>_prior.json,
results/<kernel>_models.json) and `nn-meter predict --json` of OUT/models with OUT's predictor. A layer whose kernel
and config equal a sample's was measured alone while building; the rest the regressors interpolate.
Usage: bench/sample_models_overlap.py OUT
"""
import collections
import glob
import json
import os
import subprocess
import sys


def key(kernel, config):
    return kernel + json.dumps(config, sort_keys=True)


def main(out):
    results = os.path.join(out, "ws", "predictor_build", "results")
    marks = {}
    for path in glob.glob(os.path.join(results, "*_*.json")):
        name = os.path.basename(path)[: -len(".json")]
        kernel, _, mark = name.rpartition("_")
        if mark not in ("prior", "models"):
            continue
        for entry in json.load(open(path)).get(kernel, {}).values():
            marks.setdefault(key(kernel, entry["config"]), mark)
    nnm = os.path.join(out, "bin", "nn-meter")
    env = dict(os.environ, NN_METER_HOME=os.path.join(out, "overlap_home"))  # a registry of its own
    meta = os.path.join(out, "ws", "predictor_build", "predictor", "meta.yaml")
    subprocess.run([nnm, "register", "--predictor", meta], check=True, capture_output=True, env=env)
    name = next(line.split(":", 1)[1].strip() for line in open(meta) if line.startswith("name:"))
    predicted = json.loads(subprocess.run([nnm, "predict", "--predictor", name, "--onnx", os.path.join(out, "models"), "--json"],
                                          check=True, capture_output=True, text=True, env=env).stdout)
    by_family = collections.defaultdict(lambda: collections.Counter())
    print("share of each network's predicted kernel time on layers that are exactly a sample "
          "(models: of the SAMPLE_MODELS networks; prior: a prior sample)")
    print(f"{'model':<32} {'models':>7} {'prior':>7}")
    for name in sorted(predicted):
        shares = collections.Counter()
        total = 0.0
        for k in predicted[name]["kernels"]:
            ms = k.get("latency_ms", 0.0)
            total += ms
            if k.get("predictor_kernel"):
                mark = marks.get(key(k["predictor_kernel"], k["config"]))
                if mark:
                    shares[mark] += ms
        family = name.split("_r")[0]
        by_family[family]["total"] += total
        for mark in ("models", "prior"):
            by_family[family][mark] += shares[mark]
        print(f"{name:<32} {100 * shares['models'] / total:6.1f}% {100 * shares['prior'] / total:6.1f}%")
    print(f"\n{'family':<32} {'models':>7} {'prior':>7}")
    for family, c in sorted(by_family.items()):
        print(f"{family:<32} {100 * c['models'] / c['total']:6.1f}% {100 * c['prior'] / c['total']:6.1f}%")


if __name__ == "__main__":
    main(os.path.realpath(sys.argv[1]))
