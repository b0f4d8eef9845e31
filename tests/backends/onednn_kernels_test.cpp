// Every builtin kernel model (src/kernels/) runs on onednn_cpu and matches the plain reference, for two
// sampled configurations of each kernel (the naive reference conv dominates the runtime).
#include <algorithm>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backends/onednn/engine.h"
#include "backends/reference_runtime.h"
#include "nnmeter/kernel.h"

namespace nnmeter::onednn {
namespace {

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& k : builtin_kernels()) names.push_back(k.name);
  return names;
}

class BuiltinKernelModels : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltinKernelModels, MatchPlainReference) {
  KernelInfo info;
  for (auto& k : builtin_kernels())
    if (k.name == GetParam()) info = k;
  const auto suite = info.create(Json::object());
  const auto configs = suite.sampler->prior_config_sampling(2, 11);
  ASSERT_FALSE(configs.empty());
  for (const auto& config : configs) {
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(suite.kernel->build_onnx(config, 1))) << config.dump();
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    std::vector<Tensor> inputs;
    for (const auto& in : model.graph().input()) {
      bool is_init = false;
      for (const auto& t : model.graph().initializer()) is_init |= t.name() == in.name();
      if (is_init) continue;
      Tensor t{in.name(), {}, {}};
      for (const auto& d : in.type().tensor_type().shape().dim()) t.shape.push_back(d.dim_value());
      t.data.resize(static_cast<size_t>(numel(t.shape)));
      for (auto& v : t.data) v = dist(rng);
      inputs.push_back(std::move(t));
    }
    Engine engine(load_graph(model, GetParam() + ".onnx"), EngineOptions{1});
    const auto got = engine.forward(inputs);
    const auto ref = test::run_reference(model, inputs);
    for (const auto& t : got) {
      const auto& r = ref.at(t.name);
      ASSERT_EQ(t.shape, r.shape) << config.dump();
      double scale = 1e-6, worst = 0;
      for (size_t i = 0; i < r.data.size(); ++i) {
        scale = std::max(scale, std::fabs(r.data[i]));
        worst = std::max(worst, std::fabs(t.data[i] - r.data[i]));
      }
      EXPECT_LE(worst, 1e-4 * scale) << GetParam() << " " << config.dump();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OneDnn, BuiltinKernelModels, ::testing::ValuesIn(kernel_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;  // gtest names allow only [A-Za-z0-9_]
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace nnmeter::onednn
