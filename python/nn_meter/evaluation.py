"""Judging a predictor: measure real models by the repeat protocol, predict them, and score the predictions
next to the measurements' own repeatability (`nn-meter evaluate`); fit a predictor's composition term on
measured networks (`nn-meter calibrate`). Both journal every measured repeat in `work_dir` and resume there.
How a predictor does on architecture families it never saw: leave_family_out (`nn-meter evaluate --leave-family-out`)."""
import os

from ._native import native as _nnmeter
from .utils import dumps, loads, progress_wanted, registry_home, write_text_atomic


def _paths(onnx):
    return [os.fspath(onnx)] if isinstance(onnx, (str, os.PathLike)) else [os.fspath(m) for m in onnx]


def _measuring_args(predictor, onnx, predictor_version, backend, config, repeats, work_dir):
    models = _paths(onnx)
    overrides = dict(config or {})
    if repeats is not None:
        overrides["REPEATS"] = int(repeats)
    return (os.fspath(predictor), "" if predictor_version is None else str(predictor_version), backend or "",
            dumps(overrides), models, os.path.abspath(os.fspath(work_dir)))


def evaluate(predictor, onnx, *, predictor_version=None, backend=None, config=None, repeats=None,
             work_dir="nn-meter-evaluate", report=None, kernels=False, kernel_repeats=None, calibrate_on=None, timeout=300,
             seed=1, progress=None):
    """Measures every model in `onnx` (a file, a folder of *.onnx, or a list of them) in REPEATS fresh processes,
    predicts it with `predictor` (a registered name or a predictor folder), and returns the report as a dict:
    "summary" (rmspe, within5, within10 and the measurement's "repeatability", the ceiling), "models" (per
    model: measured_ms, predicted_ms, error, repeats_ms, ...), "by_family", and "files" (the HTML report,
    results.json and results.csv). `config` overrides keys of the backend config the predictor was built with;
    `kernels=True` also measures every detected kernel alone (kernels.csv), each in `kernel_repeats` repeats (default:
    the REPEATS the predictor's samples were measured with). `calibrate_on` (networks as `onnx`
    takes them) are measured in the same shuffled order, the composition term is fitted on them as calibrate()
    fits it, and the models are predicted with that term ("composition", "calibration_models", and
    files["composition"]: the term, written into work_dir). Raises NNMeterError when no model could be both
    predicted and measured."""
    args = _measuring_args(predictor, onnx, predictor_version, backend, config, repeats, work_dir)
    text, html = _nnmeter.evaluate(*args, float(timeout), int(seed), progress_wanted() if progress is None else progress,
                                   bool(kernels), None if kernel_repeats is None else int(kernel_repeats),
                                   _paths(calibrate_on) if calibrate_on else [], registry_home())
    result = loads(text)
    work = args[-1]
    page = os.path.abspath(os.fspath(report)) if report else os.path.join(work, "report.html")
    write_text_atomic(page, html)
    result["files"] = {"report": page, "json": os.path.join(work, "results.json"), "csv": os.path.join(work, "results.csv")}
    if kernels:
        result["files"]["kernels_csv"] = os.path.join(work, "kernels.csv")
    if "composition_file" in result:
        result["files"]["composition"] = result["composition_file"]
    if result["summary"]["models"] == 0:
        raise _nnmeter.NNMeterError(f"none of the {len(result['models'])} models could be both predicted and measured: "
                                    f"see {result['files']['csv']}")
    return result


def calibrate(predictor, onnx, *, predictor_version=None, backend=None, config=None, repeats=None,
              work_dir="nn-meter-calibrate", dry_run=False, timeout=300, seed=1, progress=None):
    """Measures the networks in `onnx` as evaluate() does and fits the predictor's composition term on them,
    written to the predictor folder's composition.json unless `dry_run`. Returns a dict: "composition" (the
    term), "kernel_sum" and "in_sample" (the networks scored before and after), "held_out_families" (each
    family predicted by a term fitted on the others, with 3 or more families), "network_out_term" and
    "network_out" (from 10 networks on: each network predicted by a term fitted on the others, alone and with
    the neighbours' correction when calibrate kept one — composition["neighbours"]), "evaluation" and "file".
    Evaluate the calibrated predictor on other networks than these."""
    args = _measuring_args(predictor, onnx, predictor_version, backend, config, repeats, work_dir)
    return loads(_nnmeter.calibrate(*args, float(timeout), int(seed), progress_wanted() if progress is None else progress,
                                    not dry_run, registry_home()))


def leave_family_out(workspace, *, predictor=None, timeout=300, seed=1, progress=None):
    """Scores the predictor built in `workspace` (its folder: `predictor`, default <workspace>/predictor_build/predictor)
    on its calibration networks, each architecture family held out: the kernel regressors retrained without any sample
    that is a layer of the family, the composition term refitted on the other families, the family's networks
    predicted. Nothing is measured again. Returns a dict: "summary" and "by_family" (as evaluate() gives them),
    "in_sample" (the same networks as the folder predicts them), "families" (networks and kernel samples held out),
    "models", and "interval" (the 90 % interval every prediction then comes with, also written to the folder's
    generalization.json; None with fewer than 5 networks)."""
    return loads(_nnmeter.leave_family_out(os.fspath(workspace), "" if predictor is None else os.fspath(predictor),
                                           float(timeout), int(seed), progress_wanted() if progress is None else progress,
                                           registry_home()))
