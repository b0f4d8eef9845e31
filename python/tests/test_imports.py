"""Every module of nn_meter imports on its own, in a fresh interpreter: an import cycle shows only when a
module of the cycle is the first one imported, so one shared process would hide it behind the import order."""
import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest


def package_modules():
    # Read from the files, not by importing: the test process must not import what it tests.
    root = pathlib.Path(importlib.util.find_spec("nn_meter").origin).parent
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = ("nn_meter",) + path.relative_to(root).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


MODULES = package_modules()


def test_the_module_list_is_the_package():
    assert {"nn_meter", "nn_meter.builder", "nn_meter.builder.nn_meter_builder",
            "nn_meter.builder.kernel_predictor_builder",
            "nn_meter.builder.kernel_predictor_builder.predictor_builder.utils"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone(module, tmp_path):
    # Run outside the source tree, so that only the package on PYTHONPATH can be imported.
    r = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=tmp_path, env=os.environ,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"import {module} failed:\n{r.stderr}"
