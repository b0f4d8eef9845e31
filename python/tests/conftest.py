"""Fixtures: a private registry home per test, a small onednn_cpu workspace with quick measurements, and
the build tree's nn-meter binary (NNMETER_CLI, set by ctest)."""
import os
import subprocess

import pytest

CLI = os.environ.get("NNMETER_CLI", "nn-meter")

# Quick measurements: these tests check the API and its files, not latency figures.
FAST_BACKEND_CONFIG = ("NUM_THREADS: 1\nWARMUP_RUNS: 1\nNUM_RUNS: 3\nNUM_ROUNDS: 2\nMIN_TIME_MS: 1\n"
                       "MAX_RETRIES: 0\nREPEATS: 2\n")


def run_cli(*args, home, check=True):
    # The suite measures in parallel on a shared machine: the check before measuring would warn at random.
    env = {"NN_METER_MACHINE_CHECK": "off", **os.environ, "NN_METER_HOME": str(home)}
    r = subprocess.run([CLI, *map(str, args)], env=env, capture_output=True, text=True, timeout=600)
    if check and r.returncode != 0:
        raise AssertionError(f"nn-meter {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}")
    return r


@pytest.fixture
def home(tmp_path, monkeypatch):
    h = tmp_path / "home"
    monkeypatch.setenv("NN_METER_HOME", str(h))
    return h


def make_workspace(path, home, kernels_yaml=None):
    run_cli("create", "--workspace", path, "--backend", "onednn_cpu", home=home)
    (path / "configs" / "backend_config.yaml").write_text(FAST_BACKEND_CONFIG)
    if kernels_yaml is not None:
        (path / "configs" / "predictorbuild_config.yaml").write_text(
            "DETAIL: TRUE\nIMPLEMENT: onnx\nBATCH_SIZE: 1\nKERNELS:\n" + kernels_yaml)
    return path


@pytest.fixture
def workspace(tmp_path, home):
    return make_workspace(tmp_path / "ws", home)
