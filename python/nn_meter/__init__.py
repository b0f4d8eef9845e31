"""nn-Meter: predict the inference latency of a DNN model on a device without running it, and build the
latency predictors for your own devices. The Python face of nn-meter's C++ core (libnnmeter).

    import nn_meter
    predictor = nn_meter.load_latency_predictor("onednn_cpu_predictor")
    latency_ms = predictor.predict("mobilenet_v2.onnx", model_type="onnx")
    report = nn_meter.evaluate("onednn_cpu_predictor", "models/")  # measured vs predicted, next to the ceiling
"""
from ._native import native as _native
from . import networks
from .evaluation import calibrate, evaluate, leave_family_out
from .predictor import (
    list_latency_predictors,
    load_latency_predictor,
    load_predictor_folder,
    nnMeterPredictor,
    model_to_graph,
    model_file_to_graph,
    torch_to_onnx,
    detect_kernels,
)
from .registry import register_module, register_predictor, unregister_module
from .utils import latency_metrics

__all__ = [
    "NNMeterError",
    "set_log_level",
    "load_latency_predictor",
    "load_predictor_folder",
    "list_latency_predictors",
    "nnMeterPredictor",
    "model_to_graph",
    "model_file_to_graph",
    "torch_to_onnx",
    "detect_kernels",
    "latency_metrics",
    "register_module",
    "unregister_module",
    "register_predictor",
    "evaluate",
    "calibrate",
    "leave_family_out",
    "networks",
    "torch_networks",
]


def __getattr__(name):
    # The core's names load the native module on first use (plugin hosts import nn_meter without it).
    # torch_networks on first use too: `python3 -m nn_meter.torch_networks` must find it not yet imported.
    if name == "torch_networks":
        import importlib
        return importlib.import_module(".torch_networks", __name__)
    if name in ("NNMeterError", "set_log_level"):
        return getattr(_native, name)
    if name == "__version__":
        return _native.version()
    raise AttributeError(f"module 'nn_meter' has no attribute {name!r}")
