#!/usr/bin/python3
"""Python package speed: the per-call overhead of nn_meter's predict over the same C++ call (timed in C++
inside the same process, rounds interleaved), batch prediction throughput against a Python loop.

Usage: bench/python_bench.py BUILD_DIR OUT.md   (BUILD_DIR: a Release build with the bench tools)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

build, out_md = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(build, "python"))
tmp = tempfile.mkdtemp(prefix="nn_meter-python-bench-")
os.environ["NN_METER_HOME"] = os.path.join(tmp, "home")
import nn_meter  # noqa: E402
from nn_meter.builder import build_latency_predictor, builder_config  # noqa: E402

cli = os.path.join(build, "nn-meter")
ws = os.path.join(tmp, "ws")
subprocess.run([cli, "create", "--workspace", ws, "--backend", "onednn_cpu"], check=True, capture_output=True)
with open(os.path.join(ws, "configs", "backend_config.yaml"), "w") as f:
    f.write("NUM_RUNS: 3\nNUM_ROUNDS: 1\nMIN_TIME_MS: 1\nREPEATS: 1\n")
kernels = ["conv-bn-relu", "dwconv-bn-relu", "fc", "global-avgpool", "add", "relu", "hswish", "se", "concat",
           "maxpool", "avgpool", "channelshuffle"]
with open(os.path.join(ws, "configs", "predictorbuild_config.yaml"), "w") as f:
    f.write("IMPLEMENT: onnx\nBATCH_SIZE: 1\nKERNELS:\n" + "".join(
        f"  {k}:\n    INIT_SAMPLE_NUM: 12\n    FINEGRAINED_SAMPLE_NUM: 2\n    ITERATION: 1\n    ERROR_THRESHOLD: 0.1\n"
        for k in kernels))
builder_config.init(ws)
nn_meter.set_log_level("warning")
build_latency_predictor("onednn_cpu", predictor_name="bench", ruletest=False)
folder = os.path.join(ws, "predictor_build", "predictor")
with open(os.path.join(folder, "fusion_rules.json"), "w") as f:  # the rules onednn_cpu's rule test finds
    json.dump({f"BF_{a}_{b}": {"obey": True} for a in ("conv", "dwconv") for b in ("relu", "relu6", "hswish")}, f)
predictor = nn_meter.load_predictor_folder(folder)

zoo = os.path.join(tmp, "zoo")
subprocess.run([os.path.join(build, "bench", "backend_export_zoo"), zoo, "224"], check=True)
models = json.load(open(os.path.join(zoo, "zoo.json")))
mnv2 = next(m["file"] for m in models if m["name"] == "mobilenet_v2")
mnv2_bytes = open(mnv2, "rb").read()

from nn_meter.predictor import _source  # noqa: E402


def python_calls(model, calls):
    seconds = []
    for _ in range(calls):
        t0 = time.perf_counter()
        predictor.predict(model)
        seconds.append(time.perf_counter() - t0)
    return seconds


rows = []
for label, model in (("ONNX path", mnv2), ("ONNX bytes in memory", mnv2_bytes)):
    native = predictor._p
    source = _source(model, "onnx", None)
    ratios, py_med, cpp_med = [], [], []
    for _ in range(15):  # interleaved rounds: the same level for both sides of each ratio
        c = statistics.median(native._time_native_predict(source, 40))
        p = statistics.median(python_calls(model, 40))
        ratios.append(p / c)
        cpp_med.append(c)
        py_med.append(p)
    rows.append((label, statistics.median(cpp_med) * 1e3, statistics.median(py_med) * 1e3,
                 100 * (statistics.median(ratios) - 1), 100 * (min(ratios) - 1), 100 * (max(ratios) - 1)))

paths = [m["file"] for m in models] * 10
t0 = time.perf_counter()
loop = [predictor.predict(p) for p in paths]
t_loop = time.perf_counter() - t0
batch = {}
for threads in (1, 2):
    t0 = time.perf_counter()
    got = predictor.predict_batch(paths, threads=threads)
    batch[threads] = time.perf_counter() - t0
    assert got == loop

with open(out_md, "w") as f:
    f.write("| model form | C++ call (ms, median) | Python `predict` (ms, median) | overhead (median of 15 rounds) | "
            "range over rounds |\n|---|---|---|---|---|\n")
    for label, c, p, med, lo, hi in rows:
        f.write(f"| MobileNetV2 224, {label} | {c:.3f} | {p:.3f} | {med:+.2f} % | {lo:+.2f} … {hi:+.2f} % |\n")
    f.write(f"\n{len(paths)} models ({len(models)} zoo CNNs at 224, ×10), identical results in every mode:\n\n"
            "| how | seconds | models/s |\n|---|---|---|\n")
    f.write(f"| Python loop of `predict` | {t_loop:.3f} | {len(paths) / t_loop:.0f} |\n")
    for threads, t in batch.items():
        f.write(f"| `predict_batch(threads={threads})` | {t:.3f} | {len(paths) / t:.0f} |\n")
print(open(out_md).read())
