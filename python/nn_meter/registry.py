"""Registering customized modules from Python, as `nn-meter register` / `unregister` do. A module is
validated before it is recorded (a Python module by importing it and constructing its class in a plugin
host process); a failure raises NNMeterError with one line and leaves the registry unchanged."""
import os

from ._native import native as _nnmeter
from .utils import registry_home


def register_module(module_type, meta_file):
    """Registers the module a meta file describes; module_type: "backends", "kernels", "operators",
    "testcases" (or the singular). Returns the registered name."""
    try:
        name = _nnmeter.register_module(module_type, os.fspath(meta_file), registry_home())
    except _nnmeter.NNMeterError as e:
        raise _nnmeter.NNMeterError(f"Registration failed: {e}") from None
    kind = module_type[:-1] if module_type.endswith("s") else module_type
    # The CLI's lines, including the seeds' "backend NAME" next to "kernel: NAME".
    print(f"(nn-Meter) Successfully register {kind} {name}" if kind == "backend"
          else f"(nn-Meter) Successfully register {kind}: {name}")
    return name


def unregister_module(module_type, name, implement=""):
    _nnmeter.unregister_module(module_type, name, implement, registry_home())
    print(f"(nn-Meter) Successfully unregister {name}.")


def register_predictor(meta_file):
    """Registers a predictor folder's meta.yaml (what `nn-meter build` writes). Returns its name."""
    return _nnmeter.register_predictor(os.fspath(meta_file), registry_home())
