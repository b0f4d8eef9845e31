"""Kernel data: sampled configs joined with profiled latencies."""
import os
import tempfile

from ...._native import native as _nnmeter
from ....utils import loads, write_json_atomic


def _as_files(part, folder, tag):
    """A list of JSON files for one side of kernel data: file paths stay, dicts are written to `folder`."""
    items = part if isinstance(part, (list, tuple)) else [part]
    files = []
    for i, item in enumerate(items):
        if isinstance(item, (str, os.PathLike)):
            files.append(os.fspath(item))
        elif isinstance(item, dict):
            path = os.path.join(folder, f"{tag}{i}.json")
            write_json_atomic(path, item)
            files.append(path)
        else:
            raise TypeError(f"kernel data takes JSON file paths or dicts, not {type(item).__name__}")
    return files


def collect_kernel_data(kernel_data, predict_label="latency"):
    """Kernel data as one dict {kernel: {ID: {model, shapes, config, latency, ...}}}.

    `kernel_data` is such a dict already, a config source, or a tuple (configs, latencies) where each side
    is a JSON file path, a dict, or a list of them. Later files win on conflicting fields.
    """
    if isinstance(kernel_data, dict):
        return kernel_data
    configs, latencies = (kernel_data if isinstance(kernel_data, tuple) and len(kernel_data) == 2
                          else (kernel_data, []))
    with tempfile.TemporaryDirectory(prefix="nn_meter-kernel-data-") as tmp:
        return loads(_nnmeter.collect_kernel_data(_as_files(configs, tmp, "configs"),
                                                  _as_files(latencies, tmp, "latencies")))


def kernel_entries(kernel_type, kernel_data):
    """The {ID: entry} of one kernel from any form collect_kernel_data takes (or {ID: entry} itself)."""
    data = collect_kernel_data(kernel_data)
    if kernel_type in data and isinstance(data[kernel_type], dict):
        return data[kernel_type]
    if data and all(isinstance(v, dict) and ("config" in v or "model" in v) for v in data.values()):
        return data
    raise ValueError(f"the kernel data has no entries of '{kernel_type}' (kernels in it: {', '.join(data) or 'none'})")
