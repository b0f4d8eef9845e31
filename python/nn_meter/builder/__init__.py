"""nn-Meter's builder API on nn-meter's C++ core: call builder_config.init(workspace) first."""
from .config_manager import builder_config
from .nn_meter_builder import (
    build_adaptive_predictor_by_data,
    build_initial_predictor_by_data,
    build_latency_predictor,
    build_predictor_for_kernel,
    convert_models,
    profile_models,
    sample_and_profile_kernel_data,
)
from .kernel_predictor_builder import build_predictor_by_data, generate_config_sample
