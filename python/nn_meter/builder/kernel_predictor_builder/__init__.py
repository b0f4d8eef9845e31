"""The kernel predictor builder: config sampling, kernel models, training (nn-Meter's builder steps 2-5)."""
import os
import random
import shutil

from ..._native import native as _nnmeter
from ...utils import dumps, loads, progress_wanted, registry_home
from ..backends import backend_name
from ..config_manager import builder_config
from .predictor_builder.utils import kernel_entries

SAMPLING_MODES = ("prior", "finegrained")
DEFAULT_SEED = 1  # the CLI's `nn-meter build --seed` default: a rerun resumes instead of sampling anew


class BaseConfigSampler:
    """Base class of a customized kernel's config sampler: both methods return a list of config dicts."""

    def prior_config_sampling(self, sample_num):
        raise NotImplementedError

    def finegrained_config_sampling(self, sample_num, configs):
        raise NotImplementedError


class BaseFeatureParser:
    """Base class of a customized kernel's feature parser (kernel_type, needed_config, and the two methods)."""

    def __init__(self, kernel_type):
        self.kernel_type = kernel_type
        self.needed_config = []

    def get_feature_by_config(self, config_dict):
        return [config_dict[k] for k in self.needed_config]

    def get_config_by_feature(self, feature):
        return dict(zip(self.needed_config, feature))


class KernelPredictor:
    """A trained kernel predictor (XGBoost model of the core), saved at `model_file`."""

    def __init__(self, model_file):
        self.model_file = model_file
        self._model = _nnmeter.KernelRegressor.load(model_file)

    @property
    def feature_names(self):
        return list(self._model.feature_names)

    def predict(self, features):
        """Latencies (ms) of feature rows (2-D array-like, one row per config)."""
        import numpy as np  # on use: a plugin host, or an environment without numpy, imports this module too
        return self._model.predict(np.asarray(features, dtype=float))

    def __repr__(self):
        return f"<KernelPredictor {self.model_file}>"


def check_mode(sampling_mode):
    if sampling_mode not in SAMPLING_MODES:
        raise ValueError(f"sampling_mode must be 'prior' or 'finegrained', not {sampling_mode!r}")


def generate_config_sample(kernel_type, sample_num, mark="", sampling_mode="prior", configs=None, seed=None):
    """Samples `sample_num` configs of `kernel_type` (around each of `configs` in fine-grained mode), writes
    one ONNX model per new config to <ws>/predictor_build/kernels/ and the configs to
    <ws>/predictor_build/results/<kernel_type>_<mark>.json. Returns {kernel_type: {ID: {model, shapes,
    config}}} of the new configs (duplicates of configs already in the workspace are dropped).
    Without `seed` every call draws anew, as in nn-Meter."""
    check_mode(sampling_mode)
    if sampling_mode == "finegrained" and not configs:
        raise ValueError("fine-grained sampling needs `configs`, the configs to sample around")
    seed = random.getrandbits(63) if seed is None else int(seed)
    result = loads(_nnmeter.generate_config_sample(builder_config.workspace, kernel_type, int(sample_num),
                                                   mark or sampling_mode, sampling_mode, dumps(list(configs or [])),
                                                   seed, registry_home()))
    return {kernel_type: result["entries"]}


def build_predictor_by_data(kernel_type, kernel_data, backend=None, error_threshold=0.1, mark="", save_path=None,
                            predict_label="latency"):
    """Trains the kernel predictor on `kernel_data` (80/20 split) and returns (predictor, acc10,
    error_configs): the predictor, its ±10 % accuracy on the held-out 20 %, and the configs of held-out
    points with a relative error above `error_threshold`. The model is saved to
    <ws>/predictor_build/results/predictors/<kernel_type>_<mark>.json (and to <save_path>/predictors/)."""
    if predict_label != "latency":
        raise ValueError("only predict_label='latency' is profiled by nn-meter")
    entries = kernel_entries(kernel_type, kernel_data)
    name = backend_name(backend) if backend is not None else "onednn_cpu"
    result = loads(_nnmeter.build_predictor_by_data(builder_config.workspace, name, kernel_type, dumps(entries),
                                                    float(error_threshold), mark or "prior", registry_home()))
    model_file = _copy_to(result["model_file"], save_path)
    return KernelPredictor(model_file), result["acc10"], result["error_configs"]


def _copy_to(model_file, save_path):
    if not save_path:
        return model_file
    target_dir = os.path.join(os.fspath(save_path), "predictors")
    target = os.path.join(target_dir, os.path.basename(model_file))
    if os.path.abspath(target) != os.path.abspath(model_file):
        os.makedirs(target_dir, exist_ok=True)
        shutil.copyfile(model_file, target + ".tmp")
        os.replace(target + ".tmp", target)
    return target


def build_predictor_for_kernel(kernel_type, backend, init_sample_num=1000, finegrained_sample_num=10, iteration=5,
                               error_threshold=0.1, predict_label="latency", mark="", seed=DEFAULT_SEED):
    """nn-Meter's end-to-end demo for one kernel: prior sampling, profiling and training, then
    `iteration - 1` rounds of fine-grained sampling around the large-error configs. Returns (predictor,
    kernel_data)."""
    if predict_label != "latency":
        raise ValueError("only predict_label='latency' is profiled by nn-meter")
    out = loads(_nnmeter.build_predictor_for_kernel(builder_config.workspace, backend_name(backend), kernel_type,
                                                    int(init_sample_num), int(finegrained_sample_num), int(iteration),
                                                    float(error_threshold), mark, int(seed), progress_wanted(),
                                                    registry_home()))
    return KernelPredictor(out["result"]["model_file"]), out["data"]


def build_initial_predictor_by_data(kernel_type, backend=None, init_sample_num=20, error_threshold=0.1, mark="",
                                    predict_label="latency", seed=DEFAULT_SEED):
    """Prior sampling, profiling and training (build_predictor_for_kernel with one iteration). Returns
    (predictor, kernel_data)."""
    return build_predictor_for_kernel(kernel_type, backend or "onednn_cpu", init_sample_num=init_sample_num,
                                      finegrained_sample_num=1, iteration=1, error_threshold=error_threshold,
                                      predict_label=predict_label, mark=mark, seed=seed)


def build_adaptive_predictor_by_data(kernel_type, kernel_data, backend=None, finegrained_sample_num=20,
                                     error_threshold=0.1, mark="", predict_label="latency", seed=DEFAULT_SEED):
    """One round of adaptive sampling: trains on `kernel_data`, samples and profiles `finegrained_sample_num`
    configs around each large-error config, retrains on everything. Returns (predictor, kernel_data)."""
    if predict_label != "latency":
        raise ValueError("only predict_label='latency' is profiled by nn-meter")
    entries = kernel_entries(kernel_type, kernel_data)
    out = loads(_nnmeter.build_adaptive_predictor_by_data(builder_config.workspace, backend_name(backend or "onednn_cpu"),
                                                          kernel_type, dumps(entries), int(finegrained_sample_num),
                                                          float(error_threshold), mark, int(seed), progress_wanted(),
                                                          registry_home()))
    return KernelPredictor(out["result"]["model_file"]), out["data"]
