"""The native module, loaded on first use: the base classes a plugin imports (nn_meter.builder.backends,
nn_meter.builder.nn_modules, ...) must import without loading libnnmeter, so that a plugin host process
stays light and never needs the core's own runtime."""
import importlib
import os
import sys


def point_python_plugins_here():
    """Python plugins run in this interpreter with this package's plugin host, unless NN_METER_PYTHON and
    NN_METER_PLUGIN_HOST say otherwise: libnnmeter finds the host in a build tree or a dist-packages folder
    only, not in a virtual environment's site-packages."""
    os.environ.setdefault("NN_METER_PLUGIN_HOST", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "_plugin_host.py"))
    if sys.executable:
        os.environ.setdefault("NN_METER_PYTHON", sys.executable)


class _Native:
    _module = None

    def __getattr__(self, name):
        if _Native._module is None:
            point_python_plugins_here()
            _Native._module = importlib.import_module("nn_meter._nnmeter")
        return getattr(_Native._module, name)


native = _Native()
