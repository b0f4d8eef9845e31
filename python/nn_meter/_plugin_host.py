"""Runs one object of a customized module written in Python (a backend, kernel, sampler or parser of
nn-Meter's Python interface) for nn-meter's C++ core, in a child process of its own: requests arrive as JSON
lines on stdin, answers leave as JSON lines on the result fd. What the plugin prints goes to stderr, so it can
never corrupt the answers; an exception costs that one call, reported as one line.

    python3 _plugin_host.py --result-fd 3 --parent-pid PID PACKAGE MODULE CLASS KIND NAME
"""
import contextlib
import importlib
import io
import json
import os
import random
import sys
import traceback

# Run as a file: its own folder (nn_meter/) must not shadow a plugin's modules, and nn_meter itself must be
# importable for the plugin's `from nn_meter.builder... import Base...`.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
sys.path.insert(0, os.path.dirname(_here))


def die_with_parent(parent_pid):
    """The kernel kills this process when its parent dies (a host stuck in a plugin must not outlive it)."""
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass
    if parent_pid and os.getppid() != parent_pid:
        sys.exit(1)


def load_class(package, module, class_name):
    # The package's folder is importable as a package (nn-Meter's layout: __init__.py next to the modules)
    # and its modules directly, as nn-Meter's registry imports them.
    sys.path.insert(0, os.path.dirname(os.path.abspath(package)))
    sys.path.insert(0, os.path.abspath(package))
    mod = importlib.import_module(module)
    if not hasattr(mod, class_name):
        raise ImportError(f"module '{module}' in {package} has no class '{class_name}' (fix className in the meta file)")
    return getattr(mod, class_name)


def as_onnx_bytes(model, input_shapes, batch_size):
    """A kernel's model as serialized ONNX: ONNX bytes, an onnx.ModelProto, or a torch.nn.Module exported at
    the kernel's input shapes."""
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    if hasattr(model, "SerializeToString"):
        return model.SerializeToString()
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(model, torch.nn.Module):
        dummies = tuple(torch.randn(batch_size, *shape) for shape in input_shapes)
        buffer = io.BytesIO()
        model.eval()
        with torch.no_grad():
            torch.onnx.export(model, dummies if len(dummies) > 1 else dummies[0], buffer, opset_version=13)
        return buffer.getvalue()
    raise TypeError(f"get_model() returned {type(model).__name__}: return an onnx.ModelProto, ONNX bytes or a "
                    "torch.nn.Module (Keras models are not supported: nn-meter kernels are ONNX)")


def latency_answer(result):
    """nn-Meter's profile result ({"latency": Latency or "avg +- std" or ms}, a number, or a list of runs in
    ms) as the core reads it."""
    if isinstance(result, dict) and "latency" in result:
        result = result["latency"]
    if isinstance(result, (list, tuple)):
        return {"latency_ms": [float(v) for v in result]}
    if isinstance(result, (int, float)):
        return {"avg": float(result)}
    if isinstance(result, str):
        avg, _, std = result.partition("+-")
        return {"avg": float(avg), "std": float(std or 0)}
    if hasattr(result, "avg"):
        return {"avg": float(result.avg), "std": float(getattr(result, "std", 0.0))}
    raise TypeError(f"profile() returned {type(result).__name__}: return {{'latency': ms}}, ms, "
                    "'avg +- std' or a list of ms")


class Host:
    def __init__(self, cls, kind, name, config):
        self.cls, self.kind, self.name, self.config = cls, kind, name, config
        if kind == "backend":
            self.obj = cls(config)
        elif kind == "parser":
            self.obj = cls(name)
        elif kind == "sampler":
            self.obj = cls()
        elif kind == "kernel":
            self.obj = None  # nn-Meter's blocks are built per config
        else:
            raise TypeError(f"Python {kind}s are not supported: write the {kind} in C++ (nnmeter/plugin.h)")

    def call(self, method, args):
        o = self.obj
        if self.kind == "backend":
            if method == "params":
                return list(getattr(o, "params", []) or [])
            if method == "is_available":
                return bool(o.is_available()) if hasattr(o, "is_available") else True
            if method == "get_version":
                return str(o.get_version()) if hasattr(o, "get_version") else "unknown"
            if method == "test_connection":
                printed = io.StringIO()
                with contextlib.redirect_stdout(printed):
                    returned = o.test_connection()
                text = printed.getvalue().strip()
                return "\n".join(t for t in (text, str(returned).strip() if returned is not None else "") if t)
            if method == "to_backend":
                converted = o.convert_model(args["onnx_path"], args["work_dir"], None)
                return [str(p) for p in (converted if isinstance(converted, (list, tuple)) else [converted])]
            if method == "profile":
                files = args["backend_files"]
                return latency_answer(o.profile(files[0] if len(files) == 1 else files, metrics=["latency"]))
        if self.kind == "kernel":
            block = self.cls(args["config"])
            if method == "input_tensor_shape":
                return [list(s) for s in block.input_tensor_shape]
            if method == "get_model":
                return as_onnx_bytes(block.get_model(), block.input_tensor_shape, args["batch_size"])
        if self.kind == "sampler":
            random.seed(args.get("seed"))
            if method == "prior_config_sampling":
                return list(o.prior_config_sampling(args["sample_num"]))
            if method == "finegrained_config_sampling":
                return list(o.finegrained_config_sampling(args["sample_num"], args["configs"]))
        if self.kind == "parser":
            if method == "needed_config":
                return list(o.needed_config)
            if method == "get_feature_by_config":
                return [float(v) for v in o.get_feature_by_config(args["config"])]
            if method == "get_config_by_feature":
                return dict(o.get_config_by_feature(args["feature"]))
        raise AttributeError(f"a Python {self.kind} has no method '{method}'")


def one_line(e):
    """The exception as one line, with the plugin's own file and line where it was raised."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if os.path.abspath(f.filename) != os.path.abspath(__file__)]
    at = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(e).__name__}: {' '.join(str(e).split())}{at}"


def main(argv):
    result_fd, parent = int(argv[argv.index("--result-fd") + 1]), int(argv[argv.index("--parent-pid") + 1])
    package, module, class_name, kind, name = argv[argv.index("--parent-pid") + 2:][:5]
    die_with_parent(parent)
    answers = os.fdopen(result_fd, "w")
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # prints of the plugin never reach the answers

    def answer(obj):
        answers.write(json.dumps(obj) + "\n")
        answers.flush()

    host = None
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if host is None:
                host = Host(load_class(package, module, class_name), kind, name, request.get("config", {}))
                answer({"ok": True})
                continue
            result = host.call(request["method"], request.get("args", {}))
            if "bytes_to" in request:
                with open(request["bytes_to"], "wb") as f:
                    f.write(result)
                result = None
            answer({"ok": result})
        except Exception as e:  # one call fails, the host goes on
            answer({"error": one_line(e)})
    sys.stdout = real_stdout


if __name__ == "__main__":
    main(sys.argv)
