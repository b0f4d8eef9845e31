// xnnpack_cpu: every builtin kernel and every zoo architecture converted (ONNX -> .tflite) and run on
// XNNPACK's operators, matching the plain reference interpreter; the backend's files, plan, kernel count,
// profile and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "networks/architectures.h"
#include "networks/layers.h"
#include "backends/kernel_cases.h"
#include "backends/reference_runtime.h"
#include "backends/tflite/tflite_export.h"
#include "backends/xnnpack/engine.h"
#include "backends/xnnpack/xnnpack_backend.h"
#include "backends/measure.h"
#include "common/io.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"
#include "support/test_support.h"

namespace nnmeter::xnnpack {
namespace {

// Converts `model`, runs it on XNNPACK and on the reference with the same inputs, compares every output.
void expect_runs_like_reference(const onnx::ModelProto& model, const std::string& what, int threads = 1) {
  const auto inputs = test::model_inputs(model, 11);
  const std::string tflite = tflite::export_tflite(model, what + ".onnx", "xnnpack_cpu");
  Engine engine(tflite, what + ".tflite", EngineOptions{threads});
  const auto got = engine.forward(inputs);
  const auto ref = test::run_reference(model, inputs);
  ASSERT_EQ(got.size(), ref.size()) << what;
  for (const auto& t : got) {
    ASSERT_TRUE(ref.count(t.name)) << what << ": output '" << t.name << "' is not the model's";
    const auto& r = ref.at(t.name);
    ASSERT_EQ(t.shape, r.shape) << what << " " << t.name;
    double scale = 1e-6, worst = 0;
    for (size_t i = 0; i < r.data.size(); ++i) {
      scale = std::max(scale, std::fabs(r.data[i]));
      worst = std::max(worst, std::fabs(t.data[i] - r.data[i]));
    }
    EXPECT_LE(worst, 1e-4 * scale) << what << " " << t.name << ": largest difference " << worst << " of scale " << scale;
  }
}

std::string kernel_onnx(const std::string& kernel, const KernelConfig& config) {
  for (auto& k : builtin_kernels())
    if (k.name == kernel) return k.create(Json::object()).kernel->build_onnx(config, 1);
  throw std::runtime_error("no kernel " + kernel);
}

class XnnpackKernels : public ::testing::TestWithParam<std::string> {};

TEST_P(XnnpackKernels, RunLikeTheReference) {
  KernelInfo info;
  for (auto& k : builtin_kernels())
    if (k.name == GetParam()) info = k;
  const auto suite = info.create(Json::object());
  for (const auto& config : suite.sampler->prior_config_sampling(3, 5)) {
    onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(suite.kernel->build_onnx(test::shrunk(config, 14, 24), 1)));
    if (const auto it = test::kernels_without_tflite_export().find(GetParam()); it != test::kernels_without_tflite_export().end()) {
      const std::string msg = test::error_of([&] { tflite::export_tflite(model, GetParam() + ".onnx", "xnnpack_cpu"); });
      EXPECT_NE(msg.find(it->second), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      continue;
    }
    expect_runs_like_reference(model, GetParam() + " " + test::shrunk(config, 14, 24).dump());
  }
}

INSTANTIATE_TEST_SUITE_P(Xnnpack, XnnpackKernels, ::testing::ValuesIn(test::builtin_kernel_names()),
                         [](const auto& info) { return test::gtest_param_name(info.param); });

class XnnpackZoo : public ::testing::TestWithParam<std::string> {};

TEST_P(XnnpackZoo, RunsLikeTheReference) {
  const onnx::ModelProto model = networks::build(GetParam(), 64, 0.25).model;
  if (const auto it = test::architectures_without_tflite_export().find(GetParam());
      it != test::architectures_without_tflite_export().end()) {
    const std::string msg = test::error_of([&] { tflite::export_tflite(model, GetParam() + ".onnx", "xnnpack_cpu"); });
    EXPECT_NE(msg.find(it->second), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    return;
  }
  expect_runs_like_reference(model, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Xnnpack, XnnpackZoo, ::testing::ValuesIn(networks::architectures()),
                         [](const auto& info) { return test::gtest_param_name(info.param); });

TEST(Xnnpack, ThreadPoolComputesTheSame) { expect_runs_like_reference(networks::build("mobilenet_v2", 64, 0.5).model, "mobilenet_v2", 2); }

// The plan of a converted kernel: XNNPACK operators with what was fused into them.
Json plan_of(const std::string& kernel, const KernelConfig& config) {
  onnx::ModelProto model;
  model.ParseFromString(kernel_onnx(kernel, config));
  return Engine(tflite::export_tflite(model, kernel, "xnnpack_cpu"), kernel, {}).plan();
}

std::vector<std::string> operators_of(const Json& plan) {
  std::vector<std::string> out;
  for (const auto& s : plan["steps"]) {
    std::string name = s["operator"].get<std::string>();
    if (s.contains("activation")) name += "+" + s["activation"].get<std::string>();
    for (const auto& f : s.value("fused", Json::array())) name += "+" + f.get<std::string>();
    out.push_back(name);
  }
  return out;
}

using V = std::vector<std::string>;

TEST(Xnnpack, FusesAsTfliteAndXnnpackDo) {
  const Json conv = {{"HW", 14}, {"CIN", 8}, {"COUT", 16}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}};
  // BatchNormalization folded at conversion, ReLU clamped inside the convolution.
  EXPECT_EQ(operators_of(plan_of("conv-bn-relu", conv)), (V{"convolution2d_nhwc_f32+RELU"}));
  EXPECT_EQ(operators_of(plan_of("conv-bn-relu6", conv)), (V{"convolution2d_nhwc_f32+RELU6"}));
  // Hard-swish is an operator of its own after the convolution.
  EXPECT_EQ(operators_of(plan_of("conv-bn-hswish", conv)), (V{"convolution2d_nhwc_f32", "hardswish_nc_f32"}));
  const Json dw = {{"HW", 14}, {"CIN", 8}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}};
  EXPECT_EQ(operators_of(plan_of("dwconv-bn-relu", dw)), (V{"convolution2d_nhwc_f32+RELU"}));
  const Json plan = plan_of("dwconv-bn-relu", dw);
  EXPECT_EQ(plan["operators"], 1);
  EXPECT_EQ(plan["threads"], 1);
  EXPECT_EQ(plan["steps"][0]["op"], "DEPTHWISE_CONV_2D");
  const Json fc = {{"CIN", 32}, {"COUT", 10}};
  EXPECT_EQ(operators_of(plan_of("fc", fc)), (V{"fully_connected_nc_f32"}));
  const Json cat = {{"HW", 8}, {"CIN1", 8}, {"CIN2", 16}, {"CIN3", 0}, {"CIN4", 0}, {"NS", 2}};
  EXPECT_EQ(operators_of(plan_of("concat", cat)), (V{"copy_nc_x32", "copy_nc_x32"}));
  // ONNX's channel shuffle, with the layout transposes around it, is XNNPACK's channel shuffle operator.
  EXPECT_EQ(operators_of(plan_of("channelshuffle", {{"HW", 8}, {"CIN", 16}})),
            (V{"channel_shuffle_nc_x32+RESHAPE+TRANSPOSE+RESHAPE+TRANSPOSE"}));
}

// ONNX pads that are not TFLite's SAME become a PAD op in the .tflite; XNNPACK folds it into the
// convolution reading it, as its subgraph fusion does.
TEST(Xnnpack, ZeroPadIsFoldedIntoTheConvolution) {
  networks::LayerBuilder b("padded");
  b.output(b.relu(b.conv(b.input("x", {1, 4, 9, 9}), 8, 3, 1, 2)));  // pads 2 with a 3x3 window: neither SAME nor VALID
  const onnx::ModelProto model = b.model();
  const Json plan = Engine(tflite::export_tflite(model, "padded", "xnnpack_cpu"), "padded", {}).plan();
  EXPECT_EQ(operators_of(plan), (V{"convolution2d_nhwc_f32+RELU+PAD"}));
  expect_runs_like_reference(model, "padded");
}

// nn-Meter's rule-test pooling is a 1x1 window with stride 2: XNNPACK has no operator for it (the delegate
// leaves it to TFLite's kernel), so it is the engine's own strided gather.
TEST(Xnnpack, StridedOneByOnePoolIsASubsample) {
  networks::LayerBuilder b("pool1x1");
  b.output(b.relu(b.avgpool(b.input("x", {1, 6, 9, 9}), 1, 2)));
  const onnx::ModelProto model = b.model();
  const Json plan = Engine(tflite::export_tflite(model, "pool1x1", "xnnpack_cpu"), "pool1x1", {}).plan();
  EXPECT_EQ(operators_of(plan), (V{"subsample+RELU"}));
  expect_runs_like_reference(model, "pool1x1");
}

// A Dense layer on the last axis of a 4-D tensor (MatMul, as after the rule tester's reshape) is
// FULLY_CONNECTED with keep_num_dims, in ONNX's element order.
TEST(Xnnpack, MatMulOverTheLastAxisOfAFeatureMap) {
  networks::LayerBuilder b("dense4d");
  const std::string x = b.input("x", {1, 4, 6, 5});
  b.output(b.node("MatMul", {x, b.random_weights({5, 3}, 0.3f)}, {1, 4, 6, 3}));
  const onnx::ModelProto model = b.model();
  const Json plan = Engine(tflite::export_tflite(model, "dense4d", "xnnpack_cpu"), "dense4d", {}).plan();
  EXPECT_EQ(operators_of(plan), (V{"transpose", "fully_connected_nc_f32", "transpose"}));
  expect_runs_like_reference(model, "dense4d");
  // The rule tester's fc after a reshape, alone: a 3-D graph input.
  networks::LayerBuilder b3("dense3d");
  const std::string x3 = b3.input("x", {2, 6, 5});
  b3.output(b3.node("MatMul", {x3, b3.random_weights({5, 3}, 0.3f)}, {2, 6, 3}));
  expect_runs_like_reference(b3.model(), "dense3d");
}

TEST(XnnpackBackend, ConvertsProfilesAndCountsKernels) {
  test::TempDir dir;
  const fs::path onnx = dir / "mbv2.onnx";
  io::write_file_atomic(onnx, networks::build("mobilenet_v2", 32, 0.25).model.SerializeAsString());
  Registry registry;
  auto backend = connect_backend(registry, "xnnpack_cpu",
                                 {{"NUM_ROUNDS", 2}, {"NUM_RUNS", 2}, {"WARMUP_RUNS", 1}, {"MIN_TIME_MS", 0}, {"MAX_RETRIES", 0}});
  EXPECT_EQ(backend->name(), "xnnpack_cpu");
  EXPECT_NE(backend->get_version(), "unknown");  // the installed package's version
  EXPECT_NE(backend->test_connection().find("XNNPACK"), std::string::npos);
  const auto files = backend->to_backend(onnx, dir.path(), "");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].filename(), "mbv2.tflite");
  EXPECT_EQ(files[1].filename(), "mbv2.xnnpack.json");
  const Json plan = io::load_json_file(files[1]);
  EXPECT_EQ(plan["format"], "nnmeter-xnnpack-plan");
  EXPECT_EQ(plan["inputs"].begin().value(), (Json{1, 3, 32, 32}));
  const auto count = backend->kernel_count(files);
  ASSERT_TRUE(count.has_value());
  EXPECT_EQ(*count, plan["operators"].get<int>());
  EXPECT_EQ(*count, static_cast<int>(plan["steps"].size()));
  const LatencyStats stats = backend->profile(files);
  EXPECT_EQ(stats.count, 2);
  EXPECT_GT(stats.median, 0);
  // The wrapper runs the converted file like the reference.
  const auto model = networks::build("mobilenet_v2", 32, 0.25).model;
  const auto inputs = test::model_inputs(model, 11);
  const auto out = backend->build_wrapper({files[0]})->forward(inputs);
  const auto ref = test::run_reference(model, inputs);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].data.size(), ref.begin()->second.data.size());
  for (size_t i = 0; i < out[0].data.size(); ++i) EXPECT_NEAR(out[0].data[i], ref.begin()->second.data[i], 1e-3);
}

TEST(XnnpackBackend, WarmAndColdProfilesBothMeasure) {
  test::TempDir dir;
  const fs::path onnx = dir / "k.onnx";
  io::write_file_atomic(onnx, kernel_onnx("conv-bn-relu", {{"HW", 28}, {"CIN", 16}, {"COUT", 16}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}}));
  Registry registry;
  for (bool cold : {true, false}) {
    auto backend = connect_backend(registry, "xnnpack_cpu",
                                   {{"NUM_ROUNDS", 3}, {"NUM_RUNS", 3}, {"MIN_TIME_MS", 0}, {"COLD_CACHE", cold}, {"MAX_RETRIES", 0}});
    const auto stats = backend->profile(backend->to_backend(onnx, dir.path(), cold ? "cold" : "warm"));
    EXPECT_EQ(stats.count, 3);
    EXPECT_GT(stats.min, 0);
  }
}

TEST(XnnpackBackend, BadInputIsOneLineNamingTheProblem) {
  test::TempDir dir;
  Registry registry;
  auto backend = connect_backend(registry, "xnnpack_cpu", Json::object());
  // An op without a lowering: named with the backend, nothing written.
  networks::LayerBuilder b("erf");
  b.output(b.node("Erf", {b.input("x", {1, 4, 8, 8})}, {1, 4, 8, 8}));
  io::write_file_atomic(dir / "lrn.onnx", b.model().SerializeAsString());
  std::string e = test::error_of([&] { backend->to_backend(dir / "lrn.onnx", dir.path(), ""); });
  EXPECT_NE(e.find("xnnpack_cpu"), std::string::npos) << e;
  EXPECT_NE(e.find("Erf"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(dir / "lrn.tflite"));
  EXPECT_FALSE(fs::exists(dir / "lrn.xnnpack.json"));

  // A damaged or truncated .tflite, and a missing one.
  io::write_file_atomic(dir / "bad.tflite", "not a flatbuffer at all");
  e = test::error_of([&] { backend->profile({dir / "bad.tflite"}); });
  EXPECT_NE(e.find("not a valid .tflite"), std::string::npos) << e;
  const std::string good = tflite::export_tflite(networks::build("resnet18", 32, 0.25).model, "r", "xnnpack_cpu");
  io::write_file_atomic(dir / "cut.tflite", good.substr(0, good.size() / 2));
  e = test::error_of([&] { backend->build_wrapper({dir / "cut.tflite"}); });
  EXPECT_NE(e.find("xnnpack_cpu"), std::string::npos) << e;
  e = test::error_of([&] { backend->profile({dir / "missing.tflite"}); });
  EXPECT_NE(e.find("convert the model first"), std::string::npos) << e;
  e = test::error_of([&] { backend->profile({dir / "x.onnx"}); });
  EXPECT_NE(e.find("<name>.tflite"), std::string::npos) << e;

  // Wrong inputs.
  Engine engine(good, "r.tflite", {});
  e = test::error_of([&] { engine.set_inputs({}); });
  EXPECT_NE(e.find("needs input"), std::string::npos) << e;
  auto inputs = backends::random_inputs(engine.input_specs());
  inputs[0].shape[2] += 1;
  e = test::error_of([&] { engine.set_inputs(inputs); });
  EXPECT_NE(e.find("must have shape [1,3,32,32]"), std::string::npos) << e;
}

TEST(XnnpackBackend, DeclaresItsParametersForWorkspaces) {
  std::vector<std::string> names;
  for (const auto& p : backend_params()) names.push_back(p.name);
  EXPECT_EQ(names, (V{"NUM_THREADS", "WARMUP_RUNS", "NUM_RUNS", "NUM_ROUNDS", "MIN_TIME_MS", "MAX_TIME_MS", "COLD_CACHE", "COLD_CACHE_FILL_MB", "PIN_CPU", "MAX_BUSY",
                      "MAX_RETRIES"}));
  Registry registry;
  EXPECT_THROW(connect_backend(registry, "xnnpack_cpu", {{"NUM_THREADS", 0}}), Error);
}

// The damaged files fuzzing found (kept in fuzz/corpus/tflite_model/): each is a one-line error naming
// what is wrong, before anything is allocated or run.
TEST(XnnpackBackend, DamagedFilesFromFuzzingAreNamedErrors) {
  const fs::path corpus = fs::path(NNMETER_SOURCE_DIR) / "fuzz/corpus/tflite_model";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"crash-ubsan-pad-output-of-lower-rank.tflite", "ranks differ"},
      {"crash-uncaught-json-error-non-utf8-tensor-name.tflite", "not UTF-8"},
      {"oom-huge-window-times-output.tflite", "more than the 2^27"},
      {"crash-ubsan-element-count-overflow.tflite", "dimensions"}};
  for (const auto& [file, phrase] : cases) {
    const std::string e = test::error_of([&] { Engine(io::read_file(corpus / file), file, {}); });
    EXPECT_NE(e.find("xnnpack_cpu cannot run"), std::string::npos) << file << ": " << e;
    EXPECT_NE(e.find(phrase), std::string::npos) << file << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << file << ": " << e;
  }
  // A window op whose window x output pixels would make XNNPACK's indirection buffer huge (2048^2 x 9).
  networks::LayerBuilder b("wide");
  b.output(b.conv(b.input("x", {1, 1, 2048, 2048}), 1, 3));
  const std::string e = test::error_of([&] { Engine(tflite::export_tflite(b.model(), "wide", "xnnpack_cpu"), "wide", {}); });
  EXPECT_NE(e.find("exceed 2^25"), std::string::npos) << e;
}

}  // namespace
}  // namespace nnmeter::xnnpack
