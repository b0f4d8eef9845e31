"""The builder's end-to-end steps: sample and profile kernel data, build kernel predictors, convert and
profile models. Profiling runs in nn-meter's isolated worker processes with its measurement protocol
(REPEATS independent repeats in fresh processes, journaled, resumable); these calls release the GIL."""
import os
import sys

from .._native import native as _nnmeter
from ..utils import dumps, loads, progress_wanted, registry_home, write_json_atomic
from .backends import backend_name, connect_backend, Backend
from .config_manager import builder_config
# The kernel-level steps live with the kernel predictor builder; they are offered here too, as in nn-Meter.
from .kernel_predictor_builder import (
    DEFAULT_SEED,
    build_adaptive_predictor_by_data,
    build_initial_predictor_by_data,
    build_predictor_for_kernel,
    check_mode,
)


def _results_dir(mode="predbuild"):
    if mode != "predbuild":
        raise ValueError(f"mode {mode!r} is not profiled through this API: the fusion-rule test runs with "
                         "`nn-meter` (mode='predbuild' is the kernel predictor builder's)")
    return os.path.join(builder_config.workspace, "predictor_build", "results")


def sample_and_profile_kernel_data(kernel_type, sample_num, backend, sampling_mode="prior", configs=None, mark="",
                                   detail=True, metrics=("latency",), seed=DEFAULT_SEED, **kwargs):
    """Samples configs of `kernel_type`, writes their models and profiles them on `backend`. Returns the
    kernel data {ID: {model, shapes, config, latency, repeats_ms}} of the profiled samples; the configs go
    to results/<kernel_type>_<mark>.json, the latencies to results/profiled_<kernel_type>.json."""
    check_mode(sampling_mode)
    _only_latency(metrics, kwargs)
    return loads(_nnmeter.sample_and_profile(builder_config.workspace, backend_name(backend), kernel_type,
                                             int(sample_num), sampling_mode, dumps(list(configs or [])),
                                             mark or sampling_mode, int(seed), progress_wanted(), registry_home()))


def _only_latency(metrics, kwargs):
    if list(metrics) != ["latency"]:
        raise ValueError(f"only the 'latency' metric is profiled, not {list(metrics)}")
    if kwargs:
        raise TypeError(f"unexpected arguments: {', '.join(sorted(kwargs))}")


def build_latency_predictor(backend, kernels=None, predictor_name="", folder="", ruletest=True, seed=DEFAULT_SEED,
                            remeasure_noisy=False):
    """Builds every kernel of predictorbuild_config.yaml's KERNELS (or `kernels`) with its own settings,
    then the predictor folder (default <ws>/predictor_build/predictor) with the backend's fusion rules.
    remeasure_noisy=True repeats the samples of an earlier build whose repeats did not settle (as
    `nn-meter build --remeasure-noisy`). Prints the accuracy table and returns the per-kernel summaries."""
    out = loads(_nnmeter.build_latency_predictor(builder_config.workspace, backend_name(backend), list(kernels or []),
                                                 predictor_name, os.fspath(folder), int(seed), progress_wanted(),
                                                 bool(ruletest), bool(remeasure_noisy), registry_home()))
    for line in out["table"].splitlines():
        print(f"(nn-Meter) {line}", file=sys.stderr)
    return out["kernels"]


def _models_doc(models):
    """(doc {kernel: {ID: entry}}, source file or None) from a dict or a JSON file path."""
    if isinstance(models, (str, os.PathLike)):
        path = os.fspath(models)
        with open(path) as f:
            return loads(f.read()), path
    if isinstance(models, dict):
        return models, None
    raise TypeError(f"models must be a kernel data dict or its JSON file, not {type(models).__name__}")


def convert_models(backend, models, mode="predbuild", broken_point_mode=False, model_save_path=None):
    """Converts every model of `models` ({kernel: {ID: {model, ...}}} or its JSON file) into the backend's
    format, storing the files as "converted_model". Saves the result under the input file's name (or
    converted_results.json) in the results folder and returns it. broken_point_mode skips entries already
    converted."""
    if not isinstance(backend, Backend):
        backend = connect_backend(backend)
    doc, source = _models_doc(models)
    results = _results_dir(mode)
    save_dir = model_save_path or os.path.join(builder_config.workspace, "predictor_build", "converted")
    for kernel, entries in doc.items():
        for entry_id, entry in entries.items():
            if broken_point_mode and entry.get("converted_model"):
                continue
            if "model" not in entry:
                raise ValueError(f"entry {entry_id} of '{kernel}' has no model path")
            entry["converted_model"] = backend.convert_model(entry["model"], save_dir)
    name = os.path.basename(source) if source else "converted_results.json"
    write_json_atomic(os.path.join(results, name), doc)
    return doc


def profile_models(backend, models, mode="predbuild", metrics=("latency",), save_name=None, have_converted=False,
                   **kwargs):
    """Profiles every model of `models` ({kernel: {ID: entry}} or its JSON file) on `backend` with the
    measurement protocol. Latencies are merged into results/profiled_<kernel>.json (and results/<save_name>
    when it names another file). Returns {kernel: {ID: entry with "latency"}} of the profiled models."""
    _only_latency(metrics, kwargs)
    results = _results_dir(mode)
    doc, _ = _models_doc(models)
    seed = DEFAULT_SEED
    out = {}
    for kernel, entries in doc.items():
        if not have_converted:
            entries = {i: {k: v for k, v in e.items() if k != "converted_model"} for i, e in entries.items()}
        out[kernel] = loads(_nnmeter.profile_kernel_data(builder_config.workspace, backend_name(backend), kernel,
                                                         dumps(entries), seed, progress_wanted(), registry_home()))
    if save_name and not all(save_name == f"profiled_{k}.json" for k in out):
        path = os.path.join(results, save_name)
        saved = {}
        if os.path.exists(path):
            with open(path) as f:
                saved = loads(f.read())
        for kernel, entries in out.items():
            saved.setdefault(kernel, {}).update({i: {"latency": e["latency"]} for i, e in entries.items()})
        write_json_atomic(path, saved)
    return out
