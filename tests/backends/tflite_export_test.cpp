// The ONNX -> .tflite export, checked by an independent reader: every builtin kernel and every zoo
// architecture is exported, parsed and run by Arm NN's TFLite parser (CpuRef), and its outputs match the
// plain reference interpreter. Sizes are kept small: CpuRef is a naive implementation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/armnn_runner.h"
#include "backends/model_zoo.h"
#include "backends/reference_runtime.h"
#include "backends/tflite/tflite_export.h"
#include "nnmeter/kernel.h"
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
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<Tensor> inputs;
  std::map<std::string, std::vector<float>> tflite_inputs;
  for (const auto& in : model.graph().input()) {
    const bool init = std::any_of(model.graph().initializer().begin(), model.graph().initializer().end(),
                                  [&](const onnx::TensorProto& t) { return t.name() == in.name(); });
    if (init) continue;
    Tensor t{in.name(), {}, {}};
    for (const auto& d : in.type().tensor_type().shape().dim()) t.shape.push_back(d.dim_value());
    int64_t count = 1;
    for (auto d : t.shape) count *= d;
    t.data.resize(static_cast<size_t>(count));
    for (auto& v : t.data) v = dist(rng);
    tflite_inputs[t.name] = t.shape.size() == 4 ? nchw_to_nhwc(t.shape, t.data) : t.data;
    inputs.push_back(std::move(t));
  }
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

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& k : builtin_kernels()) names.push_back(k.name);
  return names;
}

std::string test_name(std::string name) {
  std::replace(name.begin(), name.end(), '-', '_');  // gtest names allow only [A-Za-z0-9_]
  return name;
}

// Prior configs shrunk to CpuRef-friendly sizes (16 keeps channel counts even and divisible by 2 and 4).
KernelConfig small(KernelConfig config) {
  for (auto& [key, value] : config.items()) {
    if (!value.is_number_integer()) continue;
    const int64_t v = value.get<int64_t>();
    if (key == "HW") value = std::min<int64_t>(v, 12);
    if ((key.starts_with("CIN") || key == "COUT") && v > 16) value = 16;
  }
  return config;
}

class TfliteExportKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(TfliteExportKernels, ArmNnRunsItLikeTheReference) {
  KernelInfo info;
  for (auto& k : builtin_kernels())
    if (k.name == GetParam()) info = k;
  const auto suite = info.create(Json::object());
  for (const auto& config : suite.sampler->prior_config_sampling(2, 5)) {
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(suite.kernel->build_onnx(small(config), 1)));
    expect_export_matches(model, GetParam() + " " + small(config).dump());
  }
}

INSTANTIATE_TEST_SUITE_P(Tflite, TfliteExportKernels, ::testing::ValuesIn(kernel_names()),
                         [](const auto& info) { return test_name(info.param); });

class TfliteExportZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(TfliteExportZoo, ArmNnRunsItLikeTheReference) {
  const auto m = zoo::build(GetParam(), 64, 0.25);
  expect_export_matches(m.model, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Tflite, TfliteExportZoo, ::testing::ValuesIn(zoo::model_names()),
                         [](const auto& info) { return test_name(info.param); });

}  // namespace
}  // namespace nnmeter::tflite
