// The default workspace configs, as nn-Meter ships them (IMPLEMENT is onnx here: kernels and test cases
// are generated as ONNX models).
#include "workspace/default_configs.h"

#include "backends/openvino/openvino_backend.h"
#include "backends/tflite/tflite_backend.h"

namespace nnmeter {

std::string default_predictorbuild_config_yaml() {
  return R"YAML(# nn-Meter kernel predictor build configuration (reference: docs/cli-build.md and docs/config.md).
# DETAIL: also store each kernel's config next to its latency in profiled_<kernel>.json.
DETAIL: FALSE
# IMPLEMENT: kernels are generated as ONNX models.
IMPLEMENT: onnx
# BATCH_SIZE: batch dimension of every generated kernel model.
BATCH_SIZE: 1
# PRIOR_ROWS: share of the prior samples taken as whole layers of real CNNs from the prior library instead of
# drawing each config value on its own (0 is nn-Meter's sampling; 0.3 cut the model-level error on onednn_cpu,
# docs/accuracy.md, bench/RESULTS-accuracy.md). PRIOR_ROWS_EXCLUDE: [names] leaves out the library's
# rows of those models (its `model` column), e.g. the ones you will evaluate the predictor on.
PRIOR_ROWS: 0.3
# STEM_SAMPLES: share of the conv samples that are a network's first conv, reading the 3-channel image at an
# input resolution (absent: none, nn-Meter's sampling). Without them the stems were predicted far too slow
# (bench/RESULTS-main-job.md).
STEM_SAMPLES: 0.0625
# SAMPLE_MODELS: [network sets, ONNX files or folders] adds every layer of these networks (each kernel as the
# backend's fusion rules detect it) to the prior samples: the networks of your search space, or variants of the
# ones you will predict. A set is one of `nn-meter networks list` (e.g. calibration-72); relative paths start at
# the workspace folder (./NAME for a folder named like a set). Opt-in; calibrate on other networks than these.
# SAMPLE_MODELS: [../my_search_space]
# CALIBRATION_NETWORKS: [network sets, ONNX files or folders] (3 or more networks): once the kernel predictors
# are trained, the build measures these networks by the repeat protocol and fits the predictor's composition
# term on them (composition.json in the predictor folder, as `nn-meter calibrate` does); predict and evaluate
# then use it. Calibrate on networks like the ones you will predict, and evaluate on others.
# CALIBRATION_NETWORKS: [calibration]
# KERNELS: the kernels build_latency_predictor builds, each with its adaptive-sampling settings.
KERNELS:
  conv-bn-relu:
    INIT_SAMPLE_NUM: 10000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  dwconv-bn-relu:
    INIT_SAMPLE_NUM: 5000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  maxpool:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  avgpool:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  fc:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  concat:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  split:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  channelshuffle:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  se:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  global-avgpool:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  bnrelu:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  bn:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  hswish:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  relu:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  addrelu:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
  add:
    INIT_SAMPLE_NUM: 3000
    FINEGRAINED_SAMPLE_NUM: 20
    ITERATION: 3
    ERROR_THRESHOLD: 0.1
)YAML";
}

std::string default_ruletest_config_yaml() {
  return R"YAML(# nn-Meter fusion-rule test configuration (reference: docs/cli-fusion-rules.md and docs/config.md).
# DETAIL: also record the per-model latencies in detected_fusion_rule.json.
DETAIL: FALSE
IMPLEMENT: onnx
# Input of 3-D test cases: [CIN, HW, HW]; of 1-D test cases (ops in LAYERS_1D): [SHAPE_1D].
# Not nn-Meter's 28 / 64 / 128 / 3: at those sizes a conv takes milliseconds on a CPU and hides the
# tens of microseconds of the op after it in the run-to-run noise, so conv pairs come out undecided.
# A cheap 1x1 conv on many pixels makes both ops of every pair take comparable time.
HW: 112
CIN: 4
SHAPE_1D: 428
# Operator settings used by the test models.
COUT: 32
KERNEL_SIZE: 1
PADDING: same
STRIDES: 1
POOL_STRIDES: 2
# A pair op1_op2 is fused when (T1 + T2) - T12 > EMP_ALPHA * min(T1, T2).
EMP_ALPHA: 0.5
BASIC_TESTCASES:
  - add_add
  - add_avgpool
  - add_concat
  - add_conv
  - add_convtrans
  - add_dwconv
  - add_fc
  - add_relu
  - add_reshape
  - avgpool_add
  - avgpool_avgpool
  - avgpool_concat
  - avgpool_conv
  - avgpool_convtrans
  - avgpool_dwconv
  - avgpool_relu
  - avgpool_reshape
  - bn_relu
  - concat_add
  - concat_avgpool
  - concat_concat
  - concat_conv
  - concat_convtrans
  - concat_dwconv
  - concat_fc
  - concat_relu
  - concat_reshape
  - conv_add
  - conv_avgpool
  - conv_bn
  - conv_concat
  - conv_conv
  - conv_convtrans
  - conv_dwconv
  - conv_hswish
  - conv_relu
  - conv_reshape
  - conv_se
  - convtrans_add
  - convtrans_avgpool
  - convtrans_concat
  - convtrans_conv
  - convtrans_convtrans
  - convtrans_dwconv
  - convtrans_relu
  - convtrans_reshape
  - dwconv_add
  - dwconv_avgpool
  - dwconv_bn
  - dwconv_concat
  - dwconv_conv
  - dwconv_convtrans
  - dwconv_dwconv
  - dwconv_relu
  - dwconv_reshape
  - fc_add
  - fc_concat
  - fc_fc
  - fc_relu
  - fc_reshape
  - relu_add
  - relu_avgpool
  - relu_concat
  - relu_conv
  - relu_convtrans
  - relu_dwconv
  - relu_fc
  - relu_relu
  - relu_reshape
  - reshape_add
  - reshape_avgpool
  - reshape_concat
  - reshape_conv
  - reshape_convtrans
  - reshape_dwconv
  - reshape_fc
  - reshape_relu
  - reshape_reshape
  - se_relu
  # Not nn-Meter's: SiLU after convs (EfficientNet, most NAS spaces), ShuffleNet's concat → channel
  # shuffle → split, a chain an engine may run as one kernel, and a transformer MLP's Linear → GELU.
  - conv_swish
  - dwconv_swish
  - concat_channelshuffle_split
  - linear_gelu
OTHER_TESTCASES:
  - MON
LAYERS_1D:
  - fc
)YAML";
}

// Generated from the backends' declared parameters, so that both backends of a workspace accept it as it is.
const std::vector<BackendParam>& tflite_workspace_params() { return tflite::backend_params(false); }
const std::vector<BackendParam>& openvino_workspace_params() { return openvino::backend_params(true); }

std::string tflite_backend_config_yaml() {
  return "# TFLite's benchmark_model on an Android device over adb, for tflite_cpu and tflite_gpu (docs/cli-backends.md).\n" +
         default_backend_config_yaml(tflite_workspace_params());
}

std::string openvino_backend_config_yaml() {
  return "# OpenVINO's benchmark_app on this machine, for openvino_vpu (DEVICE: MYRIAD) and openvino_cpu (DEVICE: CPU)\n"
         "# (docs/cli-backends.md).\n" +
         default_backend_config_yaml(openvino_workspace_params());
}

}  // namespace nnmeter
