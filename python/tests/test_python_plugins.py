"""Customized modules written in Python, as in nn-Meter: the backend of the seed 000 transcript registered
and used through the CLI and the Python API, a backend profiled through nn-meter's isolated workers, a
kernel (torch), its sampler and parser used by the builder, and modules that fail."""
import json
import os
import textwrap

import pytest

import nn_meter
from conftest import make_workspace, run_cli
from seed001_snippets import SNIPPETS
from test_seed_snippets import CUSTOM_KERNEL_BUILD, PARSER

SEED_BACKEND = '''
from nn_meter.builder.backends import BaseBackend

class myBackend(BaseBackend):
    def __init__(self, config):
        pass

    def test_connection(self):
        """check the status of backend interface connection
        """
        print("Registration Success!")
'''

FILE_BACKEND = '''
import os, time
from nn_meter.builder.backends import BaseBackend

class FileBackend(BaseBackend):
    """Times reading the converted model: a stand-in for a device's benchmark tool."""
    def convert_model(self, model_path, save_path, input_shape=None):
        os.makedirs(save_path, exist_ok=True)
        out = os.path.join(save_path, os.path.basename(model_path) + ".bin")
        with open(model_path, "rb") as f, open(out, "wb") as g:
            g.write(f.read())
        return out

    def profile(self, converted_model, metrics=["latency"], input_shape=None, **kwargs):
        if "FAIL" in open(self.configs["FAIL_LIST"]).read().split() and os.path.basename(converted_model).startswith("fail"):
            raise RuntimeError("device went away")
        runs = []
        for _ in range(3):
            t0 = time.perf_counter()
            with open(converted_model, "rb") as f:
                f.read()
            runs.append((time.perf_counter() - t0) * 1e3 + 1.0)
        return {"latency": runs}
'''


def package(folder, files, meta):
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))
    lines = "".join(f"{k}: {v}\n" for k, v in meta.items())
    (folder / "meta.yaml").write_text(lines.replace("{PKG}", str(folder)))
    return folder / "meta.yaml"


def test_seed000_transcript_with_a_python_backend(tmp_path, home):
    meta = package(tmp_path / "test_package_import", {"backend.py": SEED_BACKEND, "config.yaml": "KEY: 1\n"},
                   {"builtinName": "my_backend", "packageLocation": "{PKG}", "classModule": "backend",
                    "className": "myBackend", "defaultConfigFile": "{PKG}/config.yaml"})
    r = run_cli("register", "--backend", meta, home=home)
    assert r.stdout.strip() == "(nn-Meter) Successfully register backend my_backend"
    assert "(nn-Meter) [Backend] * my_backend" in run_cli("--list-backends", home=home).stdout
    registry = (home / "config" / "registry.yaml").read_text()
    assert "classModule: backend" in registry and "className: myBackend" in registry
    ws = tmp_path / "custom"
    run_cli("create", "--customized-workspace", ws, "--backend", "my_backend", home=home)
    assert (ws / "configs" / "backend_config.yaml").read_text() == "KEY: 1\n"
    r = run_cli("connect", "--backend", "my_backend", "--workspace", ws, home=home)
    assert r.stdout.strip() == "Registration Success!"
    run_cli("unregister", "--backend", "my_backend", home=home)
    r = run_cli("connect", "--backend", "my_backend", "--workspace", ws, home=home, check=False)
    assert r.returncode == 1 and "unknown backend 'my_backend'" in r.stderr


def test_python_api_registers_and_connects(tmp_path, home):
    meta = package(tmp_path / "pkg", {"backend.py": SEED_BACKEND},
                   {"builtinName": "my_backend", "packageLocation": "{PKG}", "classModule": "backend",
                    "className": "myBackend"})
    assert nn_meter.register_module("backends", meta) == "my_backend"
    from nn_meter.builder import backends, builder_config
    assert "my_backend" in backends.list_backends()
    ws = tmp_path / "ws"
    run_cli("create", "--customized-workspace", ws, "--backend", "my_backend", home=home)
    builder_config.init(str(ws))
    assert backends.connect_backend("my_backend").test_connection() == "Registration Success!"
    nn_meter.unregister_module("backends", "my_backend")
    with pytest.raises(nn_meter.NNMeterError, match="unknown backend 'my_backend'"):
        backends.connect_backend("my_backend")


@pytest.mark.parametrize("module_text, reason", [
    ("import does_not_exist_xyz\n", "ModuleNotFoundError: No module named 'does_not_exist_xyz' (backend.py:1)"),
    ("class myBackend:\n    def __init__(self, c):\n        raise ValueError('no device\\nat all')\n",
     "ValueError: no device at all (backend.py:3)"),
    ("class Other:\n    pass\n", "has no class 'myBackend'"),
    ("import os\nclass myBackend:\n    def __init__(self, c):\n        os.kill(os.getpid(), 11)\n",
     "crashed with signal"),  # 11, or 6 where a preloaded ASan turns the SEGV into an abort
])
def test_a_module_that_fails_is_one_line_and_not_registered(tmp_path, home, module_text, reason):
    meta = package(tmp_path / "bad", {"backend.py": module_text},
                   {"builtinName": "bad_backend", "packageLocation": "{PKG}", "classModule": "backend",
                    "className": "myBackend"})
    r = run_cli("register", "--backend", meta, home=home, check=False)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("(nn-Meter) Registration failed: ") and reason in lines[0], r.stderr
    assert "bad_backend" not in run_cli("--list-backends", home=home).stdout
    with pytest.raises(nn_meter.NNMeterError, match="Registration failed"):
        nn_meter.register_module("backends", meta)


def test_a_python_backend_profiles_in_workers_and_an_exception_costs_one_sample(tmp_path, home):
    fail_list = tmp_path / "fail_list.txt"
    fail_list.write_text("FAIL\n")
    meta = package(tmp_path / "timer", {"backend.py": FILE_BACKEND, "config.yaml": f"FAIL_LIST: {fail_list}\n"},
                   {"builtinName": "file_backend", "packageLocation": "{PKG}", "classModule": "backend",
                    "className": "FileBackend", "defaultConfigFile": "{PKG}/config.yaml"})
    run_cli("register", "--backend", meta, home=home)
    ws = tmp_path / "ws"
    run_cli("create", "--customized-workspace", ws, "--backend", "file_backend", home=home)
    with open(ws / "configs" / "backend_config.yaml", "a") as f:
        f.write("REPEATS: 2\n")
    from nn_meter.builder import builder_config, profile_models
    from nn_meter.builder.kernel_predictor_builder import generate_config_sample
    builder_config.init(str(ws))
    models = generate_config_sample("relu", 3, mark="prior", seed=5)
    first = sorted(models["relu"])[0]
    failing = ws / "predictor_build" / "kernels" / f"fail_{first}.onnx"
    os.rename(models["relu"][first]["model"], failing)
    models["relu"][first]["model"] = str(failing)
    profiled = profile_models("file_backend", models)["relu"]
    assert set(profiled) == set(models["relu"]) - {first}
    for entry in profiled.values():
        avg = float(entry["latency"].split("+-")[0])
        assert avg >= 1.0 and len(entry["repeats_ms"]) == 2
    log = (ws / "predictor_build" / "results" / "profile_error.log").read_text()
    assert first in log and "RuntimeError: device went away (backend.py:" in log


KERNEL = '''
import torch
from nn_meter.builder.nn_modules import BaseBlock

class MyKernel(BaseBlock):
    """Conv, BN and ReLU, as the seed's Keras example, in torch."""
    def __init__(self, config):
        self.config = config
        self.input_shape = [config["CIN"], config["HW"], config["HW"]]
        self.input_tensor_shape = [self.input_shape]

    def get_model(self):
        c = self.config
        return torch.nn.Sequential(
            torch.nn.Conv2d(c["CIN"], c["COUT"], c["KERNEL_SIZE"], stride=c["STRIDES"], padding=c["KERNEL_SIZE"] // 2),
            torch.nn.BatchNorm2d(c["COUT"]), torch.nn.ReLU())
'''

SAMPLER = '''
import random
from nn_meter.builder.kernel_predictor_builder import BaseConfigSampler

class MySampler(BaseConfigSampler):
    def prior_config_sampling(self, sample_num):
        return [{"HW": random.choice([7, 14, 28]), "CIN": random.choice([8, 16, 24, 32]),
                 "COUT": random.choice([8, 16, 32, 48]), "KERNEL_SIZE": random.choice([1, 3]), "STRIDES": 1}
                for _ in range(sample_num)]

    def finegrained_config_sampling(self, sample_num, configs):
        return [dict(cfg, CIN=random.randint(max(1, int(cfg["CIN"] * 0.4)), int(cfg["CIN"] * 1.2)))
                for cfg in configs for _ in range(sample_num)]
'''



def test_a_python_kernel_builds_its_predictor(tmp_path, home):
    pytest.importorskip("torch")
    meta = package(tmp_path / "kernel_package",
                   {"kernel_script.py": KERNEL, "config_sampler.py": SAMPLER,
                    "feature_parser.py": SNIPPETS[PARSER]},  # the seed's parser, as written
                   {"builtin_name": "mykernel", "implement": "torch", "package_location": "{PKG}",
                    "class_module": "kernel_script", "class_name": "MyKernel", "sampler_module": "config_sampler",
                    "sampler_name": "MySampler", "parser_module": "feature_parser", "parser_name": "MyParser"})
    r = run_cli("register", "--kernel", meta, home=home)
    assert r.stdout.strip() == "(nn-Meter) Successfully register kernel: mykernel"
    assert "(nn-Meter) [Kernel] * mykernel" in run_cli("--list-kernels", home=home).stdout
    ws = make_workspace(tmp_path / "ws", home)
    # Seed 001's snippet for a customized kernel, as written, at the size of a test.
    snippet = SNIPPETS[CUSTOM_KERNEL_BUILD].replace('"path/to/workspace/folder"', repr(str(ws)))
    snippet = snippet.replace('"tflite_cpu"', '"onednn_cpu"').replace(
        "init_sample_num = 1000, finegrained_sample_num = 10, iteration = 5, error_threshold = 0.1",
        "init_sample_num = 10, finegrained_sample_num = 2, iteration = 2, error_threshold = 0.0")
    ns = {}
    exec(compile(snippet, "<seed 001: build a customized kernel>", "exec"), ns)
    predictor, data = ns["predictor"], ns["data"]
    assert len(data) >= 8
    for entry in data.values():
        assert set(entry["config"]) == {"HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES"}
        assert " +- " in entry["latency"] and os.path.exists(entry["model"])
    # Features come from the Python parser: 5 configs + flops + params.
    assert len(predictor.feature_names) == 7
    results = ws / "predictor_build" / "results"
    assert (results / "mykernel_finegrained1.json").exists()
    # The kernel's models are the torch module exported to ONNX, runnable by onednn_cpu.
    one = next(iter(data.values()))
    r = run_cli("backend", "onednn_cpu", "profile", "--onnx-path", one["model"], "--repeats", "1", home=home)
    assert "latency of" in r.stdout


def test_a_moved_package_is_one_line_with_the_way_out_once(tmp_path, home):
    meta = package(tmp_path / "pkg", {"backend.py": SEED_BACKEND},
                   {"builtinName": "my_backend", "packageLocation": "{PKG}", "classModule": "backend",
                    "className": "myBackend"})
    run_cli("register", "--backend", meta, home=home)
    ws = tmp_path / "ws"
    run_cli("create", "--customized-workspace", ws, "--backend", "my_backend", home=home)
    os.rename(tmp_path / "pkg", tmp_path / "moved")
    r = run_cli("connect", "--backend", "my_backend", "--workspace", ws, home=home, check=False)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, r.stderr
    assert "package location is not a folder" in lines[0]
    assert lines[0].count("nn-meter unregister --backend my_backend") == 1, lines[0]
