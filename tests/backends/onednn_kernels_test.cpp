// Every builtin kernel model (src/kernels/) runs on onednn_cpu and matches the plain reference, for two
// sampled configurations of each kernel (the naive reference conv dominates the runtime).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/kernel_cases.h"
#include "backends/onednn/engine.h"
#include "backends/reference_runtime.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"

namespace nnmeter::onednn {
namespace {

class BuiltinKernelModels : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltinKernelModels, MatchPlainReference) {
  KernelInfo info;
  for (auto& k : builtin_kernels())
    if (k.name == GetParam()) info = k;
  const auto suite = info.create(Json::object());
  const auto configs = suite.sampler->prior_config_sampling(2, 11);
  ASSERT_FALSE(configs.empty());
  for (const auto& prior : configs) {
    const KernelConfig config = test::shrunk_tokens(prior);
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(suite.kernel->build_onnx(config, 1))) << config.dump();
    const std::vector<Tensor> inputs = test::model_inputs(model, 3);
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

INSTANTIATE_TEST_SUITE_P(OneDnn, BuiltinKernelModels, ::testing::ValuesIn(test::builtin_kernel_names()),
                         [](const auto& info) { return test::gtest_param_name(info.param); });

}  // namespace
}  // namespace nnmeter::onednn
