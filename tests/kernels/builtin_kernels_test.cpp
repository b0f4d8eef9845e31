// Every builtin kernel builds a valid ONNX model (checker + strict shape inference) whose output shape is
// the one its config implies, for a spread of sampled and edge-case configs; bad configs fail cleanly.
#include <gtest/gtest.h>

#include <algorithm>

#include "kernels/kernel_test_util.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"

namespace nnmeter {
namespace {

const std::vector<std::string> kSeedOrder = {
    "conv-bn-relu", "conv-bn-relu6",  "conv-bn",         "conv-relu",      "conv-relu6",      "conv-hswish",
    "conv-block",   "conv-bn-hswish", "dwconv-bn",       "dwconv-relu",    "dwconv-relu6",    "dwconv-bn-relu",
    "dwconv-bn-relu6", "dwconv-block", "dwconv-bn-hswish", "maxpool",      "avgpool",         "fc",
    "concat",       "split",          "channelshuffle",  "se",             "global-avgpool",  "bnrelu",
    "bn",           "hswish",         "swish",           "relu",           "addrelu",         "add",
    // Not nn-Meter's: SiLU blocks (EfficientNet, NAS spaces), transformers' kernels, grouped convs.
    "conv-bn-swish", "dwconv-bn-swish", "layernorm", "gelu", "softmax", "linear", "linear-gelu", "matmul",
    "gconv-bn-relu"};

KernelSuite suite_for(const std::string& name, const Json& pbc = Json::object()) {
  for (auto& info : builtin_kernels())
    if (info.name == name) return info.create(pbc);
  throw std::runtime_error("no builtin kernel " + name);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t at(const Json& c, const char* k) { return c.at(k).get<int64_t>(); }

// The output shapes a config implies, written independently of the kernel code.
std::vector<Shape> expected_outputs(const std::string& k, const Json& c, int64_t b) {
  if (k.rfind("conv-", 0) == 0 || k.rfind("gconv-", 0) == 0) {
    int64_t o = ceil_div(at(c, "HW"), at(c, "STRIDES"));
    return {{b, at(c, "COUT"), o, o}};
  }
  if (k.rfind("dwconv-", 0) == 0) {
    int64_t o = ceil_div(at(c, "HW"), at(c, "STRIDES"));
    return {{b, at(c, "CIN"), o, o}};
  }
  if (k == "maxpool" || k == "avgpool") {
    int64_t o = ceil_div(at(c, "HW"), at(c, c.contains("POOL_STRIDES") ? "POOL_STRIDES" : "STRIDES"));
    return {{b, at(c, "CIN"), o, o}};
  }
  if (k == "fc") return {{b, at(c, "COUT")}};
  if (k == "layernorm" || k == "gelu" || k == "softmax") return {{b, at(c, "T"), at(c, "CIN")}};
  if (k == "linear" || k == "linear-gelu") return {{b, at(c, "T"), at(c, "COUT")}};
  if (k == "matmul") return {{b, at(c, "B"), at(c, "M"), at(c, "N")}};
  if (k == "global-avgpool") return {{b, at(c, "CIN")}};
  if (k == "concat") {
    int64_t total = 0;
    for (const char* key : {"CIN1", "CIN2", "CIN3", "CIN4"}) total += c.value(key, int64_t{0});
    return {{b, total, at(c, "HW"), at(c, "HW")}};
  }
  if (k == "split") return {{b, at(c, "CIN") / 2, at(c, "HW"), at(c, "HW")}, {b, at(c, "CIN") / 2, at(c, "HW"), at(c, "HW")}};
  return {{b, at(c, "CIN"), at(c, "HW"), at(c, "HW")}};
}

// Small edge configs per family: HW 1 with the largest prior kernel, strides that do not divide HW.
std::vector<Json> edge_configs(const std::string& k) {
  if (k.rfind("conv-", 0) == 0)
    return {{{"HW", 1}, {"CIN", 3}, {"COUT", 5}, {"KERNEL_SIZE", 7}, {"STRIDES", 2}},
            {{"HW", 13}, {"CIN", 8}, {"COUT", 4}, {"KERNEL_SIZE", 3}, {"STRIDES", 4}}};
  if (k.rfind("gconv-", 0) == 0)
    return {{{"HW", 1}, {"CIN", 4}, {"COUT", 6}, {"KERNEL_SIZE", 7}, {"STRIDES", 2}, {"GROUPS", 2}},
            {{"HW", 13}, {"CIN", 48}, {"COUT", 48}, {"KERNEL_SIZE", 3}, {"STRIDES", 4}, {"GROUPS", 3}}};
  if (k.rfind("dwconv-", 0) == 0)
    return {{{"HW", 1}, {"CIN", 3}, {"KERNEL_SIZE", 7}, {"STRIDES", 2}},
            {{"HW", 15}, {"CIN", 6}, {"COUT", 6}, {"KERNEL_SIZE", 5}, {"STRIDES", 2}}};
  if (k == "maxpool" || k == "avgpool")
    return {{{"HW", 7}, {"CIN", 4}, {"KERNEL_SIZE", 3}, {"POOL_STRIDES", 2}},
            {{"HW", 2}, {"CIN", 4}, {"KERNEL_SIZE", 2}, {"STRIDES", 1}}};
  if (k == "fc") return {{{"CIN", 1}, {"COUT", 1}}, {{"CIN", 17}, {"COUT", 1000}}};
  if (k == "layernorm" || k == "gelu" || k == "softmax") return {{{"T", 1}, {"CIN", 1}}, {{"T", 197}, {"CIN", 6}}};
  if (k == "linear" || k == "linear-gelu")
    return {{{"T", 1}, {"CIN", 1}, {"COUT", 1}}, {{"T", 49}, {"CIN", 6}, {"COUT", 24}}};
  if (k == "matmul") return {{{"B", 1}, {"M", 1}, {"K", 1}, {"N", 1}}, {{"B", 3}, {"M", 5}, {"K", 4}, {"N", 2}}};
  if (k == "concat")
    return {{{"HW", 7}, {"CIN1", 1}, {"CIN2", 3}, {"CIN3", 0}, {"CIN4", 0}},
            {{"HW", 3}, {"CIN1", 2}, {"CIN2", 3}, {"CIN3", 4}, {"CIN4", 5}}};
  if (k == "split" || k == "channelshuffle") return {{{"HW", 1}, {"CIN", 2}}, {{"HW", 5}, {"CIN", 6}}};
  return {{{"HW", 1}, {"CIN", 1}}, {{"HW", 5}, {"CIN", 6}}};
}

TEST(BuiltinKernels, ListedInTheSeedsOrder) {
  std::vector<std::string> names;
  for (const auto& info : builtin_kernels()) {
    names.push_back(info.name);
    EXPECT_FALSE(info.customized);
    EXPECT_EQ(info.implement, "onnx");
  }
  EXPECT_EQ(names, kSeedOrder);
}

TEST(BuiltinKernels, EveryKernelBuildsValidModelsWithTheImpliedOutputShape) {
  for (const auto& name : kSeedOrder) {
    SCOPED_TRACE(name);
    KernelSuite suite = suite_for(name);
    std::vector<Json> configs = suite.sampler->prior_config_sampling(6, 2024);
    auto around = suite.sampler->finegrained_config_sampling(2, {configs.front()}, 7);
    configs.insert(configs.end(), around.begin(), around.end());
    for (const auto& e : edge_configs(name)) configs.push_back(e);
    for (const auto& config : configs) {
      SCOPED_TRACE(config.dump());
      for (int batch : {1, 2}) {
        // Big sampled convs at batch 2 add time without adding coverage.
        if (batch == 2 && &config != &configs.back()) continue;
        const std::string bytes = suite.kernel->build_onnx(config, batch);
        onnx::ModelProto model = test::parse_model(bytes);
        ASSERT_EQ(model.opset_import_size(), 1);
        EXPECT_EQ(model.opset_import(0).version(), 13);
        const auto shapes = suite.kernel->input_tensor_shape(config);
        ASSERT_EQ(model.graph().input_size(), static_cast<int>(shapes.size()));
        for (int i = 0; i < model.graph().input_size(); ++i) {
          const auto& dims = model.graph().input(i).type().tensor_type().shape().dim();
          EXPECT_EQ(model.graph().input(i).type().tensor_type().elem_type(), onnx::TensorProto::FLOAT);
          ASSERT_EQ(dims.size(), static_cast<int>(shapes[i].size()) + 1);
          EXPECT_EQ(dims[0].dim_value(), batch);
          for (size_t d = 0; d < shapes[i].size(); ++d) EXPECT_EQ(dims[static_cast<int>(d) + 1].dim_value(), shapes[i][d]);
        }
        EXPECT_EQ(test::checked_output_shapes(model), expected_outputs(name, config, batch));
      }
    }
  }
}

TEST(BuiltinKernels, InputCountsFollowTheKernel) {
  EXPECT_EQ(suite_for("add").kernel->input_tensor_shape({{"HW", 7}, {"CIN", 8}}).size(), 2u);
  EXPECT_EQ(suite_for("addrelu").kernel->input_tensor_shape({{"HW", 7}, {"CIN", 8}}).size(), 2u);
  EXPECT_EQ(suite_for("fc").kernel->input_tensor_shape({{"CIN", 7}, {"COUT", 8}}), (std::vector<Shape>{{7}}));
  auto concat = suite_for("concat").kernel;
  EXPECT_EQ(concat->input_tensor_shape({{"HW", 7}, {"CIN1", 1}, {"CIN2", 2}, {"CIN3", 3}, {"CIN4", 0}}).size(), 3u);
  EXPECT_EQ(concat->input_tensor_shape({{"HW", 7}, {"CIN1", 1}, {"CIN2", 2}, {"CIN3", 3}, {"CIN4", 4}}).size(), 4u);
}

std::vector<std::string> op_types(const onnx::ModelProto& m) {
  std::vector<std::string> ops;
  for (const auto& n : m.graph().node()) ops.push_back(n.op_type());
  return ops;
}

int64_t conv_group(const onnx::ModelProto& m) {
  for (const auto& n : m.graph().node())
    if (n.op_type() == "Conv")
      for (const auto& a : n.attribute())
        if (a.name() == "group") return a.i();
  return -1;
}

TEST(BuiltinKernels, FixesNnMetersCompositionBugs) {
  const Json conv = {{"HW", 14}, {"CIN", 16}, {"COUT", 32}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}};
  auto m = test::parse_model(suite_for("conv-bn-hswish").kernel->build_onnx(conv, 1));
  EXPECT_EQ(conv_group(m), 1) << "conv-bn-hswish must be a regular conv";
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Conv", "BatchNormalization", "HardSigmoid", "Mul"}));

  const Json dw = {{"HW", 14}, {"CIN", 16}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}};
  m = test::parse_model(suite_for("dwconv-bn-hswish").kernel->build_onnx(dw, 1));
  EXPECT_EQ(conv_group(m), 16);

  // SiLU as PyTorch exports it: x · Sigmoid(x).
  m = test::parse_model(suite_for("conv-bn-swish").kernel->build_onnx(conv, 1));
  EXPECT_EQ(conv_group(m), 1);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Conv", "BatchNormalization", "Sigmoid", "Mul"}));
  m = test::parse_model(suite_for("dwconv-bn-swish").kernel->build_onnx(dw, 1));
  EXPECT_EQ(conv_group(m), 16);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Conv", "BatchNormalization", "Sigmoid", "Mul"}));

  // A grouped conv: one Conv with its group, weights of CIN / GROUPS inputs per output channel.
  m = test::parse_model(suite_for("gconv-bn-relu").kernel->build_onnx({{"HW", 14}, {"CIN", 16}, {"COUT", 32},
                                                                       {"KERNEL_SIZE", 3}, {"STRIDES", 1}, {"GROUPS", 4}}, 1));
  EXPECT_EQ(conv_group(m), 4);
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Conv", "BatchNormalization", "Relu"}));
  EXPECT_EQ(m.graph().initializer(0).dims(1), 4);

  m = test::parse_model(suite_for("conv-relu6").kernel->build_onnx(conv, 1));
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"Conv", "Clip"}));
  std::vector<float> bounds;
  for (const auto& t : m.graph().initializer())
    if (t.dims_size() == 0) bounds.push_back(t.float_data(0));
  EXPECT_EQ(bounds, (std::vector<float>{0.0f, 6.0f}));

  m = test::parse_model(suite_for("se").kernel->build_onnx({{"HW", 7}, {"CIN", 32}}, 1));
  EXPECT_EQ(op_types(m), (std::vector<std::string>{"GlobalAveragePool", "Conv", "Relu", "Conv", "HardSigmoid", "Mul"}));
  // The squeeze conv goes to CIN/4 channels.
  for (const auto& t : m.graph().initializer())
    if (t.dims_size() == 4 && t.dims(1) == 32) {
      EXPECT_EQ(t.dims(0), 8);
    }
}

// The transformer kernels are what torch.onnx.export writes at opset 13, so engines meet the same graphs in the
// kernels as in users' exports.
TEST(BuiltinKernels, TransformerKernelsAreWhatExportersWrite) {
  using V = std::vector<std::string>;
  const Json tokens = {{"T", 197}, {"CIN", 64}};
  EXPECT_EQ(op_types(test::parse_model(suite_for("layernorm").kernel->build_onnx(tokens, 1))),
            (V{"ReduceMean", "Sub", "Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"}));
  EXPECT_EQ(op_types(test::parse_model(suite_for("gelu").kernel->build_onnx(tokens, 1))), (V{"Div", "Erf", "Add", "Mul", "Mul"}));
  EXPECT_EQ(op_types(test::parse_model(suite_for("softmax").kernel->build_onnx(tokens, 1))), V{"Softmax"});
  const Json linear = {{"T", 197}, {"CIN", 64}, {"COUT", 256}};
  auto m = test::parse_model(suite_for("linear").kernel->build_onnx(linear, 1));
  EXPECT_EQ(op_types(m), (V{"MatMul", "Add"}));
  ASSERT_EQ(m.graph().initializer_size(), 2);
  EXPECT_EQ(m.graph().initializer(0).dims(0), 64);  // the weight is [CIN, COUT], as MatMul reads it
  EXPECT_EQ(m.graph().initializer(0).dims(1), 256);
  EXPECT_EQ(op_types(test::parse_model(suite_for("linear-gelu").kernel->build_onnx(linear, 1))),
            (V{"MatMul", "Add", "Div", "Erf", "Add", "Mul", "Mul"}));
  m = test::parse_model(suite_for("matmul").kernel->build_onnx({{"B", 3}, {"M", 197}, {"K", 64}, {"N", 197}}, 1));
  EXPECT_EQ(op_types(m), V{"MatMul"});
  EXPECT_EQ(m.graph().input_size(), 2);  // two activations, no weight
  EXPECT_EQ(m.graph().initializer_size(), 0);
}

TEST(BuiltinKernels, SameConfigGivesByteIdenticalModels) {
  auto suite = suite_for("conv-bn-relu");
  const Json c = {{"HW", 28}, {"CIN", 8}, {"COUT", 16}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}};
  EXPECT_EQ(suite.kernel->build_onnx(c, 1), suite.kernel->build_onnx(c, 1));
  Json other = c;
  other["CIN"] = 9;
  EXPECT_NE(suite.kernel->build_onnx(c, 1), suite.kernel->build_onnx(other, 1));
}

void expect_rejected(const std::string& kernel, const Json& config, const std::string& fragment, int batch = 1) {
  SCOPED_TRACE(kernel + " " + config.dump());
  auto suite = suite_for(kernel);
  try {
    suite.kernel->build_onnx(config, batch);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos);
    EXPECT_NE(msg.find(fragment), std::string::npos) << msg;
  }
}

// Patch embeddings are convs whose stride is their kernel: 16 in ViT/DeiT, 32 in ViT-B/32, the samples the
// preset transformers takes from its networks' layers. They build, without padding, to the patch grid.
TEST(BuiltinKernels, PatchEmbeddingConvsBuild) {
  for (int64_t p : {16, 32}) {
    const Json c = {{"HW", 224}, {"CIN", 3}, {"COUT", 192}, {"KERNEL_SIZE", p}, {"STRIDES", p}};
    const auto m = test::parse_model(suite_for("conv-bn").kernel->build_onnx(c, 1));
    const auto& out = m.graph().output(0).type().tensor_type().shape();
    EXPECT_EQ(out.dim(2).dim_value(), 224 / p) << p;
    EXPECT_EQ(out.dim(3).dim_value(), 224 / p) << p;
  }
  expect_rejected("conv-bn", {{"HW", 224}, {"CIN", 3}, {"COUT", 8}, {"KERNEL_SIZE", 3}, {"STRIDES", 33}}, "STRIDES = 33");
}

TEST(BuiltinKernels, BadConfigsAreOneLineErrors) {
  const Json ok = {{"HW", 14}, {"CIN", 16}, {"COUT", 32}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}};
  auto with = [&](const char* key, Json v) {
    Json c = ok;
    c[key] = std::move(v);
    return c;
  };
  Json missing = ok;
  missing.erase("COUT");
  expect_rejected("conv-bn-relu", missing, "missing key COUT");
  expect_rejected("conv-bn-relu", with("CIN", 3.5), "CIN must be an integer");
  expect_rejected("conv-bn-relu", with("CIN", "16"), "CIN must be an integer");
  expect_rejected("conv-bn-relu", with("CIN", true), "CIN must be an integer");
  expect_rejected("conv-bn-relu", with("COUT", 0), "COUT = 0 is out of range");
  expect_rejected("conv-bn-relu", with("STRIDES", -1), "STRIDES = -1");
  expect_rejected("conv-bn-relu", with("HW", 0), "HW = 0");
  expect_rejected("conv-bn-relu", with("CIN", 10000000), "CIN = 10000000");
  expect_rejected("conv-bn-relu", with("KERNEL_SIZE", 21), "KERNEL_SIZE = 21 is larger than HW = 14");
  EXPECT_NO_THROW(suite_for("conv-bn-relu").kernel->build_onnx(with("KERNEL_SIZE", 20), 1));
  expect_rejected("conv-bn-relu", {{"HW", 2048}, {"CIN", 32768}, {"COUT", 32}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}},
                  "exceed");
  expect_rejected("gconv-bn-relu", ok, "missing key GROUPS");
  expect_rejected("gconv-bn-relu", with("GROUPS", 1), "GROUPS = 1 is out of range");
  expect_rejected("gconv-bn-relu", with("GROUPS", 3), "CIN and COUT must be multiples of GROUPS");
  expect_rejected("conv-bn-relu", ok, "BATCH_SIZE = 0", 0);
  expect_rejected("conv-bn-relu", Json::array({1, 2}), "expected a JSON object");
  expect_rejected("dwconv-bn", with("COUT", 8), "COUT must equal CIN");
  expect_rejected("maxpool", {{"HW", 7}, {"CIN", 4}, {"KERNEL_SIZE", 3}}, "missing key POOL_STRIDES");
  expect_rejected("channelshuffle", {{"HW", 7}, {"CIN", 5}}, "CIN must be a multiple of GROUPS (2 channel groups), got 5");
  expect_rejected("channelshuffle", {{"HW", 7}, {"CIN", 8}, {"GROUPS", 3}}, "CIN must be a multiple of GROUPS (3");
  expect_rejected("channelshuffle", {{"HW", 7}, {"CIN", 8}, {"GROUPS", 1}}, "GROUPS = 1 is out of range");
  expect_rejected("concat", {{"HW", 7}, {"CIN1", 4}, {"CIN2", 0}}, "CIN2 = 0");
  expect_rejected("concat", {{"HW", 7}, {"CIN1", 4}, {"CIN2", 4}, {"CIN3", 0}, {"CIN4", 2}}, "CIN3 is 0");
  expect_rejected("fc", {{"CIN", 4}}, "missing key COUT");
  expect_rejected("layernorm", {{"CIN", 4}}, "missing key T");
  expect_rejected("gelu", {{"T", 0}, {"CIN", 4}}, "T = 0 is out of range");
  expect_rejected("linear", {{"T", 70000}, {"CIN", 4}, {"COUT", 4}}, "T = 70000 is out of range");
  expect_rejected("linear", {{"T", 65536}, {"CIN", 32768}, {"COUT", 4}}, "exceed");
  expect_rejected("matmul", {{"B", 2}, {"M", 4}, {"K", 4}}, "missing key N");
  expect_rejected("matmul", {{"B", 65536}, {"M", 65536}, {"K", 4}, {"N", 4}}, "exceed");
  // An integral float is a valid integer (feature vectors round-trip through doubles).
  EXPECT_NO_THROW(suite_for("relu").kernel->build_onnx({{"HW", 7.0}, {"CIN", 4.0}}, 1));
}

}  // namespace
}  // namespace nnmeter
