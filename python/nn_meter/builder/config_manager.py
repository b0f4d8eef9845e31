"""builder_config: the workspace every builder call works in (nn-Meter's config manager)."""
import os

from .._native import native as _nnmeter
from ..utils import loads

_MODULES = ("backend", "predbuild", "ruletest")


class ConfigManager:
    """Holds the three configs of a workspace after init(): modules "backend" (backend_config.yaml),
    "predbuild" (predictorbuild_config.yaml) and "ruletest" (ruletest_config.yaml), validated by the core."""

    def __init__(self):
        self._configs = None

    def init(self, workspace_path):
        """Loads <workspace_path>/configs/*.yaml. Call it again after editing a config file to reload it."""
        self._configs = loads(_nnmeter.load_workspace(os.fspath(workspace_path)))

    @property
    def initialized(self):
        return self._configs is not None

    @property
    def workspace(self):
        return self._require()["root"]

    def get_module(self, module):
        if module not in _MODULES:
            raise ValueError(f"unknown config module {module!r}: one of {', '.join(_MODULES)}")
        return self._require()[module]

    def get(self, name, module):
        config = self.get_module(module)
        if name not in config:
            raise KeyError(f"{name} is not set in the {module} config of {self.workspace}")
        return config[name]

    def get_settings(self):
        return {m: self.get_module(m) for m in _MODULES}

    def _require(self):
        if self._configs is None:
            raise RuntimeError("no workspace: call nn_meter.builder.builder_config.init(workspace_path) first "
                               "(create one with `nn-meter create --workspace DIR --backend onednn_cpu`)")
        return self._configs


builder_config = ConfigManager()
