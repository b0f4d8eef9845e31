"""Backends: connect to a builtin or registered backend with the workspace's backend_config.yaml."""
import os

from ..._native import native as _nnmeter
from ...utils import dumps, loads, registry_home
from ..config_manager import builder_config


class BaseBackend:
    """Base class of a customized backend written in Python (nn-Meter's interface). `configs` is the
    workspace's backend_config.yaml as a dict."""

    def __init__(self, configs):
        self.configs = configs

    def convert_model(self, model_path, save_path, input_shape=None):
        """Converts the model at `model_path` into the backend's format inside `save_path`; returns the path."""
        return model_path

    def profile(self, converted_model, metrics=("latency",), input_shape=None, **kwargs):
        raise NotImplementedError("a customized backend must implement profile()")

    def profile_model_file(self, model_path, save_path, input_shape=None, metrics=("latency",), **kwargs):
        converted = self.convert_model(model_path, save_path, input_shape)
        return self.profile(converted, metrics=metrics, input_shape=input_shape, **kwargs)

    def test_connection(self):
        """Checks the device can be reached."""


class Backend:
    """A backend of nn-meter's core, connected with a workspace's backend config."""

    def __init__(self, name, config):
        self.name = name
        self.configs = config

    def test_connection(self):
        """The backend's connection message; raises NNMeterError when the device cannot be reached."""
        return _nnmeter.test_connection(self.name, dumps(self.configs), registry_home())

    def convert_model(self, model_path, save_path, input_shape=None):
        """The backend's files for the ONNX model at `model_path`, written inside `save_path` (list of paths)."""
        return _nnmeter.convert_model(self.name, dumps(self.configs), os.fspath(model_path), os.fspath(save_path),
                                      registry_home())

    def __repr__(self):
        return f"<nn_meter backend {self.name}>"


def list_backends():
    """Names of every backend, builtin first, then registered ones."""
    return [name for name, _ in _nnmeter.list_backends(registry_home())]


def connect_backend(backend_name):
    """The backend `backend_name` with the backend_config.yaml of the workspace given to
    builder_config.init() (the backend's defaults without one). Unknown names raise NNMeterError listing
    the known ones; a config key the backend does not declare, or a value of the wrong type, too."""
    raw = builder_config.get_module("backend") if builder_config.initialized else {}
    where = os.path.join(builder_config.workspace, "configs", "backend_config.yaml") if builder_config.initialized \
        else "the default backend config"
    config = loads(_nnmeter.resolve_backend_config(backend_name, dumps(raw), where, registry_home()))
    return Backend(backend_name, config)


def backend_name(backend):
    """A backend argument as the builder takes it: a name, or what connect_backend returned."""
    if isinstance(backend, Backend):
        return backend.name
    if isinstance(backend, str):
        return backend
    raise TypeError(f"backend must be a backend name or nn_meter.builder.backends.connect_backend(...), "
                    f"not {type(backend).__name__}")
