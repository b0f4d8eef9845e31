#!/usr/bin/python3
"""Does every real export load? Exports each classification model of Debian's torchvision with torch.onnx.export
(batch 1, constant folding on, as a user would) at the given opsets and runs `nn-meter get_ir` on it: static
shapes for every tensor or a one-line refusal. With --predictor NAME, also `nn-meter --json predict`, reporting
the share of ops not counted and the kernels predicted by a stand-in regressor.

Usage: bench/torchvision_exports.py OUT_DIR [--opsets 13 17] [--models a b ...] [--predictor NAME] [--nn-meter PATH]
       [--python DIR]   (exports with the product's nn_meter.torch_to_onnx, from the build tree by default)
Resumable: an export already in OUT_DIR is reused, a model already in OUT_DIR/results.csv is not run again.
Exports are deleted after use unless --keep (the largest are gigabytes)."""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

FIELDS = ["model", "opset", "export", "get_ir", "nodes", "uncovered_ops", "stand_ins", "message", "seconds"]


def export(nn_meter, models, name, path, opset):
    """What a user's export writes: nn_meter.torch_to_onnx (batch 1, constant folding on, attention's fast path
    off), at 224 x 224 (Inception: 299)."""
    module = models.get_model(name, weights=None) if hasattr(models, "get_model") else getattr(models, name)(weights=None)
    size = 299 if name == "inception_v3" else 224
    nn_meter.torch_to_onnx(module.eval(), (1, 3, size, size), opset_version=opset, path=path)


def last_line(text):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--opsets", type=int, nargs="+", default=[13, 17])
    ap.add_argument("--models", nargs="+")
    ap.add_argument("--predictor")
    ap.add_argument("--nn-meter", default=os.path.join(os.path.dirname(__file__), "..", "build", "nn-meter"))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--python", default=os.path.join(os.path.dirname(__file__), "..", "build", "python"),
                    help="where the nn_meter package is (default: the build tree's)")
    a = ap.parse_args()
    sys.path.insert(0, a.python)
    import nn_meter
    import torchvision.models as models
    names = a.models or sorted(models.list_models(module=models))
    os.makedirs(a.out, exist_ok=True)
    results = os.path.join(a.out, "results.csv")
    done = set()
    if os.path.exists(results):
        with open(results) as f:
            done = {(r["model"], int(r["opset"])) for r in csv.DictReader(f)}
    new_file = not os.path.exists(results)
    with open(results, "a", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        if new_file:
            w.writeheader()
        for opset in a.opsets:
            for name in names:
                if (name, opset) in done:
                    continue
                row = {"model": name, "opset": opset, "export": "ok", "get_ir": "", "nodes": "", "uncovered_ops": "",
                       "stand_ins": "", "message": ""}
                start = time.time()
                path = os.path.join(a.out, f"{name}_op{opset}.onnx")
                try:
                    if not os.path.exists(path):
                        export(nn_meter, models, name, path + ".part", opset)
                        os.replace(path + ".part", path)
                except Exception as e:  # the exporter's own limits, not ours: recorded as such
                    row["export"] = "failed"
                    row["message"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
                if row["export"] == "ok":
                    ir = os.path.join(a.out, f"{name}_op{opset}_ir.json")
                    r = subprocess.run([a.nn_meter, "--json", "get_ir", "--onnx", path, "--output", ir],
                                       capture_output=True, text=True, timeout=1800)
                    row["get_ir"] = "ok" if r.returncode == 0 else "refused"
                    if r.returncode == 0:
                        with open(ir) as g:
                            row["nodes"] = len(json.load(g))
                        os.remove(ir)
                    else:
                        row["message"] = last_line(r.stdout + r.stderr)
                    if a.predictor and r.returncode == 0:
                        p = subprocess.run([a.nn_meter, "--json", "predict", "--predictor", a.predictor, "--onnx", path],
                                           capture_output=True, text=True, timeout=1800)
                        if p.returncode == 0:
                            pred = json.loads(p.stdout)[os.path.basename(path)]
                            row["uncovered_ops"] = len(pred["uncovered"])
                            row["stand_ins"] = sum(pred["stand_ins"].values())
                        else:
                            row["message"] = last_line(p.stdout + p.stderr)
                    if not a.keep:
                        os.remove(path)
                row["seconds"] = f"{time.time() - start:.1f}"
                w.writerow(row)
                f.flush()
                print(f"{name:<28} opset {opset}: export {row['export']:<6} get_ir {row['get_ir'] or '-':<7} "
                      f"{row['message'][:120]}", flush=True)
    with open(results) as f:
        rows = list(csv.DictReader(f))
    for opset in a.opsets:
        mine = [r for r in rows if int(r["opset"]) == opset]
        exported = [r for r in mine if r["export"] == "ok"]
        loaded = [r for r in exported if r["get_ir"] == "ok"]
        print(f"opset {opset}: {len(mine)} models, {len(exported)} exported, {len(loaded)} load with static shapes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
