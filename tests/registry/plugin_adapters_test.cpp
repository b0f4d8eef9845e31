// Plugins seen through libnnmeter's own interfaces: the example kernel and backend plugins.
#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "nnmeter/backend.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"
#include "support/plugin_fixtures.h"

namespace nnmeter {
namespace {

using test::TempDir;

TEST(PluginKernel, SamplesBuildsValidOnnxAndParsesFeatures) {
  TempDir tmp;
  Registry registry(tmp / "home");
  registry.register_module(ModuleKind::Kernel, test::make_kernel_package(tmp / "pkg"));
  const KernelInfo info = find_kernel(registry, "mykernel");
  EXPECT_TRUE(info.customized);
  const KernelSuite suite = info.create(Json{{"BATCH_SIZE", 1}});

  const auto configs = suite.sampler->prior_config_sampling(5, 42);
  ASSERT_EQ(configs.size(), 5u);
  EXPECT_EQ(configs, suite.sampler->prior_config_sampling(5, 42));  // seeded
  for (const auto& config : configs) {
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(suite.kernel->build_onnx(config, 1)));
    onnx::checker::check_model(model);
    onnx::shape_inference::InferShapes(model);
    const auto& dims = model.graph().output(0).type().tensor_type().shape().dim();
    const int64_t hw = config["HW"], s = config["STRIDES"];
    EXPECT_EQ(dims[1].dim_value(), config["COUT"].get<int64_t>());
    EXPECT_EQ(dims[2].dim_value(), (hw + s - 1) / s);
    EXPECT_EQ(suite.kernel->input_tensor_shape(config), (std::vector<Shape>{{config["CIN"], hw, hw}}));

    const auto feature = suite.parser->get_feature_by_config(config);
    ASSERT_EQ(feature.size(), 7u);
    EXPECT_EQ(suite.parser->get_config_by_feature(feature), config);
  }
  const auto fine = suite.sampler->finegrained_config_sampling(3, {configs[0]}, 7);
  ASSERT_EQ(fine.size(), 3u);
  for (const auto& c : fine) {
    EXPECT_GE(c["CIN"].get<int>(), static_cast<int>(0.4 * configs[0]["CIN"].get<int>()));
    EXPECT_LE(c["CIN"].get<int>(), static_cast<int>(1.2 * configs[0]["CIN"].get<int>()));
  }
  // A plugin-side exception arrives as one Error line, not a crash.
  EXPECT_THROW(suite.kernel->build_onnx(Json{{"HW", 0}}, 1), Error);
}

TEST(PluginBackend, ConvertsAndProfilesThroughTheCAbi) {
  TempDir tmp;
  Registry registry(tmp / "home");
  registry.register_module(ModuleKind::Backend, test::make_backend_package(tmp / "pkg"));
  const BackendInfo info = find_backend(registry, "my_backend");
  ASSERT_EQ(info.params.size(), 3u);
  EXPECT_EQ(info.params[0].name, "COMMAND");
  auto backend = connect_backend(registry, "my_backend", Json{{"NUM_RUNS", 4}});
  EXPECT_EQ(backend->test_connection(), "Registration Success!");
  EXPECT_EQ(check_env_line(info), "my_backend:\t1.0");
  test::write_text(tmp / "model.onnx", "bytes");
  const auto files = backend->to_backend(tmp / "model.onnx", tmp / "work", "converted.onnx");
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(test::read_text(files[0]), "bytes");
  const LatencyStats stats = backend->profile(files);
  EXPECT_EQ(stats.count, 4);
  EXPECT_GT(stats.median, 0.0);
  EXPECT_THROW(backend->build_wrapper(files), Error);
  EXPECT_THROW(connect_backend(registry, "my_backend", Json{{"NUM_RUNS", "many"}}), Error);
  // A failing external program is an Error from the plugin, surfaced as one line.
  auto failing = connect_backend(registry, "my_backend", Json{{"COMMAND", "false"}});
  EXPECT_THROW(failing->profile(files), Error);
}

}  // namespace
}  // namespace nnmeter
