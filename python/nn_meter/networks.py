"""The reference networks: real CNNs (MobileNet v1/v2/v3, ResNet, SqueezeNet, ShuffleNetV2, MnasNet, GoogLeNet,
DenseNet, EfficientNet, AlexNet, VGG) written as ONNX the way torch.onnx.export writes torchvision's models, and
the named sets the evaluation and calibration use (`nn-meter networks list|export`).

    import nn_meter
    nn_meter.networks.list_sets()                                 # [{"name": "evaluation", "networks": [...]}, ...]
    files = nn_meter.networks.export("calibration", "cal_models/")  # paths of the set's ONNX files
    files = nn_meter.networks.sample("resnet", "variants/", count=20, seed=1)  # per-layer random variants
"""
import os
import warnings

from ._native import native as _nnmeter
from .utils import loads, progress_wanted, write_bytes_atomic


def list_sets():
    """Every builtin set: name, description and its networks (arch, resolution, width, file name)."""
    return loads(_nnmeter.network_sets())


def list_architectures():
    return list(_nnmeter.network_architectures())


def export(set_name, out_dir, progress=None):
    """Writes every network of the set `set_name` into `out_dir` as ONNX (files already there are kept, so an
    interrupted export resumes) and returns their paths, in the set's order."""
    if progress is None:
        progress = progress_wanted()
    return [str(p) for p in _nnmeter.export_network_set(set_name, os.fspath(out_dir), bool(progress))]


def write(arch, path, resolution=224, width=1.0):
    """Writes one network, `arch` (list_architectures()) at `resolution` x `resolution` with channel width
    multiplier `width`, to `path` as ONNX (atomically) and returns the path."""
    write_bytes_atomic(path, _nnmeter.network_onnx(str(arch), int(resolution), float(width)))
    return os.fspath(path)


def list_sample_families():
    """The families sample() draws variants of: the architectures' families and two NAS spaces."""
    return list(_nnmeter.network_sample_families())


def sample(family, out_dir, count=10, seed=0, progress=None):
    """Writes `count` per-layer random variants of `family` (list_sample_families()) into `out_dir` as ONNX, as
    `nn-meter networks sample` does, and returns their paths. Variant i of a seed is the same whatever the count,
    and files already there are kept. A variant that does not build is skipped with a warning naming it."""
    if not 0 <= int(seed) < 2 ** 32:
        raise ValueError(f"seed must be in [0, 4294967295], got {seed}")
    if progress is None:
        progress = progress_wanted()
    out = loads(_nnmeter.export_network_sample(str(family), int(count), int(seed), os.fspath(out_dir), bool(progress)))
    for s in out["skipped"]:
        warnings.warn(f"(nn-Meter) skipped {s['file']}: {s['error']}")
    return out["files"]
