"""nn-Meter: predict the inference latency of a DNN model on a device without running it, and build the
latency predictors for your own devices. The Python face of nn-meter's C++ core (libnnmeter).

    import nn_meter
    predictor = nn_meter.load_latency_predictor("onednn_cpu_predictor")
    latency_ms = predictor.predict("mobilenet_v2.onnx", model_type="onnx")
"""
from ._nnmeter import NNMeterError, set_log_level
from ._nnmeter import version as _version
from .predictor import (
    list_latency_predictors,
    load_latency_predictor,
    load_predictor_folder,
    nnMeterPredictor,
    model_to_graph,
    model_file_to_graph,
)
from .utils import latency_metrics

__version__ = _version()

__all__ = [
    "NNMeterError",
    "set_log_level",
    "load_latency_predictor",
    "load_predictor_folder",
    "list_latency_predictors",
    "nnMeterPredictor",
    "model_to_graph",
    "model_file_to_graph",
    "latency_metrics",
]
