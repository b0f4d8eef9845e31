"""Feature extraction: kernel configs to the feature rows the kernel predictors train on."""
from ...._native import native as _nnmeter
from ....utils import dumps, loads, registry_home
from .utils import collect_kernel_data


class FeatureParser:
    """The feature parser of a builtin or registered kernel (the one the builder trains with)."""

    def __init__(self, kernel_type):
        self.kernel_type = kernel_type
        self.needed_config = list(_nnmeter.feature_parser(kernel_type, registry_home()))

    def get_feature_by_config(self, config_dict):
        return list(_nnmeter.features_of(self.kernel_type, dumps(config_dict), registry_home()))

    def get_config_by_feature(self, feature):
        """The config of a feature row; features beyond the needed configs (flops, params, ...) dropped."""
        values = list(feature)[:len(self.needed_config)]
        if len(values) != len(self.needed_config):
            raise ValueError(f"{self.kernel_type} features have at least {len(self.needed_config)} values "
                             f"({', '.join(self.needed_config)}), got {len(values)}")
        return {k: (int(v) if float(v).is_integer() else v) for k, v in zip(self.needed_config, values)}


def get_feature_parser(kernel_type):
    return FeatureParser(kernel_type)


def get_data_by_profiled_results(kernel_type, feature_parser, cfgs_dict, labs_dict=None, save_path=None,
                                 predict_label="latency"):
    """(features, labels) as numpy arrays for every profiled entry of `kernel_type`, and a CSV at
    `save_path` (model_path, the config columns, extra features, the label) when given."""
    import numpy as np  # on use, as in KernelPredictor.predict
    if feature_parser is not None and getattr(feature_parser, "kernel_type", kernel_type) != kernel_type:
        raise ValueError(f"the feature parser is {feature_parser.kernel_type}'s, not {kernel_type}'s")
    data = collect_kernel_data((cfgs_dict, labs_dict) if labs_dict is not None else cfgs_dict)
    table = loads(_nnmeter.kernel_data_table(kernel_type, dumps(data), predict_label, save_path or "",
                                             registry_home()))
    return np.array(table["features"], dtype=float), np.array(table["labels"], dtype=float)
