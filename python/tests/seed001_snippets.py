"""The Python snippets of the builder documentation (seed 001), verbatim, in document order. The test
runs them as written, with only the placeholders replaced (test_seed_snippets.py)."""

SNIPPETS = [
    r"""from nn_meter.builder import builder_config

# initialize builder config with workspace
builder_config.init(
    workspace_path="path/to/workspace/folder"
) # change the text to required platform type and workspace path
""",
    r"""from nn_meter.builder import builder_config 
from nn_meter.builder.nn_meter_builder import sample_and_profile_kernel_data
workspace = "/path/to/workspace/"
builder_config.init(workspace)

kernel_type = "conv-bn-relu"
sample_num = 10
backend = "tflite_cpu"
mark = "test"

kernel_data = sample_and_profile_kernel_data(kernel_type, sample_num=sample_num,
                                             backend=backend, sampling_mode='prior', mark=mark)
""",
    r"""from nn_meter.builder.backends import connect_backend
from nn_meter.builder.kernel_predictor_builder import generate_config_sample
from nn_meter.builder import builder_config, convert_models, profile_models  
workspace = "/path/to/workspace/"
builder_config.init(workspace)

backend = connect_backend(backend_name="tflite_cpu")

kernel_type = "conv-bn-relu"
sample_num = 10
mark = "test"

# sample configs for kernel and generate models
models = generate_config_sample(kernel_type, sample_num, mark=mark,
                                sampling_mode="prior")

# convert the model to the needed format by backend, in order to increase efficiency when profiling on device.
models = convert_models(backend, f"{workspace}/predictor_build/results/{kernel_type}_{mark}.json")

# run models with given backend and return latency of testcase models
profiled_results = profile_models(backend, models, mode='predbuild', have_converted=True,
                                  save_name=f"profiled_{kernel_type}.json")
""",
    r"""import os
from nn_meter.builder import builder_config
from nn_meter.builder.kernel_predictor_builder import build_predictor_by_data
workspace = "/path/to/workspace/"
builder_config.init(workspace)

kernel_type = "conv-bn-relu"
mark = "prior"
backend = "tflite_cpu"
error_threshold = 0.1

# extract training feature and target from profiled results
cfgs_path = os.path.join(workspace, "predictor_build", "results", f"{kernel_type}_{mark}.json")
lats_path = os.path.join(workspace, "predictor_build", "results", f"profiled_{kernel_type}.json")
kernel_data = (cfgs_path, lats_path)

# build latency predictor
predictor, acc10, error_configs = build_predictor_by_data(
    kernel_type, kernel_data, backend, error_threshold=error_threshold, mark="prior",
    save_path=os.path.join(workspace, "predictor_build", "results")
)
print(f'Iteration 0: acc10 {acc10}, error_configs number: {len(error_configs)}')    
""",
    r"""from nn_meter.builder import builder_config
from nn_meter.builder.backends import connect_backend
from nn_meter.builder import build_initial_predictor_by_data
workspace = "/path/to/workspace/"
builder_config.init(workspace)

backend = connect_backend(backend_name="tflite_cpu")
kernel_type = "conv-bn-relu"
backend = "tflite_cpu"
error_threshold = 0.1

predictor, data = build_initial_predictor_by_data(
    kernel_type, backend, init_sample_num=10, error_threshold=error_threshold
)
""",
    r"""from nn_meter.builder import builder_config
from nn_meter.builder.backends import connect_backend
from nn_meter.builder import build_adaptive_predictor_by_data
workspace = "/data1/jiahang/working/release2test/"
builder_config.init(workspace)

backend = connect_backend(backend_name="tflite_cpu")
kernel_type = "conv-bn-relu"
backend = "tflite_cpu"
error_threshold = 0.1

predictor, data = build_adaptive_predictor_by_data(
    kernel_type, kernel_data, backend, finegrained_sample_num=5
)
""",
    r"""config_json_file = [
    f'{workspace}/predictor_build/results/{kernel_type}_prior.json',
    f'{workspace}/predictor_build/results/{kernel_type}_finegrained1.json',
    f'{workspace}/predictor_build/results/{kernel_type}_finegrained2.json'
]
latency_json_file = [
    f'{workspace}/predictor_build/results/profiled_{kernel_type}.json'
]
kernel_data = (config_json_file, latency_json_file)
""",
    r"""# initialize builder config with workspace
from nn_meter.builder import builder_config
workspace = "/path/to/workspace/"
builder_config.init(workspace)

# build latency predictor for kernel
from nn_meter.builder import build_predictor_for_kernel
kernel_type = "conv-bn-relu"
backend = "tflite_cpu"

predictor, data = build_predictor_for_kernel(
    kernel_type, backend, init_sample_num=1000, finegrained_sample_num=10, iteration=5, error_threshold = 0.1
)
""",
    r"""# initialize builder config with workspace
from nn_meter.builder import builder_config
workspace = "/path/to/workspace/"
builder_config.init(workspace)

# build latency predictor for kernel
from nn_meter.builder import build_latency_predictor
build_latency_predictor(backend="tflite_cpu")
""",
    r"""config_json_file = [
    f'{workspace}/predictor_build/results/{kernel_type}_prior.json',
    f'{workspace}/predictor_build/results/{kernel_type}_finegrained1.json',
    f'{workspace}/predictor_build/results/{kernel_type}_finegrained2.json'
]
latency_json_file = [
    f'{workspace}/predictor_build/results/profiled_{kernel_type}.json'
]
kernel_data = (config_json_file, latency_json_file)
""",
    r"""# build initial latency predictor by kernel_data
predictor, acc10, error_configs = build_predictor_by_data(
    kernel_type, kernel_data, backend, error_threshold=error_threshold, mark="prior",
    save_path=os.path.join(workspace, "predictor_build", "results")
)
""",
    r"""# build adaptive latency predictor by kernel_data
predictor, data = build_adaptive_predictor_by_data(
    kernel_type, kernel_data, backend, finegrained_sample_num=5
)
""",
    r"""from nn_meter.builder.kernel_predictor_builder.predictor_builder.utils import collect_kernel_data
from nn_meter.builder.kernel_predictor_builder.predictor_builder.extract_feature import get_feature_parser, get_data_by_profiled_results

kernel_type = 'conv-bn-relu'

# define kernel data
config_json_file = [
    f'{workspace}/predictor_build/results/{kernel_type}_prior.json',
    f'{workspace}/predictor_build/results/{kernel_type}_finegrained1.json',
    f'{workspace}/predictor_build/results/{kernel_type}_finegrained2.json'
]
latency_json_file = [
    f'{workspace}/predictor_build/results/profiled_{kernel_type}.json'
]
kernel_data = (config_json_file, latency_json_file)

# read kernel data and extract features
kernel_data = collect_kernel_data(kernel_data)
feature_parser = get_feature_parser(kernel_type) # define the feature to extract

data = get_data_by_profiled_results(kernel_type, feature_parser, kernel_data,
                                    save_path="path/to/csv/test.csv")
""",
    r"""import tensorflow.keras as keras
from nn_meter.builder.nn_modules import BaseBlock

class MyKernel(BaseBlock):
    ''' This kernel is built by Conv, BN, and Relu layer, which is the same as the builtin `conv-bn-relu` block.
    '''
    def __init__(self, config):
        self.config = config
        self.input_shape = [config["HW"], config["HW"], config["CIN"]]
        self.input_tensor_shape = [self.input_shape]

    def get_model(self):
        class Model(keras.Model):
            def __init__(self, cout, kernel_size, strides):
                super().__init__()
                self.conv = keras.layers.Conv2D(
                    cout,
                    kernel_size=kernel_size,
                    strides=strides,
                    padding="same"
                )
                self.bn = keras.layers.BatchNormalization()
                self.relu = keras.layers.ReLU()

            def call(self, inputs):
                x = self.conv(inputs)
                x = self.bn(x)
                x = self.relu(x)
                return x

        return Model(self.config["COUT"], self.config["KERNEL_SIZE"], self.config["STRIDES"])
""",
    r"""import random
from nn_meter.builder.kernel_predictor_builder import BaseConfigSampler

class MySampler(BaseConfigSampler):
    ''' This sampler is for Conv related sampler. In `prior_config_sampling` method, all configs are sampled based on existing conv model. In
    `finegrained_config_sampling` method, only CIN and COUT are sampled around the configs in parameter `configs`.
    '''

    def prior_config_sampling(self, sample_num):
        new_hws = ...
        new_cins = ...
        new_couts = ...
        new_kernel_sizes = ...
        new_strides = ...
        ncfgs = []
        for hw, cin, cout, kernel_size, stride in zip(new_hws, new_cins, new_couts,
                                                      new_kernel_sizes, new_strides):
            c = {
                'HW': hw,
                'CIN': cin,
                'COUT': cout,
                'KERNEL_SIZE': kernel_size,
                'STRIDES': stride,
            }
            ncfgs.append(c)
        return ncfgs
    
    def finegrained_config_sampling(self, sample_num, configs):
        ncfgs = []
        for cfg in configs:
            cins = ...
            couts = ...
            for cin, cout in zip(cins, couts):
                c = {
                    'HW': cfg['HW'],
                    'CIN': cin,
                    'COUT': cout,
                    'KERNEL_SIZE': cfg['KERNEL_SIZE'],
                    'STRIDES': cfg['STRIDES'],
                }
                ncfgs.append(c)
        return ncfgs
""",
    r"""from nn_meter.builder.kernel_predictor_builder import BaseFeatureParser

class MyParser(BaseFeatureParser):
    ''' This parser utilized config "HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES", as well as the flops and parameter number as feature.
    '''
    def __init__(self, kernel_type):
        self.kernel_type = kernel_type
        self.needed_config = ["HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES"]

    def get_feature_by_config(self, config_dict):
        feature = [config_dict[data] for data in self.needed_config]
        hw, cin, cout, kernel_size, stride = config_dict["HW"], config_dict["CIN"], config_dict["COUT"], \
            config_dict["KERNEL_SIZE"], config_dict["STRIDES"]
        param = cout * (kernel_size * kernel_size * cin + 1)
        flop = 2 * hw / stride * hw / stride * param

        flop /= 2e6
        param /= 1e6
        feature.extend([flop, param])
        return feature

    def get_config_by_feature(self, feature):
        # remove flops and params num feature from feature vector
        feature = feature[:-2]
        assert len(self.needed_config) == len(feature)
        config = {k: v for k, v in zip(self.needed_config, feature)}
        return config
""",
    r"""# initialize builder config with workspace
from nn_meter.builder import builder_config
builder_config.init("path/to/workspace/folder") 

# build latency predictor for customized kernel
from nn_meter.builder import build_predictor_for_kernel
kernel_type = "mykernel"
backend = "tflite_cpu"

predictor, data = build_predictor_for_kernel(
    kernel_type, backend, init_sample_num = 1000, finegrained_sample_num = 10, iteration = 5, error_threshold = 0.1
)
""",
]
