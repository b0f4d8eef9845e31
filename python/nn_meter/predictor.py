"""The predictor side: load a latency predictor and predict models (ONNX, torch, nn-Meter IR)."""
import io
import os

from ._native import native as _nnmeter
from .utils import dumps, loads, registry_home, write_bytes_atomic

MODEL_TYPES = ("onnx", "torch", "nnmeter-ir")
TORCH_DEFAULT_INPUT_SHAPE = (1, 3, 224, 224)


def list_latency_predictors():
    """The registered predictors, as dicts: name, version, category, package_location, kernel_predictors."""
    return loads(_nnmeter.list_predictors(registry_home()))


def load_latency_predictor(predictor_name, predictor_version=None):
    """A registered predictor by name; the latest version unless `predictor_version` is given.

    An unknown name or version raises NNMeterError listing the registered ones.
    """
    version = "" if predictor_version is None else str(predictor_version)
    return nnMeterPredictor(_nnmeter.LatencyPredictor.load(predictor_name, version, registry_home()))


def load_predictor_folder(folder):
    """A predictor straight from its folder (predictor.json, <kernel>.json, fusion_rules.json, and composition.json
    when calibrated), unregistered."""
    return nnMeterPredictor(_nnmeter.LatencyPredictor.from_folder(os.fspath(folder), registry_home()))


def torch_to_onnx(model, input_shape=None, opset_version=13, path=None):
    """A torch.nn.Module (or a torchvision model name) as torch.onnx.export writes it, batch 1, constant folding
    on, eval mode: the graph a user's own export has. Returns the model's bytes, and writes them to `path`
    (atomically) when given."""
    try:
        import torch
    except ImportError:
        raise ImportError("model_type='torch' needs PyTorch (Debian: apt-get install python3-torch); "
                          "or export the model to ONNX yourself and use model_type='onnx'") from None
    if isinstance(model, str):
        try:
            import torchvision
        except ImportError:
            raise ImportError(f"a torch model given by name ('{model}') needs torchvision; pass a torch.nn.Module "
                              "instead") from None
        if not hasattr(torchvision.models, model):
            raise ValueError(f"torchvision.models has no model named '{model}'")
        model = getattr(torchvision.models, model)()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model_type='torch' takes a torch.nn.Module, not {type(model).__name__}")
    shape = tuple(int(d) for d in (input_shape or TORCH_DEFAULT_INPUT_SHAPE))
    first = next(model.parameters(), None)
    dummy = torch.randn(*shape, device=first.device if first is not None else "cpu")
    # nn.MultiheadAttention and the Transformer layers take a fused fast path with no ONNX export (torch 1.13)
    # when no gradient is wanted. With grad on and their weights requiring it they run the plain ops, still in eval
    # mode: BatchNorm folds into convs, Dropout vanishes, the numbers are eval mode's.
    fast_path = (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer, torch.nn.TransformerDecoderLayer)
    frozen = [p for m in model.modules() if isinstance(m, fast_path) for p in m.parameters() if not p.requires_grad]
    modes = {m: m.training for m in model.modules()}
    buffer = io.BytesIO()
    try:
        for p in frozen:
            p.requires_grad_(True)
        with torch.enable_grad():
            torch.onnx.export(model.eval(), dummy, buffer, opset_version=opset_version, do_constant_folding=True,
                              input_names=["input"], output_names=["output"], training=torch.onnx.TrainingMode.EVAL)
    finally:
        for p in frozen:
            p.requires_grad_(False)
        for m, training in modes.items():
            m.training = training
    data = buffer.getvalue()
    if path is not None:
        write_bytes_atomic(path, data)
    return data


def _source(model, model_type, input_shape):
    """The model as the core reads it: ("file", path) / ("bytes", serialized ONNX) / ("ir", json text)."""
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type must be one of {', '.join(MODEL_TYPES)}, not {model_type!r} "
                         "(TensorFlow .pb and NNI IR are not supported: export the model to ONNX)")
    if model_type == "onnx":
        if isinstance(model, (str, os.PathLike)):
            # A file name is any bytes: the core opens the very bytes, and names the file in text it can print.
            raw = os.fsencode(model)
            return _nnmeter.ModelSource("file", raw, raw.decode("utf-8", "replace"))
        if isinstance(model, (bytes, bytearray, memoryview)):
            return _nnmeter.ModelSource("bytes", bytes(model), "<ONNX bytes>")
        if hasattr(model, "SerializeToString"):  # onnx.ModelProto, without importing onnx here
            name = getattr(getattr(model, "graph", None), "name", "") or "model"
            return _nnmeter.ModelSource("bytes", model.SerializeToString(), f"<onnx.ModelProto {name}>")
        raise TypeError(f"model_type='onnx' takes a file path, bytes or an onnx.ModelProto, not {type(model).__name__}")
    if model_type == "torch":
        name = model if isinstance(model, str) else type(model).__name__
        return _nnmeter.ModelSource("bytes", torch_to_onnx(model, input_shape), f"<torch {name}>")
    # nnmeter-ir
    if isinstance(model, (str, os.PathLike)):
        raw = os.fsencode(model)
        with open(raw, "rb") as f:
            return _nnmeter.ModelSource("ir", f.read(), raw.decode("utf-8", "replace"))
    if isinstance(model, dict):
        return _nnmeter.ModelSource("ir", dumps(model).encode(), "<nn-Meter IR dict>")
    raise TypeError(f"model_type='nnmeter-ir' takes a file path or a dict, not {type(model).__name__}")


def _shapes(input_shape, model_type):
    """Graph-input overrides for ONNX models with symbolic dims: {input name: shape}. A plain shape (tuple)
    is the torch export's input shape, as in nn-Meter, and overrides nothing here."""
    if isinstance(input_shape, dict) and model_type != "torch":
        return {str(k): [int(d) for d in v] for k, v in input_shape.items()}
    return {}


class nnMeterPredictor:
    """A latency predictor: kernel predictors plus the backend's fusion rules.

    predict() returns the model's latency in milliseconds; predict_detail() adds the per-kernel breakdown;
    predict_batch() predicts many models without the GIL (for NAS loops); predict_kernels() predicts a table
    of kernel feature rows (numpy) with one kernel predictor.
    """

    def __init__(self, native):
        self._p = native

    @property
    def name(self):
        return self._p.name

    @property
    def kernel_predictors(self):
        """Names of the kernels this predictor has a regressor for."""
        return list(self._p.kernels)

    @property
    def folder(self):
        return self._p.folder

    def predict(self, model, model_type="onnx", input_shape=None, apply_nni=False):
        """Latency in ms of `model`: an ONNX file path, bytes or onnx.ModelProto (model_type="onnx"), a
        torch.nn.Module (model_type="torch", exported at `input_shape`, default (1, 3, 224, 224)), or an
        nn-Meter IR dict or file (model_type="nnmeter-ir")."""
        if apply_nni:
            raise ValueError("apply_nni is not supported: pass the torch module itself")
        return self._p.predict(_source(model, model_type, input_shape), _shapes(input_shape, model_type))

    def predict_detail(self, model, model_type="onnx", input_shape=None):
        """The prediction with its kernels: {"model", "latency_ms", "kernels": [...], "uncovered": [...]}."""
        return loads(self._p.predict_detail(_source(model, model_type, input_shape), _shapes(input_shape, model_type)))

    def predict_batch(self, models, model_type="onnx", input_shape=None, threads=None):
        """Latencies (ms) of many models, in order. Runs without the GIL on `threads` threads (default: all
        CPUs). The first model that cannot be predicted raises, naming it."""
        sources = [_source(m, model_type, input_shape) for m in models]
        threads = threads or os.cpu_count() or 1
        return self._p.predict_many(sources, _shapes(input_shape, model_type), int(threads))

    def predict_kernels(self, kernel, features):
        """Latencies (ms, numpy array) of kernel feature rows (2-D array, one row per config, the layout of
        get_feature_parser(kernel).get_feature_by_config)."""
        return self._p.predict_kernels(kernel, features)


def model_file_to_graph(filename, model_type="onnx", input_shape=None):
    """nn-Meter's IR (dict) of a model file."""
    return model_to_graph(filename, model_type, input_shape)


def detect_kernels(model, fusion_rules, model_type="onnx", input_shape=None):
    """The kernels a predictor with these fusion rules would detect in a model, without predicting them: a list of
    dicts (name, op, kind — compute, elementwise, layout or unsupported —, kernel, config, nodes). `fusion_rules` is
    a predictor folder, a fusion_rules.json file or the rules as a dict ({"BF_conv_relu": {"obey": True}, ...})."""
    if not isinstance(fusion_rules, dict):
        path = os.fspath(fusion_rules)
        if os.path.isdir(path):
            path = os.path.join(path, "fusion_rules.json")
        with open(path, encoding="utf-8") as f:
            fusion_rules = loads(f.read())
    return loads(_nnmeter.detect_kernels(_source(model, model_type, input_shape), _shapes(input_shape, model_type),
                                         dumps(fusion_rules)))


def model_to_graph(model, model_type="onnx", input_shape=None):
    """nn-Meter's IR (dict) of a model: what `nn-meter get_ir` writes."""
    return loads(_nnmeter.model_ir_json(_source(model, model_type, input_shape), _shapes(input_shape, model_type)))
