"""The native module, loaded on first use: the base classes a plugin imports (nn_meter.builder.backends,
nn_meter.builder.nn_modules, ...) must import without loading libnnmeter, so that a plugin host process
stays light and never needs the core's own runtime."""
import importlib


class _Native:
    _module = None

    def __getattr__(self, name):
        if _Native._module is None:
            _Native._module = importlib.import_module("nn_meter._nnmeter")
        return getattr(_Native._module, name)


native = _Native()
