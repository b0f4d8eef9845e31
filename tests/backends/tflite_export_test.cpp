// The ONNX -> .tflite export, checked by an independent reader: every builtin kernel and every zoo
// architecture is exported, parsed and run by Arm NN's TFLite parser (CpuRef), and its outputs match the
// plain reference interpreter. Sizes are kept small: CpuRef is a naive implementation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/armnn_runner.h"
#include "networks/architectures.h"
#include "networks/layers.h"
#include "backends/kernel_cases.h"
#include "backends/reference_runtime.h"
#include "backends/tflite/tflite_export.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"
#include "support/test_support.h"
#include "tflite_schema_generated.h"

namespace nnmeter::tflite {
namespace {

namespace tfl = nnmeter::tflite_schema;

std::vector<float> nchw_to_nhwc(const Shape& s, const std::vector<float>& x) {
  std::vector<float> out(x.size());
  const int64_t n = s[0], c = s[1], h = s[2], w = s[3];
  for (int64_t a = 0; a < n; ++a)
    for (int64_t b = 0; b < c; ++b)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t z = 0; z < w; ++z) out[static_cast<size_t>(((a * h + y) * w + z) * c + b)] = x[static_cast<size_t>(((a * c + b) * h + y) * w + z)];
  return out;
}

// Exports `model`, runs it on Arm NN and on the reference with the same random inputs, compares outputs.
void expect_export_matches(const onnx::ModelProto& model, const std::string& what) {
  const std::vector<Tensor> inputs = test::model_inputs(model, 7);
  std::map<std::string, std::vector<float>> tflite_inputs;
  for (const auto& t : inputs) tflite_inputs[t.name] = t.shape.size() == 4 ? nchw_to_nhwc(t.shape, t.data) : t.data;
  const std::string bytes = export_tflite(model, what + ".onnx", "tflite_cpu");
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  ASSERT_TRUE(tfl::VerifyModelBuffer(verifier)) << what;
  const auto ref = test::run_reference(model, inputs);
  std::map<std::string, test::ArmnnTensor> got;
  try {
    got = test::run_armnn(bytes, tflite_inputs);
  } catch (const std::exception& e) {
    FAIL() << what << ": Arm NN: " << e.what();
  }
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (const auto& [name, r] : ref) {
    ASSERT_TRUE(got.count(name)) << what << ": no output '" << name << "' in the .tflite";
    const auto& t = got.at(name);
    std::vector<double> expect = r.data;
    Shape expect_shape = r.shape;
    if (r.shape.size() == 4) {
      std::vector<float> f(r.data.begin(), r.data.end());
      f = nchw_to_nhwc(r.shape, f);
      expect.assign(f.begin(), f.end());
      expect_shape = {r.shape[0], r.shape[2], r.shape[3], r.shape[1]};
    }
    ASSERT_EQ(std::vector<int64_t>(t.shape.begin(), t.shape.end()), expect_shape) << what << " " << name;
    double scale = 1e-6, worst = 0;
    for (size_t i = 0; i < expect.size(); ++i) {
      scale = std::max(scale, std::fabs(expect[i]));
      worst = std::max(worst, std::fabs(t.data[i] - expect[i]));
    }
    EXPECT_LE(worst, 1e-4 * scale) << what << " " << name;
  }
}

class TfliteExportKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(TfliteExportKernels, ArmNnRunsItLikeTheReference) {
  KernelInfo info;
  for (auto& k : builtin_kernels())
    if (k.name == GetParam()) info = k;
  // Arm NN 20.08's FULLY_CONNECTED ignores keep_num_dims, so it cannot read a Linear on tokens; XNNPACK runs
  // the same file like the reference (xnnpack_test.cpp).
  if (GetParam() == "linear") GTEST_SKIP() << "Arm NN 20.08 does not read FULLY_CONNECTED's keep_num_dims";
  const auto suite = info.create(Json::object());
  for (const auto& config : suite.sampler->prior_config_sampling(2, 5)) {
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(suite.kernel->build_onnx(test::shrunk(config, 12, 16), 1)));
    if (const auto it = test::kernels_without_tflite_export().find(GetParam()); it != test::kernels_without_tflite_export().end()) {
      const std::string msg = test::error_of([&] { export_tflite(model, GetParam() + ".onnx", "tflite_cpu"); });
      EXPECT_NE(msg.find(it->second), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      continue;
    }
    expect_export_matches(model, GetParam() + " " + test::shrunk(config, 12, 16).dump());
  }
}

INSTANTIATE_TEST_SUITE_P(Tflite, TfliteExportKernels, ::testing::ValuesIn(test::builtin_kernel_names()),
                         [](const auto& info) { return test::gtest_param_name(info.param); });

class TfliteExportZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(TfliteExportZoo, ArmNnRunsItLikeTheReference) {
  const auto m = networks::build(GetParam(), 64, 0.25);
  if (const auto it = test::architectures_without_tflite_export().find(GetParam());
      it != test::architectures_without_tflite_export().end()) {
    const std::string msg = test::error_of([&] { export_tflite(m.model, GetParam() + ".onnx", "tflite_cpu"); });
    EXPECT_NE(msg.find(it->second), std::string::npos) << msg;
    return;
  }
  expect_export_matches(m.model, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Tflite, TfliteExportZoo, ::testing::ValuesIn(networks::architectures()),
                         [](const auto& info) { return test::gtest_param_name(info.param); });

}  // namespace
}  // namespace nnmeter::tflite

namespace nnmeter::tflite {
namespace {

// The builtin ops of the exported file, in execution order, with each one's fused activation (if any).
std::vector<std::string> ops_of(const std::string& bytes) {
  const tfl::Model* model = tfl::GetModel(bytes.data());
  std::vector<std::string> out;
  for (const auto* op : *model->subgraphs()->Get(0)->operators()) {
    const auto* code = model->operator_codes()->Get(op->opcode_index());
    EXPECT_EQ(code->deprecated_builtin_code(), static_cast<int8_t>(code->builtin_code()));  // Arm NN 20.08 reads this one
    std::string name = tfl::EnumNameBuiltinOperator(code->builtin_code());
    tfl::ActivationFunctionType act = tfl::ActivationFunctionType_NONE;
    if (const auto* o = op->builtin_options_as_Conv2DOptions()) act = o->fused_activation_function();
    if (const auto* o = op->builtin_options_as_DepthwiseConv2DOptions()) act = o->fused_activation_function();
    if (const auto* o = op->builtin_options_as_AddOptions()) act = o->fused_activation_function();
    if (const auto* o = op->builtin_options_as_FullyConnectedOptions()) act = o->fused_activation_function();
    if (act != tfl::ActivationFunctionType_NONE) name += std::string("+") + tfl::EnumNameActivationFunctionType(act);
    out.push_back(name);
  }
  return out;
}

std::string export_kernel(const std::string& kernel, const KernelConfig& config) {
  for (auto& k : builtin_kernels())
    if (k.name == kernel) {
      onnx::ModelProto model;
      model.ParseFromString(k.create(Json::object()).kernel->build_onnx(config, 1));
      return export_tflite(model, kernel + ".onnx", "tflite_cpu");
    }
  throw std::runtime_error("no kernel " + kernel);
}

using V = std::vector<std::string>;

TEST(TfliteExport, WritesTheOpsTflitesConverterWould) {
  const KernelConfig conv = {{"HW", 8}, {"CIN", 4}, {"COUT", 8}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}};
  EXPECT_EQ(ops_of(export_kernel("conv-bn-relu", conv)), V{"CONV_2D+RELU"});  // BN folded, ReLU fused, SAME padding
  EXPECT_EQ(ops_of(export_kernel("conv-bn-hswish", conv)), V({"CONV_2D", "HARD_SWISH"}));
  EXPECT_EQ(ops_of(export_kernel("dwconv-bn-relu6", {{"HW", 8}, {"CIN", 4}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}})),
            V{"DEPTHWISE_CONV_2D+RELU6"});
  EXPECT_EQ(ops_of(export_kernel("addrelu", {{"HW", 8}, {"CIN", 4}})), V{"ADD+RELU"});
  EXPECT_EQ(ops_of(export_kernel("fc", {{"CIN", 16}, {"COUT", 8}})), V{"FULLY_CONNECTED"});
  EXPECT_EQ(ops_of(export_kernel("global-avgpool", {{"HW", 8}, {"CIN", 4}})), V({"MEAN", "RESHAPE"}));  // with its flatten
}

TEST(TfliteExport, SoftmaxPadAndGemmRunOnArmNn) {
  networks::LayerBuilder b("head");
  std::string x = b.input("x", {1, 4, 6, 6});
  x = b.node("Pad", {x, b.constant_ints({0, 0, 1, 2, 0, 0, 1, 0})}, {1, 4, 8, 8}, {networks::attr("mode", std::string("constant"))});
  x = b.avgpool(x, 2, 2, 0, false, true);
  x = b.softmax(b.gemm(b.flatten(x), 5));
  b.output(x);
  const onnx::ModelProto m = b.model();
  EXPECT_EQ(ops_of(export_tflite(m, "head.onnx", "tflite_cpu")),
            V({"PAD", "AVERAGE_POOL_2D", "TRANSPOSE", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"}));
  expect_export_matches(m, "head");
}

TEST(TfliteExport, WhatTfliteCannotExpressIsOneLineNamingOpAndBackend) {
  {
    networks::LayerBuilder b("grouped");
    b.output(b.conv(b.input("x", {1, 8, 6, 6}), 8, 3, 1, 1, /*group=*/2));
    const std::string e = test::error_of([&] { export_tflite(b.model(), "grouped.onnx", "tflite_gpu"); });
    EXPECT_TRUE(test::contains(e, "tflite_gpu cannot convert Conv node")) << e;
    EXPECT_TRUE(test::contains(e, "grouped convolution (group=2 of 8 channels)")) << e;
  }
  {
    // PyTorch's symmetric pads at stride 2 are not TFLite's SAME; zero padding is wrong for a max over
    // values that can be negative.
    networks::LayerBuilder b("pool");
    b.output(b.maxpool(b.input("x", {1, 4, 8, 8}), 3, 2, 1));
    const std::string e = test::error_of([&] { export_tflite(b.model(), "pool.onnx", "tflite_cpu"); });
    EXPECT_TRUE(test::contains(e, "tflite_cpu cannot convert MaxPool node")) << e;
    EXPECT_TRUE(test::contains(e, "the input may be negative")) << e;
    // After a ReLU the same pool is exact with a PAD in front.
    networks::LayerBuilder ok("pool_after_relu");
    ok.output(ok.maxpool(ok.relu(ok.input("x", {1, 4, 8, 8})), 3, 2, 1));
    EXPECT_EQ(ops_of(export_tflite(ok.model(), "ok.onnx", "tflite_cpu")), V({"RELU", "PAD", "MAX_POOL_2D"}));
    expect_export_matches(ok.model(), "pool_after_relu");
  }
  {
    networks::LayerBuilder b("lstm");
    b.output(b.node("Einsum", {b.input("x", {1, 4})}, {1, 4}, {networks::attr("equation", std::string("ij->ij"))}));
    const std::string e = test::error_of([&] { export_tflite(b.model(), "lstm.onnx", "tflite_cpu"); });
    EXPECT_TRUE(test::contains(e, "tflite_cpu cannot convert Einsum node")) << e;
    EXPECT_TRUE(test::contains(e, "op 'Einsum' has no TFLite export")) << e;
  }
}

}  // namespace
}  // namespace nnmeter::tflite
