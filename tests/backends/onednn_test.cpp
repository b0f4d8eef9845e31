// onednn_cpu against the plain reference interpreter: single ops on awkward shapes, every fusion the
// engine performs, the real CNN architectures, error paths, and the Backend interface.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "networks/architectures.h"
#include "backends/onednn/engine.h"
#include "backends/onednn/onednn_backend.h"
#include "networks/layers.h"
#include "backends/reference_runtime.h"
#include "common/io.h"
#include "support/test_support.h"
#include "nnmeter/registry.h"

namespace nnmeter::onednn {
namespace {

using networks::attr;
using networks::LayerBuilder;

std::vector<Tensor> inputs_for(const onnx::ModelProto& m, uint32_t seed = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<Tensor> out;
  for (const auto& in : m.graph().input()) {
    Tensor t{in.name(), {}, {}};
    for (const auto& d : in.type().tensor_type().shape().dim()) t.shape.push_back(d.dim_value());
    t.data.resize(static_cast<size_t>(numel(t.shape)));
    for (auto& v : t.data) v = dist(rng);
    out.push_back(std::move(t));
  }
  return out;
}

// Engine and reference agree within `rtol` of the output's largest magnitude, element by element.
void expect_matches_reference(const onnx::ModelProto& model, double rtol = 1e-4, int threads = 1) {
  const auto inputs = inputs_for(model);
  const auto ref = test::run_reference(model, inputs);
  Engine engine(load_graph(model, model.graph().name()), EngineOptions{threads});
  const auto got = engine.forward(inputs);
  ASSERT_EQ(got.size(), ref.size());
  for (const auto& t : got) {
    const auto& r = ref.at(t.name);
    ASSERT_EQ(t.shape, r.shape) << t.name;
    double scale = 1e-6;
    for (double v : r.data) scale = std::max(scale, std::fabs(v));
    double worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < r.data.size(); ++i) {
      const double err = std::fabs(t.data[i] - r.data[i]);
      if (!(err <= worst)) worst = err, at = i;
    }
    EXPECT_LE(worst, rtol * scale) << model.graph().name() << " output " << t.name << " element " << at << ": got "
                                   << t.data[at] << ", reference " << r.data[at];
  }
}

onnx::ModelProto one_output(LayerBuilder& b, const std::string& out) {
  b.output(out);
  return b.model();
}

TEST(OneDnnOps, ConvolutionVariantsOnAwkwardShapes) {
  struct Case { int64_t c, h, w, cout, k, s, pad, group, dil; bool bias; };
  const Case cases[] = {{5, 13, 11, 7, 3, 2, 1, 1, 1, true},   {6, 13, 11, 9, 3, 1, 1, 3, 1, false},
                        {8, 17, 9, 8, 5, 1, 4, 8, 2, true},    {3, 7, 7, 1, 1, 1, 0, 1, 1, false},
                        {16, 15, 15, 16, 3, 2, 0, 16, 1, true}, {4, 9, 12, 20, 7, 3, 2, 2, 1, true}};
  for (const auto& c : cases) {
    LayerBuilder b("conv", 13, 3);
    const auto x = b.input("x", {1, c.c, c.h, c.w});
    expect_matches_reference(one_output(b, b.conv(x, c.cout, c.k, c.s, c.pad, c.group, c.bias, c.dil)));
  }
}

TEST(OneDnnOps, AsymmetricPadsAndAutoPad) {
  LayerBuilder b("autopad", 13, 4);
  const auto x = b.input("x", {1, 3, 10, 9});
  const auto w = b.random_weights({4, 3, 3, 3}, 0.3f);
  const auto y = b.node("Conv", {x, w}, {1, 4, 5, 5}, {attr("auto_pad", std::string("SAME_UPPER")), attr("strides", std::vector<int64_t>{2, 2})});
  const auto onnx = one_output(b, y);
  // The reference reads explicit pads only; SAME_UPPER for 10x9, k3, s2 is pads (top 0, left 1, bottom 1, right 1).
  auto ref_model = onnx;
  auto* node = ref_model.mutable_graph()->mutable_node(0);
  node->clear_attribute();
  *node->add_attribute() = attr("pads", std::vector<int64_t>{0, 1, 1, 1});
  *node->add_attribute() = attr("strides", std::vector<int64_t>{2, 2});
  const auto inputs = inputs_for(onnx);
  Engine engine(load_graph(onnx, "autopad"), EngineOptions{1});
  const auto got = engine.forward(inputs);
  const auto ref = test::run_reference(ref_model, inputs).at(y);
  ASSERT_EQ(got[0].shape, ref.shape);
  for (size_t i = 0; i < ref.data.size(); ++i) EXPECT_NEAR(got[0].data[i], ref.data[i], 1e-4);
}

TEST(OneDnnOps, FusedActivationsMatchUnfusedReference) {
  using Act = std::string (LayerBuilder::*)(const std::string&);
  const std::vector<Act> acts = {&LayerBuilder::relu, &LayerBuilder::relu6, &LayerBuilder::sigmoid, &LayerBuilder::hardswish, &LayerBuilder::swish};
  for (size_t i = 0; i < acts.size(); ++i) {
    LayerBuilder b("act", 13, static_cast<uint32_t>(i));
    const auto x = b.input("x", {1, 6, 11, 13});
    const auto y = (b.*acts[i])(b.conv_batchnorm(x, 10, 3, 1));
    const auto model = one_output(b, (b.*acts[i])(b.conv_batchnorm(y, 10, 3, 2, 2)));
    expect_matches_reference(model);
    // Conv, BatchNormalization and the activation became one primitive each time.
    Engine engine(load_graph(model, "act"), EngineOptions{1});
    const Json plan = engine.plan();
    int convs = 0;
    for (const auto& s : plan["steps"]) convs += s["primitive"] == "convolution";
    EXPECT_EQ(convs, 2);
    EXPECT_EQ(plan["steps"].size() - plan["reorders"].get<size_t>(), 2u) << plan.dump(1);
  }
}

// A BatchNormalization that cannot fold into a conv (DenseNet's BN-ReLU-Conv, the bn/bnrelu kernels) runs
// as a depthwise 1x1 conv with its ReLU as a post-op, in plain and in a conv's layout alike.
TEST(OneDnnOps, StandaloneBatchNormRunsAsDepthwiseConv) {
  for (const bool after_pool : {false, true}) {
    LayerBuilder b("bn", 13, after_pool ? 7 : 8);
    std::string x = b.input("x", {1, 20, 9, 9});
    if (after_pool) x = b.maxpool(b.conv(x, 24, 1), 3, 1, 1);
    const auto model = one_output(b, b.relu(b.batchnorm(x)));
    expect_matches_reference(model);
    const Json plan = Engine(load_graph(model, "bn"), EngineOptions{1}).plan();
    int as_conv = 0;
    for (const auto& s : plan["steps"]) {
      EXPECT_NE(s["primitive"], "batch_normalization") << s.dump();
      EXPECT_NE(s["primitive"], "eltwise") << "the ReLU is a post-op: " << s.dump();
      as_conv += s.value("as", "") == "depthwise 1x1 convolution";
    }
    EXPECT_EQ(as_conv, 1) << plan.dump(1);
  }
}

TEST(OneDnnOps, ResidualAdditionBecomesSumPostOp) {
  LayerBuilder b("residual", 13, 5);
  const auto x = b.input("x", {1, 16, 14, 14});
  const auto a = b.relu(b.conv_batchnorm(x, 16, 3));
  const auto y = b.relu(b.add(b.conv_batchnorm(a, 16, 3), a));
  const auto z = b.relu(b.add(x, b.conv_batchnorm(y, 16, 1)));  // residual is a graph input: copied, not overwritten
  const auto model = one_output(b, z);
  expect_matches_reference(model);
  Engine engine(load_graph(model, "residual"), EngineOptions{1});
  const Json plan = engine.plan();
  int binaries = 0;
  for (const auto& s : plan["steps"]) binaries += s["primitive"] == "binary";
  EXPECT_EQ(binaries, 0) << plan.dump(1);
  // Running twice gives the same answer: nothing a later run reads was overwritten in place.
  const auto in = inputs_for(model);
  EXPECT_EQ(engine.forward(in)[0].data, engine.forward(in)[0].data);
}

TEST(OneDnnOps, PoolingWithCeilModeAndPadding) {
  LayerBuilder b("pool", 13, 6);
  const auto x = b.input("x", {1, 5, 14, 13});
  const auto m = b.maxpool(x, 3, 2, 1, true);
  const auto a = b.avgpool(x, 3, 2, 1, true, true);
  const auto e = b.avgpool(x, 2, 2, 1, false, false);
  b.output(m);
  b.output(a);
  b.output(e);
  b.output(b.global_avgpool(x));
  b.output(b.reduce_mean_hw(x, false));
  expect_matches_reference(b.model());
}

TEST(OneDnnOps, BroadcastBinariesInBothOperandOrders) {
  LayerBuilder b("binary", 13, 7);
  const auto x = b.input("x", {1, 6, 5, 7});
  const auto s = b.input("s", {1, 6, 1, 1});
  const auto v = b.input("v", {7});
  b.output(b.mul(s, x));
  b.output(b.node("Sub", {v, x}, {1, 6, 5, 7}));
  b.output(b.node("Div", {x, b.node("Add", {s, b.constant_floats({}, {3.f})}, {1, 6, 1, 1})}, {1, 6, 5, 7}));
  b.output(b.node("Add", {s, v}, {1, 6, 1, 7}));  // neither operand has the output shape
  expect_matches_reference(b.model());
}

TEST(OneDnnOps, LayoutOpsAndFoldedShapeSubgraphs) {
  LayerBuilder b("layout", 13, 8);
  const auto x = b.input("x", {1, 12, 7, 5});
  const auto c = b.conv_bn(x, 12, 3);  // blocked or NHWC output feeding plain-layout ops
  const auto parts = b.split(c, {5, 7});
  b.output(b.concat({parts[1], b.channel_shuffle(c, 3), parts[0]}));
  b.output(b.softmax(b.gemm(b.flatten(c), 10)));
  b.output(b.node("Pad", {c, b.constant_ints({0, 1, 2, 0, 0, 0, 1, 3}), b.constant_floats({}, {0.5f})}, {1, 13, 10, 8}));
  b.output(b.node("Transpose", {c}, {1, 5, 7, 12}, {attr("perm", std::vector<int64_t>{0, 3, 2, 1})}));
  expect_matches_reference(b.model());
}

// The one-line error loading and compiling the model gives, "" when it loads.
std::string load_error(const onnx::ModelProto& m) {
  try {
    Engine engine(load_graph(m, "bad.onnx"), EngineOptions{1});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------------------------------------------
// Transformer exports: the ops and patterns torch.onnx.export writes for LayerNorm, GELU and attention.

// Steps of the plan by primitive, reorders not counted.
std::map<std::string, int> primitives(const Json& plan) {
  std::map<std::string, int> out;
  for (const auto& s : plan["steps"])
    if (s["primitive"] != "reorder") ++out[s["primitive"].get<std::string>()];
  return out;
}

std::string scalar(LayerBuilder& b, float v) { return b.constant_floats({}, {v}); }

// nn.LayerNorm over the trailing `dims` axes as PyTorch exports it before opset 17.
std::string layer_norm_chain(LayerBuilder& b, const std::string& x, size_t dims, bool affine, float eps = 1e-5f) {
  const Shape& xs = b.shape(x);
  std::vector<int64_t> axes;
  for (size_t i = dims; i > 0; --i) axes.push_back(-static_cast<int64_t>(i));
  Shape kept = xs;
  for (size_t i = xs.size() - dims; i < xs.size(); ++i) kept[i] = 1;
  const Shape normalized(xs.end() - static_cast<long>(dims), xs.end());
  const auto mean = b.node("ReduceMean", {x}, kept, {attr("axes", axes)});
  const auto centred = b.node("Sub", {x, mean}, xs);
  const auto var = b.node("ReduceMean", {b.node("Pow", {centred, scalar(b, 2.f)}, xs)}, kept, {attr("axes", axes)});
  const auto std = b.node("Sqrt", {b.node("Add", {var, scalar(b, eps)}, kept)}, kept);
  auto y = b.node("Div", {centred, std}, xs);
  if (!affine) return y;
  y = b.node("Mul", {y, b.random_weights(normalized, 0.5f)}, xs);
  return b.node("Add", {y, b.random_weights(normalized, 0.5f)}, xs);
}

// nn.GELU() as PyTorch exports it: x * 0.5 * (1 + erf(x / sqrt(2))).
std::string gelu_chain(LayerBuilder& b, const std::string& x) {
  const Shape& xs = b.shape(x);
  const auto e = b.node("Erf", {b.node("Div", {x, scalar(b, std::sqrt(2.f))}, xs)}, xs);
  const auto m = b.node("Mul", {x, b.node("Add", {e, scalar(b, 1.f)}, xs)}, xs);
  return b.node("Mul", {m, scalar(b, 0.5f)}, xs);
}

// nn.GELU(approximate='tanh') as PyTorch exports it: x · 0.5 · (1 + tanh(√(2/π) · (x + 0.044715 · x³))).
std::string gelu_tanh_chain(LayerBuilder& b, const std::string& x) {
  const Shape& xs = b.shape(x);
  const auto cube = b.node("Mul", {x, b.node("Mul", {x, x}, xs)}, xs);
  const auto inner = b.node("Add", {x, b.node("Mul", {scalar(b, 0.044715f), cube}, xs)}, xs);
  const auto t = b.node("Tanh", {b.node("Mul", {scalar(b, 0.7978845608f), inner}, xs)}, xs);
  const auto m = b.node("Mul", {x, b.node("Add", {scalar(b, 1.f), t}, xs)}, xs);
  return b.node("Mul", {scalar(b, 0.5f), m}, xs);
}

// nn.Linear on the last axis: MatMul by the weight, then the bias added.
std::string linear(LayerBuilder& b, const std::string& x, int64_t out) {
  Shape ys = b.shape(x);
  const int64_t in = ys.back();
  ys.back() = out;
  return b.node("Add", {b.random_weights({out}, 0.1f), b.node("MatMul", {x, b.random_weights({in, out}, 0.3f)}, ys)}, ys);
}

TEST(OneDnnOps, LayerNormalizationOverTrailingAxes) {
  LayerBuilder b("layernorm", 17, 21);
  const auto x = b.input("x", {2, 5, 6});
  const auto t = b.input("t", {1, 3, 4, 5});
  b.output(b.node("LayerNormalization", {x, b.random_weights({6}, 0.5f), b.random_weights({6}, 0.5f)}, {2, 5, 6}));
  b.output(b.node("LayerNormalization", {x, b.random_weights({5, 6}, 0.5f)}, {2, 5, 6}, {attr("axis", int64_t{1})}));
  b.output(b.node("LayerNormalization", {t, b.random_weights({5}, 0.5f), b.random_weights({4, 5}, 0.5f)}, {1, 3, 4, 5},
                  {attr("axis", int64_t{-2}), attr("epsilon", 1e-3f)}));
  const auto model = b.model();
  expect_matches_reference(model);
  EXPECT_EQ(primitives(Engine(load_graph(model, "layernorm"), EngineOptions{1}).plan())["layer_normalization"], 3);
}

TEST(OneDnnOps, PowWithAConstantExponent) {
  LayerBuilder b("pow", 13, 22);
  const auto x = b.input("x", {2, 3, 7});
  const auto y = b.input("y", {2, 3, 7});
  b.output(b.node("Pow", {x, scalar(b, 3.f)}, {2, 3, 7}));
  // The exponent as a tensor of one repeated value; the base folded from constants (Pow of two constants).
  const auto two = b.constant_floats({1, 1, 7}, std::vector<float>(7, 2.f));
  const auto folded = b.node("Pow", {b.constant_floats({7}, {1, 2, 3, 4, 5, 6, 7}), scalar(b, 0.5f)}, {7});
  b.output(b.node("Add", {b.node("Pow", {b.node("Add", {x, y}, {2, 3, 7}), two}, {2, 3, 7}), folded}, {2, 3, 7}));
  const auto model = b.model();
  expect_matches_reference(model);
  // The square runs inside the Add before it; the folded Pow is no step at all.
  const Json plan = Engine(load_graph(model, "pow"), EngineOptions{1}).plan();
  int pow_post_ops = 0;
  for (const auto& s : plan["steps"])
    for (const auto& p : s.value("post_ops", Json::array())) pow_post_ops += p == "pow";
  EXPECT_EQ(pow_post_ops, 1) << plan.dump(1);
  EXPECT_EQ(primitives(plan), (std::map<std::string, int>{{"binary", 2}, {"eltwise", 1}})) << plan.dump(1);
}

// A GELU chain alone runs as one eltwise step, and behind a Linear as a post-op of its matmul, which took the
// bias Add too; no step is left for the chain's own ops (`marker`, Erf or Tanh) nor for a bias.
void expect_gelu_runs_as_one_step(std::string (*chain)(LayerBuilder&, const std::string&), const std::string& marker,
                                  const std::string& post_op, uint32_t seed) {
  LayerBuilder b(post_op, 13, seed);
  const auto x = b.input("x", {1, 9, 16});
  b.output(chain(b, x));
  b.output(linear(b, chain(b, linear(b, x, 32)), 16));
  const auto model = b.model();
  expect_matches_reference(model);
  const Json plan = Engine(load_graph(model, post_op), EngineOptions{1}).plan();
  int gelu = 0;
  for (const auto& s : plan["steps"]) {
    EXPECT_NE(s["op"], marker) << s.dump();
    gelu += s.value("as", "") == "GELU";
    for (const auto& p : s.value("post_ops", Json::array())) gelu += p == post_op;
  }
  EXPECT_EQ(gelu, 2) << plan.dump(1);
  EXPECT_EQ(primitives(plan), (std::map<std::string, int>{{"eltwise", 1}, {"matmul", 2}})) << plan.dump(1);
}

TEST(OneDnnOps, GeluChainRunsAsOneGeluStep) { expect_gelu_runs_as_one_step(gelu_chain, "Erf", "gelu_erf", 23); }

TEST(OneDnnOps, TanhGeluChainRunsAsOneGeluStep) {
  expect_gelu_runs_as_one_step(gelu_tanh_chain, "Tanh", "gelu_tanh", 27);
}

TEST(OneDnnOps, LayerNormPatternRunsAsOneLayerNormalization) {
  LayerBuilder b("layernorm_chain", 13, 24);
  const auto x = b.input("x", {1, 7, 16});
  const auto c = b.input("c", {1, 8, 5, 5});
  b.output(layer_norm_chain(b, x, 1, true));
  b.output(layer_norm_chain(b, x, 2, false, 1e-6f));
  // ConvNeXt's LayerNorm over channels: permuted to channels-last and back.
  const auto last = b.node("Transpose", {c}, {1, 5, 5, 8}, {attr("perm", std::vector<int64_t>{0, 2, 3, 1})});
  b.output(b.node("Transpose", {layer_norm_chain(b, last, 1, true)}, {1, 8, 5, 5}, {attr("perm", std::vector<int64_t>{0, 3, 1, 2})}));
  const auto model = b.model();
  expect_matches_reference(model);
  const Json plan = Engine(load_graph(model, "layernorm_chain"), EngineOptions{1}).plan();
  const auto steps = primitives(plan);
  EXPECT_EQ(steps.at("layer_normalization"), 3) << plan.dump(1);
  EXPECT_EQ(steps.count("reduction") + steps.count("binary") + steps.count("eltwise"), 0u) << plan.dump(1);
}

// What is not exactly LayerNorm or GELU runs op by op, and still right.
TEST(OneDnnOps, NearMissPatternsRunUnfused) {
  LayerBuilder b("near_miss", 13, 25);
  const auto x = b.input("x", {1, 6, 10});
  const Shape xs{1, 6, 10}, kept{1, 6, 1};
  const auto mean = b.node("ReduceMean", {x}, kept, {attr("axes", std::vector<int64_t>{-1})});
  const auto centred = b.node("Sub", {x, mean}, xs);
  const auto cube = b.node("ReduceMean", {b.node("Pow", {centred, scalar(b, 3.f)}, xs)}, kept, {attr("axes", std::vector<int64_t>{-1})});
  b.output(b.node("Div", {centred, b.node("Sqrt", {b.node("Add", {b.node("Mul", {cube, cube}, kept), scalar(b, 1e-5f)}, kept)}, kept)}, xs));
  expect_matches_reference(b.model());
  LayerBuilder g("near_miss_gelu", 13, 26);
  const auto gx = g.input("x", xs);
  const auto e = g.node("Erf", {g.node("Div", {gx, scalar(g, 2.f)}, xs)}, xs);  // x/2, not x/sqrt(2)
  g.output(g.node("Mul", {g.node("Mul", {gx, g.node("Add", {e, scalar(g, 1.f)}, xs)}, xs), scalar(g, 0.5f)}, xs));
  EXPECT_NE(load_error(g.model()).find("Erf node"), std::string::npos);
}

// A Linear's bias Add folds into its matmul; a vector weight, which drops the output's last axis, keeps its Add
// as a step of its own, and both still compute what the reference does.
TEST(OneDnnOps, LinearBiasFoldsIntoItsMatmulButNotBehindAVectorWeight) {
  LayerBuilder b("bias", 13, 28);
  const auto x = b.input("x", {1, 6, 8});
  b.output(linear(b, x, 4));
  b.output(b.node("Add", {b.node("MatMul", {x, b.random_weights({8}, 0.3f)}, {1, 6}), b.random_weights({6}, 0.1f)}, {1, 6}));
  const auto model = b.model();
  expect_matches_reference(model);
  const Json plan = Engine(load_graph(model, "bias"), EngineOptions{1}).plan();
  EXPECT_EQ(primitives(plan), (std::map<std::string, int>{{"binary", 1}, {"matmul", 2}})) << plan.dump(1);
}

// nn.MultiheadAttention's projections run sequence-first: [T, 1, C] by a constant [C, 3C]. That is one
// product of T rows, not T products of one row each.
TEST(OneDnnOps, ALinearOverLeadingAxesIsOneMatrixProduct) {
  LayerBuilder b("seq_first", 13, 29);
  const auto x = b.input("x", {1, 10, 16});
  const auto seq = b.node("Transpose", {x}, {10, 1, 16}, {attr("perm", std::vector<int64_t>{1, 0, 2})});
  b.output(linear(b, seq, 48));
  const auto model = b.model();
  expect_matches_reference(model);
  const Json plan = Engine(load_graph(model, "seq_first"), EngineOptions{1}).plan();
  std::vector<Json> matmuls;
  for (const auto& s : plan["steps"])
    if (s["primitive"] == "matmul") matmuls.push_back(s["src_dims"]);
  EXPECT_EQ(matmuls, std::vector<Json>{Json::array({10, 16})}) << plan.dump(1);
}

// A ViT's tokens: the patches transposed to [1, T, C] behind a class token, and nn.MultiheadAttention's
// [1, T, C] → [T, 1, C] → [1, T, C] round trip before the residual Add. Those layouts order only a dimension of
// size 1 differently from row-major; oneDNN ran such a concat and Add in its reference code (impl "ref:any"),
// at a hundred times the cost.
TEST(OneDnnOps, TokenLayoutsThatDifferOnlyInUnitDimensionsRunOptimized) {
  LayerBuilder b("tokens", 13, 30);
  const auto patches = b.input("x", {1, 16, 10});
  const auto t = b.node("Transpose", {patches}, {1, 10, 16}, {attr("perm", std::vector<int64_t>{0, 2, 1})});
  const auto tokens = b.concat({b.random_weights({1, 1, 16}, 1.f), t}, 1);
  const auto seq = b.node("Transpose", {tokens}, {11, 1, 16}, {attr("perm", std::vector<int64_t>{1, 0, 2})});
  const auto back = b.node("Transpose", {linear(b, seq, 16)}, {1, 11, 16}, {attr("perm", std::vector<int64_t>{1, 0, 2})});
  b.output(b.add(back, tokens));
  const auto model = b.model();
  expect_matches_reference(model);
  const Json plan = Engine(load_graph(model, "tokens"), EngineOptions{1}).plan();
  for (const auto& s : plan["steps"]) {
    if (s["primitive"] != "reorder") {
      EXPECT_EQ(s["impl"].get<std::string>().rfind("ref", 0), std::string::npos) << s.dump();
    }
  }
}

// RegNetY's squeeze-and-excitation after a grouped conv: the conv's output is blocked, the SE scale [1, C, 1, 1]
// channels-last. Named as it is, oneDNN ran the multiply in its reference code (impl "ref:any", 42 ms against
// 0.05 ms for 48 x 56 x 56), and torchvision's RegNetY-400MF measured 37 ms where RegNetX-400MF takes 5.
TEST(OneDnnOps, SqueezeExcitationAfterAGroupedConvRunsOptimized) {
  LayerBuilder b("regnet_y_se", 13, 31);
  const auto x = b.relu(b.conv(b.input("x", {1, 48, 28, 28}), 48, 3, 1, -1, 6, true));
  const auto scale = b.sigmoid(b.conv(b.relu(b.conv(b.global_avgpool(x), 12, 1, 1, -1, 1, true)), 48, 1, 1, -1, 1, true));
  b.output(b.mul(x, scale));
  const auto model = b.model();
  expect_matches_reference(model);
  const Json plan = Engine(load_graph(model, "regnet_y_se"), EngineOptions{1}).plan();
  int binaries = 0;
  for (const auto& s : plan["steps"]) {
    if (s["primitive"] == "reorder") continue;
    binaries += s["primitive"] == "binary";
    EXPECT_EQ(s["impl"].get<std::string>().rfind("ref", 0), std::string::npos) << s.dump();
  }
  EXPECT_EQ(binaries, 1);
}

// Scaled dot-product attention as nn.MultiheadAttention exports it: both MatMul operands at run time.
TEST(OneDnnOps, AttentionWithRuntimeMatMuls) {
  LayerBuilder b("attention", 13, 26);
  const auto x = b.input("x", {1, 10, 16});
  auto heads = [&](const std::string& t) {
    const auto r = b.node("Reshape", {linear(b, t, 16), b.constant_ints({1, 10, 2, 8})}, {1, 10, 2, 8});
    return b.node("Transpose", {r}, {1, 2, 10, 8}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
  };
  const auto q = heads(x), k = heads(x), v = heads(x);
  const auto kt = b.node("Transpose", {k}, {1, 2, 8, 10}, {attr("perm", std::vector<int64_t>{0, 1, 3, 2})});
  const auto scores = b.node("Div", {b.node("MatMul", {q, kt}, {1, 2, 10, 10}), scalar(b, std::sqrt(8.f))}, {1, 2, 10, 10});
  const auto ctx = b.node("MatMul", {b.softmax(scores), v}, {1, 2, 10, 8});
  const auto merged = b.node("Transpose", {ctx}, {1, 10, 2, 8}, {attr("perm", std::vector<int64_t>{0, 2, 1, 3})});
  b.output(layer_norm_chain(b, b.node("Add", {x, b.node("Reshape", {merged, b.constant_ints({1, 10, 16})}, {1, 10, 16})}, {1, 10, 16}), 1, true));
  b.output(b.softmax(linear(b, x, 16), 1));  // Softmax over a middle axis
  const auto model = b.model();
  expect_matches_reference(model, 1e-4);
}

// Reorders in the plan that are not edge reorders, by the first word of their reason.
std::map<std::string, int> inner_reorders(const Json& plan) {
  std::map<std::string, int> out;
  for (const auto& s : plan["steps"]) {
    if (s["primitive"] != "reorder" || s.contains("edge")) continue;
    const auto why = s["why"].get<std::string>();
    ++out[why.substr(0, why.find(' '))];
  }
  return out;
}

TEST(OneDnnOps, ShuffleUnitStaysInTheConvLayout) {
  // ShuffleNetV2's unit: split, branch, concat, channel shuffle, then the next unit's split.
  LayerBuilder b("shuffle", 13, 10);
  const auto x = b.input("x", {1, 48, 9, 11});
  const auto c = b.relu(b.conv_bn(x, 116, 1));
  const auto halves = b.split(c, {58, 58});
  const auto branch = b.relu(b.conv_bn(b.conv_bn(b.relu(b.conv_bn(halves[1], 58, 1)), 58, 3, 1, 58), 58, 1));
  const auto shuffled = b.channel_shuffle(b.concat({halves[0], branch}), 2);
  const auto next = b.split(shuffled, {58, 58});
  b.output(b.concat({next[0], b.relu(b.conv_bn(next[1], 58, 1))}));
  const auto model = b.model();
  expect_matches_reference(model);
  const Json plan = Engine(load_graph(model, "shuffle"), EngineOptions{1}).plan();
  for (const auto& s : plan["steps"])
    if (s["primitive"] == "concat") {
      EXPECT_NE(s["impl"].get<std::string>().rfind("ref", 0), 0u) << s.dump();
    }
  // Whatever layout the convs chose, data moves only where the network moves it: concat, shuffle and
  // the next split are one reorder per (part, output) straight into place; only the first split copies.
  auto moves = inner_reorders(plan);
  EXPECT_EQ(moves["shuffle"], 4) << plan.dump(1);
  EXPECT_EQ(moves["transpose"], 0) << plan.dump(1);
  EXPECT_EQ(moves["split"], 2) << plan.dump(1);
  EXPECT_EQ(moves["layout"], 0) << plan.dump(1);
}

TEST(OneDnnOps, ConcatOfMixedLayoutsWritesEachInputOnce) {
  LayerBuilder b("mixed_concat", 13, 11);
  const auto x = b.input("x", {1, 16, 10, 10});
  const auto plain = b.input("p", {1, 24, 10, 10});
  b.output(b.concat({b.relu(b.conv_bn(x, 32, 3)), plain, b.conv_bn(x, 8, 1), b.maxpool(x, 3, 1, 1)}));
  const auto model = b.model();
  expect_matches_reference(model);
  const Json plan = Engine(load_graph(model, "mixed_concat"), EngineOptions{1}).plan();
  int concats = 0;
  for (const auto& s : plan["steps"]) {
    if (s["primitive"] != "concat") continue;
    ++concats;
    EXPECT_NE(s["impl"].get<std::string>().rfind("ref", 0), 0u) << s.dump();
  }
  // One fast concat when the layouts agree, else one reorder per input into its slice of the output.
  auto moves = inner_reorders(plan);
  EXPECT_TRUE(concats == 1 ? moves["concat"] == 0 : moves["concat"] == 4) << plan.dump(1);
  EXPECT_EQ(moves["layout"], 0) << plan.dump(1);
}

// torch.cat([x]) and a Pad of nothing (DenseNet's block openings and transitions as torch.onnx.export writes
// them) copy nothing: detection counts them as layout ops.
TEST(OneDnnOps, AConcatOfOneTensorAndAPadOfNothingAreTheirInput) {
  LayerBuilder b("one_concat", 13, 12);
  const auto x = b.input("x", {1, 16, 10, 10});
  const auto cat = b.concat({b.conv_bn(x, 24, 3)});
  const auto pad = b.node("Pad", {cat, b.constant_ints({0, 0, 0, 0, 0, 0, 0, 0})}, {1, 24, 10, 10});
  b.output(b.relu(pad));
  const auto model = b.model();
  expect_matches_reference(model);
  const Json plan = Engine(load_graph(model, "one_concat"), EngineOptions{1}).plan(Pipeline::Profiling);
  for (const auto& s : plan["steps"]) EXPECT_NE(s["primitive"], "concat") << plan.dump(1);
  const auto moves = inner_reorders(plan);
  EXPECT_EQ(moves.count("concat"), 0u) << plan.dump(1);
  EXPECT_EQ(moves.count("pad"), 0u) << plan.dump(1);
}

TEST(OneDnnOps, TwoThreadsGiveTheSameAnswer) {
  LayerBuilder b("threads", 13, 9);
  const auto x = b.input("x", {1, 8, 23, 19});
  expect_matches_reference(one_output(b, b.relu(b.conv_bn(b.relu(b.conv_bn(x, 24, 3, 2)), 24, 3, 1, 24))), 1e-4, 2);
}

class ZooModels : public ::testing::TestWithParam<std::string> {};

TEST_P(ZooModels, MatchPlainReference) {
  // 64x64 keeps the reference interpreter quick; every layer type and fusion still occurs.
  const auto m = networks::build(GetParam(), 64);
  EXPECT_GT(m.flops, 1e6);
  expect_matches_reference(m.model, 1e-3);
}

INSTANTIATE_TEST_SUITE_P(OneDnn, ZooModels, ::testing::ValuesIn(networks::architectures()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ZooWidths, NarrowerNetworksStayConsistentAndCostLess) {
  // The width multiplier must keep every residual add, SE multiply, split and concat shape-consistent.
  for (const std::string name : {"mobilenet_v2", "mobilenet_v3_large", "shufflenet_v2_x1_0", "efficientnet_b0",
                                 "resnet50", "densenet121", "googlenet"}) {
    const auto half = networks::build(name, 64, 0.5);
    const auto full = networks::build(name, 64, 1.0);
    EXPECT_LT(half.flops, 0.6 * full.flops) << name;
    expect_matches_reference(half.model, 1e-3);
  }
  EXPECT_THROW(networks::build("resnet18", 64, 0.0), Error);
}

// ---------------------------------------------------------------------------------------------------
// Errors: one line naming the op, the node and the attribute; never a crash.

TEST(OneDnnErrors, UnsupportedOpNamesOpAndNode) {
  LayerBuilder b("bad", 13, 1);
  const auto x = b.input("x", {1, 3, 4, 4});
  const auto y = b.node("LpNormalization", {x}, {1, 3, 4, 4});
  const auto msg = load_error(one_output(b, y));
  EXPECT_NE(msg.find("LpNormalization"), std::string::npos) << msg;
  EXPECT_NE(msg.find("node '" + b.model().graph().node(0).name() + "'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(OneDnnErrors, UnsupportedAttributeNamesIt) {
  LayerBuilder b("bad", 13, 1);
  const auto x = b.input("x", {1, 3, 4, 4});
  const auto y = b.node("Pad", {x, b.constant_ints({0, 0, 1, 1, 0, 0, 1, 1})}, {1, 3, 6, 6}, {attr("mode", std::string("reflect"))});
  const auto msg = load_error(one_output(b, y));
  EXPECT_NE(msg.find("'mode'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Pad node"), std::string::npos) << msg;
}

TEST(OneDnnErrors, RuntimeWeightsAndBadShapesAreRejected) {
  LayerBuilder b("bad", 13, 1);
  const auto x = b.input("x", {1, 3, 4, 4});
  const auto w = b.input("w", {2, 3, 1, 1});
  EXPECT_NE(load_error(one_output(b, b.node("Conv", {x, w}, {1, 2, 4, 4}))).find("load-time constant"), std::string::npos);
  LayerBuilder c("bad", 13, 1);
  const auto y = c.input("x", {1, 3, 4, 4});
  EXPECT_NE(load_error(one_output(c, c.node("Reshape", {y, c.constant_ints({5, -1})}, {5, 1}))).find("shape"), std::string::npos);
}

// Bad transformer inputs: one line naming the node, no crash.
TEST(OneDnnErrors, TransformerOpsRefuseBadInputs) {
  auto expect_error = [](const onnx::ModelProto& m, const std::string& node, std::vector<std::string> words) {
    const auto msg = load_error(m);
    EXPECT_NE(msg.find(node), std::string::npos) << msg;
    for (const auto& w : words) EXPECT_NE(msg.find(w), std::string::npos) << w << " in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  };
  {
    LayerBuilder b("bad", 13, 1);
    const auto y = b.node("MatMul", {b.input("a", {2, 3, 4}), b.input("b", {2, 5, 6})}, {2, 3, 6});
    expect_error(one_output(b, y), "MatMul node '" + b.model().graph().node(0).name() + "'", {"inner dimensions"});
  }
  {
    LayerBuilder b("bad", 17, 1);
    const auto x = b.input("x", {2, 3});
    const auto y = b.node("LayerNormalization", {x, b.random_weights({3}, 1.f)}, {2, 3}, {attr("axis", int64_t{2})});
    expect_error(one_output(b, y), "LayerNormalization node", {"'axis'", "out of range"});
  }
  for (const char* op : {"Softmax", "LayerNormalization"}) {
    LayerBuilder b("bad", 17, 1);
    const auto x = b.input("x", {3, 0});
    std::vector<std::string> in{x};
    if (std::string(op) == "LayerNormalization") in.push_back(b.constant_floats({0}, {}));
    expect_error(one_output(b, b.node(op, in, {3, 0})), std::string(op) + " node", {"zero elements"});
  }
  {
    LayerBuilder b("bad", 13, 1);
    const auto y = b.node("Pow", {b.input("x", {2, 3}), b.input("e", {})}, {2, 3});
    expect_error(one_output(b, y), "Pow node", {"input 1", "load-time constant"});
  }
  {
    LayerBuilder b("bad", 13, 1);
    const auto y = b.node("Pow", {b.input("x", {2, 3}), b.constant_floats({3}, {1, 2, 3})}, {2, 3});
    expect_error(one_output(b, y), "Pow node", {"scalar power"});
  }
  {
    LayerBuilder b("bad", 13, 1);
    const auto y = b.node("Erf", {b.input("x", {2, 3})}, {2, 3});
    expect_error(one_output(b, y), "Erf node", {"GELU"});
  }
}

TEST(OneDnnErrors, MalformedFilesGiveOneLineErrors) {
  test::TempDir dir;
  io::write_file_atomic(dir / "junk.onnx", std::string("\x08\x01\x12\xff\xff garbage", 13));
  EXPECT_THROW(load_graph(dir / "junk.onnx"), Error);
  EXPECT_THROW(load_graph(dir / "missing.onnx"), Error);
  onnx::ModelProto empty;
  EXPECT_THROW(load_graph(empty, "empty.onnx"), Error);
}

TEST(OneDnnErrors, WrongInputsAreReported) {
  LayerBuilder b("inputs", 13, 1);
  const auto x = b.input("x", {1, 3, 4, 4});
  Engine engine(load_graph(one_output(b, b.relu(x)), "inputs"), EngineOptions{1});
  EXPECT_THROW(engine.forward({}), Error);
  EXPECT_THROW(engine.forward({Tensor{"x", {1, 3, 4, 5}, std::vector<float>(60)}}), Error);
  EXPECT_THROW(engine.forward({Tensor{"x", {1, 3, 4, 4}, std::vector<float>(48)}, Tensor{"z", {1}, {0.f}}}), Error);
}

// ---------------------------------------------------------------------------------------------------
// The Backend interface

std::unique_ptr<Backend> make_backend(Json config = Json::object()) {
  const auto info = backend_info();
  return info.create(resolve_backend_config(info.params, config, "test"));
}

TEST(OneDnnBackend, IsTheBuiltinWithDeclaredParams) {
  const auto infos = builtin_backends();
  ASSERT_FALSE(infos.empty());
  EXPECT_EQ(infos[0].name, "onednn_cpu");
  EXPECT_FALSE(infos[0].customized);
  const auto yaml = default_backend_config_yaml(infos[0].params);
  for (const char* key : {"NUM_THREADS", "ISA", "WARMUP_RUNS", "NUM_RUNS", "NUM_ROUNDS", "MIN_TIME_MS"})
    EXPECT_NE(yaml.find(key), std::string::npos) << key;
  EXPECT_THROW(resolve_backend_config(infos[0].params, Json{{"NUM_THREAD", 1}}, "x.yaml"), Error);
  EXPECT_THROW(resolve_backend_config(infos[0].params, Json{{"NUM_THREADS", "two"}}, "x.yaml"), Error);
  EXPECT_EQ(check_env_line(infos[0]), "onednn_cpu:\t" + dnnl_version());
}

TEST(OneDnnBackend, ConvertRunAndProfile) {
  test::TempDir dir;
  const auto m = networks::build("mobilenet_v2", 64);
  io::write_file_atomic(dir / "mnv2.onnx", m.model.SerializeAsString());
  auto backend = make_backend({{"NUM_RUNS", 3}, {"NUM_ROUNDS", 2}, {"WARMUP_RUNS", 1}, {"MIN_TIME_MS", 0.0}});
  const auto files = backend->to_backend(dir / "mnv2.onnx", dir / "work", "converted");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].filename(), "converted.onnx");
  const Json plan = io::load_json_file(files[1]);
  EXPECT_EQ(plan["format"], "nnmeter-onednn-plan");
  EXPECT_GT(plan["primitives"].get<int>(), 10);
  // The converted model is standalone ONNX: it loads again with the same answer.
  const auto inputs = inputs_for(m.model);
  const auto expected = Engine(load_graph(dir / "mnv2.onnx"), EngineOptions{1}).forward(inputs);
  EXPECT_EQ(backend->build_wrapper(files)->forward(inputs)[0].data, expected[0].data);
  const auto stats = backend->profile(files);
  EXPECT_EQ(stats.count, 2);
  EXPECT_GT(stats.median, 0);
  EXPECT_LE(stats.min, stats.median);
  EXPECT_THROW(backend->build_wrapper({dir / "nothing.txt"}), Error);
}

// The kernel count the rule tester asks for: primitives of the timed run, reorders not counted, fused
// post-ops inside their primitive.
TEST(OneDnnBackend, KernelCountComesFromThePlan) {
  test::TempDir dir;
  auto backend = make_backend(Json::object());
  auto count = [&](const std::string& name, auto&& build) {
    LayerBuilder b(name, 13, 5);
    const auto x = b.input("x", {1, 32, 14, 14});
    io::write_file_atomic(dir / (name + ".onnx"), one_output(b, build(b, x)).SerializeAsString());
    return backend->kernel_count(backend->to_backend(dir / (name + ".onnx"), dir / "work", name));
  };
  EXPECT_EQ(count("dw", [](LayerBuilder& b, const std::string& x) { return b.conv(x, 32, 3, 1, -1, 32); }), 1);
  EXPECT_EQ(count("relu", [](LayerBuilder& b, const std::string& x) { return b.relu(x); }), 1);
  EXPECT_EQ(count("dw_relu", [](LayerBuilder& b, const std::string& x) { return b.relu(b.conv(x, 32, 3, 1, -1, 32)); }), 1);
  EXPECT_EQ(count("relu_dw", [](LayerBuilder& b, const std::string& x) { return b.conv(b.relu(x), 32, 3, 1, -1, 32); }), 2);
  EXPECT_EQ(backend->kernel_count({dir / "dw.onnx"}), std::nullopt) << "no plan: the backend cannot tell";
}

// Model names with dots (widths: "_w1.4" next to "_w1") keep their own converted files.
TEST(OneDnnBackend, ConvertedFileNamesKeepDotsOfTheModelName) {
  test::TempDir dir;
  auto backend = make_backend(Json::object());
  std::vector<std::vector<fs::path>> converted;
  for (const int channels : {8, 16}) {
    LayerBuilder b("m", 13, 5);
    const auto x = b.input("x", {1, channels, 8, 8});
    io::write_file_atomic(dir / "m.onnx", one_output(b, b.relu(x)).SerializeAsString());
    converted.push_back(backend->to_backend(dir / "m.onnx", dir / "work", channels == 8 ? "net_w1" : "net_w1.4"));
  }
  EXPECT_EQ(converted[0][0].filename(), "net_w1.onnx");
  EXPECT_EQ(converted[1][0].filename(), "net_w1.4.onnx");
  EXPECT_EQ(converted[1][1].filename(), "net_w1.4.plan.json");
  const auto wrapper = backend->build_wrapper(converted[0]);
  const auto out = wrapper->forward({Tensor{"x", {1, 8, 8, 8}, std::vector<float>(512, 1.f)}});
  EXPECT_EQ(out.at(0).shape, (Shape{1, 8, 8, 8})) << "the w1 files were overwritten by the w1.4 model";
  EXPECT_EQ(backend->to_backend(dir / "m.onnx", dir / "work", "plain.onnx")[0].filename(), "plain.onnx");
}

// A kernel model is profiled as it runs inside a network: the timed pipeline has no reorder of the NCHW
// graph input into the conv's layout nor of its output back, while forward() still returns plain NCHW.
TEST(OneDnnProfiling, SingleConvPipelineHasNoEdgeReorders) {
  LayerBuilder b("kernel", 13, 9);
  const auto x = b.input("x", {1, 64, 56, 56});
  const auto model = one_output(b, b.relu(b.conv_bn(x, 64, 3)));
  expect_matches_reference(model);
  Engine engine(load_graph(model, "kernel"), EngineOptions{1});

  const Json inference = engine.plan();
  EXPECT_EQ(inference["pipeline"], "inference");
  // Every reorder of the inference pipeline is at an edge (on a machine with blocked conv kernels there
  // are two: NCHW -> the conv's src layout, its dst layout -> NCHW).
  EXPECT_GE(inference["edge_reorders"].get<int>(), 1) << inference.dump(1);
  EXPECT_EQ(inference["reorders"], inference["edge_reorders"]) << inference.dump(1);
  for (const auto& s : inference["steps"]) {
    if (s["primitive"] == "reorder") {
      EXPECT_TRUE(s["edge"] == "input" || s["edge"] == "output") << s.dump();
    }
  }

  const Json timed = engine.plan(Pipeline::Profiling);
  EXPECT_EQ(timed["pipeline"], "profiling");
  ASSERT_EQ(timed["steps"].size(), 1u) << timed.dump(1);
  EXPECT_EQ(timed["steps"][0]["primitive"], "convolution");
  EXPECT_EQ(timed["reorders"], 0);
  EXPECT_EQ(timed["primitives"], 1);
  ASSERT_EQ(timed["excluded_edge_reorders"].size(), inference["edge_reorders"].get<size_t>());
  for (const auto& s : timed["excluded_edge_reorders"]) {
    EXPECT_EQ(s["primitive"], "reorder");
    EXPECT_EQ(s["tensor"], s["edge"] == "input" ? x : model.graph().output(0).name()) << s.dump();
  }

  // Profiling runs leave the inference path intact: forward() afterwards (and in between) matches a
  // fresh engine bit for bit, also with new inputs.
  const auto in1 = inputs_for(model, 1), in2 = inputs_for(model, 2);
  Engine fresh(load_graph(model, "kernel"), EngineOptions{1});
  const auto want1 = fresh.forward(in1)[0].data, want2 = fresh.forward(in2)[0].data;
  engine.set_inputs(in1);
  engine.prepare_profiling();
  engine.execute(Pipeline::Profiling);
  engine.execute(Pipeline::Profiling);
  EXPECT_EQ(engine.forward(in2)[0].data, want2);
  engine.set_inputs(in1);
  engine.execute(Pipeline::Profiling);  // stages the new inputs itself
  EXPECT_EQ(engine.forward(in1)[0].data, want1);
}

// Timing every step on its own gives one time per step of the plan, in the plan's order, and computes the
// same outputs; the plan names each step's tensor shapes, so a layer can be found again in another model.
TEST(OneDnnProfiling, StepTimesFollowThePlanAndItsShapes) {
  LayerBuilder b("net", 13, 9);
  const auto x = b.input("x", {1, 16, 20, 20});
  const auto model = one_output(b, b.maxpool(b.relu(b.conv_bn(b.relu(b.conv_bn(x, 32, 3)), 24, 1)), 2, 2));
  Engine engine(load_graph(model, "net"), EngineOptions{1});
  const auto in = inputs_for(model, 1);
  Engine fresh(load_graph(model, "net"), EngineOptions{1});
  const auto want = fresh.forward(in)[0].data;

  engine.set_inputs(in);
  std::vector<double> step_ms = {42.0};  // replaced, not appended to
  for (const Pipeline p : {Pipeline::Profiling, Pipeline::Inference}) {
    engine.execute_timed(p, step_ms);
    const Json steps = engine.plan(p)["steps"];
    ASSERT_EQ(step_ms.size(), steps.size()) << steps.dump(1);
    for (const double ms : step_ms) EXPECT_GT(ms, 0.0);
  }
  EXPECT_EQ(engine.outputs()[0].data, want);

  const Json steps = engine.plan(Pipeline::Profiling)["steps"];
  ASSERT_EQ(steps.size(), 3u) << steps.dump(1);
  EXPECT_EQ(steps[0]["primitive"], "convolution");
  EXPECT_EQ(steps[0]["dims"]["src"], Json({1, 16, 20, 20}));
  EXPECT_EQ(steps[0]["dims"]["weights"], Json({32, 16, 3, 3}));
  EXPECT_EQ(steps[0]["dims"]["dst"], Json({1, 32, 20, 20}));
  EXPECT_EQ(steps[1]["dims"]["weights"], Json({24, 32, 1, 1}));
  EXPECT_EQ(steps[2]["primitive"], "pooling");
  EXPECT_EQ(steps[2]["dims"]["dst"], Json({1, 24, 10, 10}));
  EXPECT_FALSE(steps[2]["dims"].contains("weights"));
}

// A kernel model is timed as if it sat between two convs: an op that is not a conv gets its input in the
// layout a conv writes (staged, untimed) and pays, timed, exactly the steps it costs between two convs of
// a network — for a channel shuffle, whatever data movement the engine needs in that layout.
TEST(OneDnnProfiling, NonConvKernelsPayWhatTheyCostInsideANetwork) {
  const Shape shape{1, 116, 28, 28};
  LayerBuilder sb("shuffle", 13, 2);
  const auto shuffle = one_output(sb, sb.channel_shuffle(sb.input("x", shape), 2));
  expect_matches_reference(shuffle);
  const Json alone = Engine(load_graph(shuffle, "shuffle"), EngineOptions{1}).plan(Pipeline::Profiling);

  LayerBuilder nb("net", 13, 3);
  const auto net = one_output(nb, nb.conv(nb.channel_shuffle(nb.conv(nb.input("x", shape), 116, 1), 2), 116, 1));
  const Json steps = Engine(load_graph(net, "net"), EngineOptions{1}).plan(Pipeline::Profiling)["steps"];
  std::vector<std::string> between, timed;
  bool after_first_conv = false;
  for (const auto& step : steps) {
    if (step["primitive"] == "convolution") {
      if (after_first_conv) break;
      after_first_conv = true;
    } else if (after_first_conv) {
      between.push_back(step["primitive"].get<std::string>());
    }
  }
  for (const auto& step : alone["steps"]) timed.push_back(step["primitive"].get<std::string>());
  EXPECT_EQ(timed, between) << alone.dump(1) << steps.dump(1);
  EXPECT_FALSE(timed.empty()) << "a channel shuffle moves data";
  ASSERT_GE(alone["excluded_edge_reorders"].size(), 1u) << alone.dump(1);
  EXPECT_EQ(alone["excluded_edge_reorders"][0]["why"], "layout a conv writes for 'x'") << alone.dump(1);

  // ReLU runs in whatever layout it finds: nothing to reorder, inside a network or here.
  LayerBuilder rb("relu", 13, 4);
  const auto relu = one_output(rb, rb.relu(rb.input("x", shape)));
  expect_matches_reference(relu);
  const Json relu_timed = Engine(load_graph(relu, "relu"), EngineOptions{1}).plan(Pipeline::Profiling);
  EXPECT_EQ(relu_timed["reorders"], 0) << relu_timed.dump(1);
  EXPECT_EQ(relu_timed["primitives"], 1) << relu_timed.dump(1);
}

// The plan file written at conversion records what profile() leaves out of the timer.
TEST(OneDnnProfiling, PlanFileListsExcludedEdgeReorders) {
  test::TempDir dir;
  LayerBuilder b("dw", 13, 4);
  const auto x = b.input("x", {1, 32, 28, 28});
  const auto model = one_output(b, b.relu(b.conv_bn(x, 32, 3, 1, 32)));
  io::write_file_atomic(dir / "dw.onnx", model.SerializeAsString());
  auto backend = make_backend({{"NUM_RUNS", 2}, {"NUM_ROUNDS", 1}, {"WARMUP_RUNS", 0}, {"MIN_TIME_MS", 0.0}});
  const auto files = backend->to_backend(dir / "dw.onnx", dir / "work", "dw");
  const Json plan = io::load_json_file(files[1]);
  ASSERT_TRUE(plan.contains("profiling")) << plan.dump(1);
  EXPECT_EQ(plan["profiling"]["reorders"], 0) << plan.dump(1);
  EXPECT_EQ(plan["profiling"]["primitives"].get<int>() + plan["edge_reorders"].get<int>(), plan["primitives"].get<int>());
  EXPECT_EQ(plan["profiling"]["excluded_edge_reorders"].size(), plan["edge_reorders"].get<size_t>());
  for (const auto& e : plan["profiling"]["excluded_edge_reorders"]) EXPECT_TRUE(e["edge"] == "input" || e["edge"] == "output");
  EXPECT_GT(backend->profile(files).median, 0);
  expect_matches_reference(model);
}

// Settings under which measure() calls `run` exactly 1 + warmup + rounds * runs times.
backends::MeasureSettings exact_settings(int warmup, int runs, int rounds) {
  backends::MeasureSettings s;
  s.warmup_runs = warmup;
  s.runs = runs;
  s.rounds = rounds;
  s.min_time_ms = 0;
  s.max_busy = 1e9;  // never re-measure
  return s;
}

TEST(OneDnnBackend, MeasurementHonoursItsSettings) {
  int calls = 0;
  backends::MeasureSettings s = exact_settings(2, 4, 3);
  const auto m = backends::measure([&] { ++calls; }, s);
  EXPECT_EQ(calls, 1 + 2 + 3 * 4);
  EXPECT_EQ(m.stats.count, 3);
  EXPECT_EQ(m.run_samples_ms.size(), 12u);
  s.runs = 0;
  EXPECT_THROW(backends::measure([] {}, s), Error);
}

// MAX_TIME_MS: a slow kernel's warm-up stops once it lasted that long and each round after 3 runs, whatever
// WARMUP_RUNS and NUM_RUNS ask; 0 never stops early. (Each run sleeps longer than the limit, so the counts do
// not depend on the machine's speed.)
TEST(OneDnnBackend, MeasurementOfASlowKernelStopsAtMaxTime) {
  int calls = 0;
  const auto slow = [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  };
  backends::MeasureSettings s = exact_settings(10, 20, 2);
  s.max_time_ms = 50;
  const auto m = backends::measure(slow, s);
  EXPECT_EQ(calls, 1 + 1 + 2 * 3);
  EXPECT_EQ(m.run_samples_ms.size(), 6u);
  EXPECT_EQ(m.stats.count, 2);
  calls = 0;
  s = exact_settings(2, 4, 2);
  s.max_time_ms = 0;
  backends::measure(slow, s);
  EXPECT_EQ(calls, 1 + 2 + 2 * 4);
  s.max_time_ms = -1;
  EXPECT_THROW(backends::measure(slow, s), Error);
}

// measure() runs the untimed preparation before every timed run and nowhere else.
TEST(OneDnnBackend, MeasurementPreparesEveryTimedRun) {
  std::vector<char> calls;
  const auto m = backends::measure([&] { calls.push_back('r'); }, exact_settings(1, 3, 2), [&] { calls.push_back('p'); });
  EXPECT_EQ(std::string(calls.begin(), calls.end()), "rr" "prprpr" "prprpr");
  EXPECT_EQ(m.run_samples_ms.size(), 6u);
}

// Cache eviction and the input write-back leave every byte as it was, whatever the alignment and size.
TEST(OneDnnBackend, CacheEvictionKeepsData) {
  std::vector<uint8_t> data(10000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  const auto want = data;
  const std::vector<backends::ByteRange> ranges = {{data.data() + 3, 5000}, {data.data() + 5003, 1}, {data.data() + 6000, 4000}};
  backends::evict_from_caches(ranges);
  backends::write_back_into_cache(ranges, 2);
  EXPECT_EQ(data, want);
}

// The scratch fill really writes its bytes (the pages become resident), and the size is a validated key.
TEST(OneDnnProfiling, ColdStartFillWritesItsScratch) {
  const auto params = builtin_backends()[0].params;
  const Json defaults = resolve_backend_config(params, Json::object(), "t");
  EXPECT_EQ(defaults["COLD_CACHE_FILL_MB"].get<int>(), 0);
  EXPECT_EQ(backends::measure_settings(defaults, 1).cold_fill_bytes, 0u);
  EXPECT_EQ(backends::measure_settings(resolve_backend_config(params, {{"COLD_CACHE_FILL_MB", 64}}, "t"), 1).cold_fill_bytes,
            size_t{64} << 20);
  for (const Json& bad : {Json(-1), Json(70000), Json("big")})
    EXPECT_THROW(resolve_backend_config(params, {{"COLD_CACHE_FILL_MB", bad}}, "t"), Error) << bad;

  auto resident_bytes = [] {
    std::ifstream statm("/proc/self/statm");
    size_t pages = 0, resident = 0;
    statm >> pages >> resident;
    return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  };
  const size_t before = resident_bytes(), fill = size_t{96} << 20;
  backends::fill_caches_with_scratch(fill, 2);
  EXPECT_GE(resident_bytes(), before + fill - (size_t{4} << 20));
}

// COLD_CACHE (default on) evicts everything a run touches and writes back only what the timed pipeline
// reads first: for a conv kernel the staged input in the conv's layout, for inference the plain input.
TEST(OneDnnProfiling, ColdStartEvictsTheFootprintAndWritesTheInput) {
  const auto params = builtin_backends()[0].params;
  EXPECT_TRUE(resolve_backend_config(params, Json::object(), "t")["COLD_CACHE"].get<bool>());

  LayerBuilder b("kernel", 13, 9);
  const auto x = b.input("x", {1, 32, 28, 28});
  const auto model = one_output(b, b.relu(b.conv_bn(x, 48, 3)));
  Engine engine(load_graph(model, "kernel"), EngineOptions{1});
  const size_t input = 32 * 28 * 28 * 4, output = 48 * 28 * 28 * 4, weights = 48 * 32 * 3 * 3 * 4;
  const Json timed = engine.plan(Pipeline::Profiling), inference = engine.plan();
  EXPECT_GE(timed["footprint_bytes"].get<size_t>(), input + weights + output);
  EXPECT_EQ(timed["footprint_bytes"], inference["footprint_bytes"]);
  EXPECT_EQ(inference["cold_start_input_bytes"], input);
  EXPECT_GE(timed["cold_start_input_bytes"].get<size_t>(), input);  // blocked layouts may pad channels
  EXPECT_LT(timed["cold_start_input_bytes"].get<size_t>(), 2 * input);

  const auto in = inputs_for(model, 1);
  const auto want = Engine(load_graph(model, "kernel"), EngineOptions{1}).forward(in)[0].data;
  engine.set_inputs(in);
  engine.start_cold(Pipeline::Profiling);  // stages the inputs itself
  engine.execute(Pipeline::Profiling);
  engine.start_cold(Pipeline::Inference);
  engine.execute(Pipeline::Inference);
  EXPECT_EQ(engine.outputs()[0].data, want);
  engine.start_cold(Pipeline::Inference, size_t{1} << 20);  // a scratch fill between eviction and input
  engine.execute(Pipeline::Inference);
  EXPECT_EQ(engine.outputs()[0].data, want);
}

}  // namespace
}  // namespace nnmeter::onednn
