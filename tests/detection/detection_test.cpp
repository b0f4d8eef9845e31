// Kernel detection on small hand-built graphs: pairwise fusion by the root's type, BF chains, MON, the
// multi-op units of real exports, and the kernel configs the builder's parsers read.
#include <cmath>
#include <set>
#include <tuple>

#include "prediction/onnx_model.h"
#include "networks/architectures.h"
#include "onnx_io/builder.h"
#include "prediction/prediction_fixtures.h"

namespace nnmeter {
namespace {

using networks::LayerBuilder;
using test::cpu_rules;
using test::detect;
using test::kernel_with_op;
using test::ops_of;
using test::rules;
using S = std::vector<std::string>;

onnx::ModelProto conv_bn_relu(int64_t hw = 28) {
  LayerBuilder b("cbr");
  b.output(b.relu(b.conv_batchnorm(b.input("x", {1, 16, hw, hw}), 32, 3, 2)));
  return b.model();
}

TEST(Detection, ConvBnReluFusesOnlyWhenTheRootTypeAllowsEachStep) {
  const auto m = conv_bn_relu();
  EXPECT_EQ(ops_of(detect(m, rules({"BF_conv_bn", "BF_conv_relu"}))), S{"conv-bn-relu"});
  EXPECT_EQ(ops_of(detect(m, rules({"BF_conv_bn"}))), (S{"conv-bn", "relu"}));
  // The pair check uses the root's type: bn_relu does not let a conv-rooted kernel take the relu.
  EXPECT_EQ(ops_of(detect(m, rules({"BF_conv_bn", "BF_bn_relu"}))), (S{"conv-bn", "relu"}));
  EXPECT_EQ(ops_of(detect(m, rules({"BF_bn_relu"}))), (S{"conv", "bn-relu"}));
  EXPECT_EQ(ops_of(detect(m, rules({}, false, {"BF_conv_bn", "BF_conv_relu"}))), (S{"conv", "bn", "relu"}));
  // A chain rule fuses the whole path at once.
  EXPECT_EQ(ops_of(detect(m, rules({"BF_conv_bn_relu"}))), S{"conv-bn-relu"});
}

TEST(Detection, KernelRecordsCarryBuilderKernelAndConfig) {
  const auto ks = detect(conv_bn_relu(28), cpu_rules());
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].name, "conv-bn-relu#0");
  EXPECT_EQ(ks[0].kind, KernelKind::compute);
  EXPECT_EQ(ks[0].kernel, "conv-bn-relu");
  EXPECT_EQ(ks[0].config, (Json{{"HW", 28}, {"CIN", 16}, {"COUT", 32}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}}));
  EXPECT_EQ(ks[0].nodes.size(), 3u);
  // conv alone is the builder's conv-block; a fused tail without its own kernel keeps the conv family.
  EXPECT_EQ(detect(conv_bn_relu(), rules({}))[0].kernel, "conv-block");
}

// x → conv → {relu_a, relu_b}: MON decides whether a node with two consumers fuses at all.
TEST(Detection, MultipleOutboundsRule) {
  LayerBuilder b("mon");
  const auto c = b.conv(b.input("x", {1, 8, 16, 16}), 8, 3, 1, 1, 8);
  b.output(b.relu(c));
  b.output(b.relu(c));
  const auto m = b.model();
  EXPECT_EQ(ops_of(detect(m, rules({"BF_dwconv_relu"}, false))), (S{"dwconv", "relu", "relu"}));
  const auto with_mon = detect(m, rules({"BF_dwconv_relu"}, true));
  EXPECT_EQ(ops_of(with_mon), (S{"dwconv-relu", "relu"}));
  EXPECT_EQ(with_mon[0].kernel, "dwconv-relu");
  // relu6 takes the relu rule when the rules never tested relu6.
  LayerBuilder b6("mon6");
  b6.output(b6.relu6(b6.conv(b6.input("x", {1, 8, 16, 16}), 8, 3, 1, 1, 8)));
  EXPECT_EQ(ops_of(detect(b6.model(), rules({"BF_dwconv_relu"}))), S{"dwconv-relu6"});
  EXPECT_EQ(ops_of(detect(b6.model(), rules({"BF_dwconv_relu"}, false, {"BF_dwconv_relu6"}))), (S{"dwconv", "relu6"}));
}

std::string scalar(LayerBuilder& b, float v) { return b.constant_floats({}, {v}); }

TEST(Detection, HardSwishInEveryExportForm) {
  const Shape s = {1, 24, 14, 14};
  auto check = [&](const std::function<std::string(LayerBuilder&, const std::string&)>& hswish) {
    LayerBuilder b("hs");
    const auto x = b.conv(b.input("x", s), 24, 1);
    b.output(hswish(b, x));
    const auto ks = detect(b.model(), rules({}));
    EXPECT_EQ(ops_of(ks), (S{"conv", "hswish"}));
    const auto& h = kernel_with_op(ks, "hswish");
    EXPECT_EQ(h.kernel, "hswish");
    EXPECT_EQ(h.config, (Json{{"HW", 14}, {"CIN", 24}}));
    EXPECT_EQ(ops_of(detect(b.model(), rules({"BF_conv_hswish"}))), S{"conv-hswish"});
  };
  check([](LayerBuilder& b, const std::string& x) { return b.hardswish(x); });  // x · HardSigmoid(x)
  check([&](LayerBuilder& b, const std::string& x) {                           // x · (relu6(x + 3) / 6)
    const auto a = b.node("Add", {x, scalar(b, 3)}, s);
    const auto c = b.node("Clip", {a, scalar(b, 0), scalar(b, 6)}, s);
    return b.node("Mul", {x, b.node("Div", {c, scalar(b, 6)}, s)}, s);
  });
  check([&](LayerBuilder& b, const std::string& x) {  // (relu6(x + 3) · x) / 6
    const auto a = b.node("Add", {scalar(b, 3), x}, s);
    const auto c = b.node("Clip", {a, scalar(b, 0), scalar(b, 6)}, s);
    return b.node("Div", {b.node("Mul", {c, x}, s), scalar(b, 6)}, s);
  });
  check([&](LayerBuilder& b, const std::string& x) {  // x · (relu6(x + 3) · 1/6)
    const auto a = b.node("Add", {x, scalar(b, 3)}, s);
    const auto c = b.node("Clip", {a, scalar(b, 0), scalar(b, 6)}, s);
    return b.node("Mul", {b.node("Mul", {c, scalar(b, 1.f / 6)}, s), x}, s);
  });
}

TEST(Detection, SwishAndAPlainMulAreDifferent) {
  LayerBuilder b("swish");
  const auto x = b.input("x", {1, 16, 8, 8});
  const auto y = b.swish(b.conv(x, 16, 3));
  b.output(b.mul(y, b.sigmoid(b.conv(x, 16, 1))));  // a gate, but not of its own input
  const auto ks = detect(b.model(), rules({}));
  EXPECT_EQ(ops_of(ks), (S{"conv", "swish", "conv", "sigmoid", "mul"}));
  EXPECT_EQ(kernel_with_op(ks, "swish").kernel, "swish");
  EXPECT_EQ(kernel_with_op(ks, "sigmoid").kind, KernelKind::elementwise);
  const auto& mul = kernel_with_op(ks, "mul");
  EXPECT_EQ(mul.kind, KernelKind::elementwise);
  EXPECT_TRUE(mul.binary);
}

// GlobalAveragePool|ReduceMean → Conv → act → Conv → gate → Mul(input).
TEST(Detection, SqueezeExcitationBlocks) {
  const Shape s = {1, 40, 14, 14};
  auto se = [&](bool reduce_mean, const std::string& act, const std::string& gate) {
    LayerBuilder b("se");
    const auto x = b.conv(b.input("in", s), 40, 1);
    std::string p = reduce_mean ? b.reduce_mean_hw(x, true) : b.global_avgpool(x);
    p = b.conv(p, 10, 1, 1, 0, 1, true);
    p = act == "relu" ? b.relu(p) : act == "swish" ? b.swish(p) : b.hardswish(p);
    p = b.conv(p, 40, 1, 1, 0, 1, true);
    const Shape g = {1, 40, 1, 1};
    if (gate == "hardsigmoid") p = b.hardsigmoid(p);
    if (gate == "sigmoid") p = b.sigmoid(p);
    if (gate == "clip") {
      const auto a = b.node("Add", {p, scalar(b, 3)}, g);
      p = b.node("Div", {b.node("Clip", {a, scalar(b, 0), scalar(b, 6)}, g), scalar(b, 6)}, g);
    }
    b.output(b.mul(x, p));
    return b.model();
  };
  for (bool rm : {false, true})
    for (const char* act : {"relu", "swish", "hswish"})
      for (const char* gate : {"hardsigmoid", "sigmoid", "clip"}) {
        SCOPED_TRACE(std::string(act) + " " + gate + (rm ? " reducemean" : " gap"));
        const auto ks = detect(se(rm, act, gate), cpu_rules());
        ASSERT_EQ(ops_of(ks), (S{"conv", "se"}));
        EXPECT_EQ(ks[1].kernel, "se");
        EXPECT_EQ(ks[1].config, (Json{{"HW", 14}, {"CIN", 40}}));
      }
}

TEST(Detection, ChannelShuffleThroughShapeSubgraphs) {
  LayerBuilder b("shuffle");
  const auto x = b.input("x", {1, 58, 28, 28});
  const auto halves = b.split(x, {29, 29});
  b.output(b.channel_shuffle(b.concat({halves[0], b.relu(b.conv(halves[1], 29, 1))}), 2));
  const auto ir = onnx_to_ir(b.model(), "shuffle");
  for (const auto& n : ir.nodes) {
    EXPECT_NE(n.type, "Shape");  // load-time constants are not nodes
    EXPECT_NE(n.type, "Gather");
  }
  const auto ks = detect_kernels(ir, cpu_rules());
  EXPECT_EQ(ops_of(ks), (S{"split", "conv-relu", "concat", "channelshuffle"}));
  EXPECT_EQ(kernel_with_op(ks, "channelshuffle").config, (Json{{"HW", 28}, {"CIN", 58}}));
  EXPECT_EQ(kernel_with_op(ks, "split").config, (Json{{"HW", 28}, {"CIN", 58}}));
  EXPECT_EQ(kernel_with_op(ks, "concat").config, (Json{{"HW", 28}, {"CIN1", 29}, {"CIN2", 29}}));
}

// ShuffleNet v1 shuffles three groups, often over a channel count that two groups cannot split: the config
// says how many, so the kernel alone is the same shuffle (`evaluate --kernels` builds it).
TEST(Detection, AShuffleOfThreeGroupsSaysSo) {
  LayerBuilder b("shuffle3");
  b.output(b.channel_shuffle(b.relu(b.input("x", {1, 45, 14, 14})), 3));
  const auto ks = detect_kernels(onnx_to_ir(b.model(), "shuffle3"), cpu_rules());
  ASSERT_EQ(ops_of(ks), (S{"relu", "channelshuffle"}));
  const KernelConfig config = kernel_with_op(ks, "channelshuffle").config;
  EXPECT_EQ(config, (Json{{"HW", 14}, {"CIN", 45}, {"GROUPS", 3}}));
  onnx::ModelProto alone;
  ASSERT_TRUE(alone.ParseFromString(find_kernel(Registry(), "channelshuffle").create(Json::object()).kernel->build_onnx(config, 1)));
  const auto again = detect(alone, cpu_rules());
  ASSERT_EQ(ops_of(again), (S{"channelshuffle"}));
  EXPECT_EQ(again[0].config, config);
  EXPECT_EQ(stand_in_config("channelshuffle", "concat", config), (Json{{"HW", 14}, {"CIN1", 22}, {"CIN2", 23}}));
}

TEST(Detection, SiblingSlicesAreOneSplit) {
  LayerBuilder b("slices");
  const auto x = b.input("x", {1, 32, 8, 8});
  auto slice = [&](int64_t from, int64_t to) {
    return b.node("Slice", {x, b.constant_ints({from}), b.constant_ints({to}), b.constant_ints({1})}, {1, to - from, 8, 8});
  };
  b.output(b.add(slice(0, 16), slice(16, 32)));
  const auto ks = detect(b.model(), cpu_rules());
  EXPECT_EQ(ops_of(ks), (S{"split", "add"}));
  EXPECT_EQ(ks[0].nodes.size(), 2u);
  EXPECT_EQ(ks[0].config, (Json{{"HW", 8}, {"CIN", 32}}));
}

TEST(Detection, GroupedConvIsAKernelOfItsOwn) {
  LayerBuilder b("grouped");
  const auto x = b.input("x", {1, 32, 28, 28});
  b.output(b.relu(b.conv_batchnorm(b.relu(b.conv_batchnorm(x, 64, 3, 1, 4)), 64, 3, 1, 64)));
  const auto ks = detect(b.model(), cpu_rules());
  ASSERT_EQ(ops_of(ks), (S{"conv-bn-relu", "dwconv-bn-relu"}));
  EXPECT_EQ(ks[0].kernel, "gconv-bn-relu");
  EXPECT_EQ(ks[0].config,
            (Json{{"HW", 28}, {"CIN", 32}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}, {"GROUPS", 4}}));
  EXPECT_EQ(ks[1].kernel, "dwconv-bn-relu");
  EXPECT_EQ(ks[1].config, (Json{{"HW", 28}, {"CIN", 64}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}}));
}

TEST(Detection, NonSquareConvIsItsAreasSquareDoingItsShareOfTheWork) {
  for (const auto& [kh, kw, side, work] : {std::tuple{1, 7, 3, 7.0 / 9}, std::tuple{7, 1, 3, 7.0 / 9},
                                           std::tuple{1, 3, 2, 3.0 / 4}, std::tuple{3, 3, 3, 1.0}}) {
    LayerBuilder b("rect");
    b.output(b.relu(b.conv_rect(b.input("x", {1, 32, 17, 17}), 48, kh, kw)));
    const auto ks = detect(b.model(), cpu_rules());
    ASSERT_EQ(ks.size(), 1u);
    EXPECT_EQ(ks[0].config, (Json{{"HW", 17}, {"CIN", 32}, {"COUT", 48}, {"KERNEL_SIZE", side}, {"STRIDES", 1}}))
        << kh << "x" << kw;
    EXPECT_DOUBLE_EQ(ks[0].work, work) << kh << "x" << kw;
  }
  EXPECT_EQ(detect(conv_bn_relu(), cpu_rules())[0].work, 1);
}

TEST(Detection, GlobalPoolingUsesTheRealInputSize) {
  for (bool reduce_mean : {false, true}) {
    LayerBuilder b("head");
    const auto x = b.input("x", {1, 1280, 7, 7});
    const auto pooled = reduce_mean ? b.reduce_mean_hw(x, false) : b.flatten(b.global_avgpool(x));
    b.output(b.gemm(pooled, 1000));
    const auto ks = detect(b.model(), cpu_rules());
    ASSERT_EQ(ops_of(ks), (S{"globalavgpool", "fc"}));
    EXPECT_EQ(ks[0].kernel, "global-avgpool");
    EXPECT_EQ(ks[0].config, (Json{{"HW", 7}, {"CIN", 1280}}));
    EXPECT_EQ(ks[1].config, (Json{{"CIN", 1280}, {"COUT", 1000}}));
  }
}

// A concat copies each input pixel by pixel, so it costs per input: one of more inputs than the builder's
// concat takes (four) is the concats of its inputs taken at most four at a time, as evenly as they go, each a
// kernel on the concat's node.
TEST(Detection, AConcatOfMoreThanFourInputsIsConcatsOfAtMostFour) {
  for (const int convs : {3, 5, 8}) {
    LayerBuilder b("dense");
    const auto x = b.input("x", {1, 64, 14, 14});
    std::vector<std::string> features = {x};
    for (int i = 0; i < convs; ++i) features.push_back(b.conv(x, 32 + i, 1));
    const auto cat = b.concat(features);
    b.output(cat);
    std::vector<DetectedKernel> concats;
    for (const auto& k : detect(b.model(), cpu_rules()))
      if (k.kernel == "concat") concats.push_back(k);
    std::vector<Json> configs;
    std::set<std::string> names;
    for (const auto& k : concats) {
      configs.push_back(k.config);
      names.insert(k.name);
      EXPECT_EQ(k.nodes, concats.front().nodes);
    }
    EXPECT_EQ(names.size(), concats.size()) << "each part is a kernel of its own name";
    if (convs == 3) {  // 4 inputs: one kernel, as it was
      EXPECT_EQ(configs, (std::vector<Json>{{{"HW", 14}, {"CIN1", 64}, {"CIN2", 32}, {"CIN3", 33}, {"CIN4", 34}}}));
    } else if (convs == 5) {  // 6 inputs: 3 + 3
      EXPECT_EQ(configs, (std::vector<Json>{{{"HW", 14}, {"CIN1", 64}, {"CIN2", 32}, {"CIN3", 33}},
                                            {{"HW", 14}, {"CIN1", 34}, {"CIN2", 35}, {"CIN3", 36}}}));
    } else {  // 9 inputs: 3 + 3 + 3, every input once, in order
      ASSERT_EQ(configs.size(), 3u);
      std::vector<int64_t> channels;
      for (const auto& c : configs) {
        EXPECT_EQ(c.size(), 4u) << c.dump();
        for (int i = 1; i <= 3; ++i) channels.push_back(c["CIN" + std::to_string(i)].get<int64_t>());
      }
      EXPECT_EQ(channels, (std::vector<int64_t>{64, 32, 33, 34, 35, 36, 37, 38, 39}));
    }
  }
}

TEST(Detection, LayoutAndUnknownOps) {
  LayerBuilder b("misc");
  const auto x = b.input("x", {1, 8, 4, 4});
  const auto t = b.node("Transpose", {b.relu(x)}, {1, 4, 4, 8}, {networks::attr("perm", std::vector<int64_t>{0, 2, 3, 1})});
  const auto d = b.node("DepthToSpace", {t}, {1, 1, 8, 16}, {networks::attr("blocksize", int64_t{2})});
  b.output(b.flatten(d));
  const auto ks = detect(b.model(), rules({}));
  ASSERT_EQ(ops_of(ks), (S{"relu", "transpose", "depthtospace", "flatten"}));
  // A transpose copies its input once, as an element-wise op writes its output.
  EXPECT_EQ(ks[1].kind, KernelKind::elementwise);
  EXPECT_EQ(ks[2].kind, KernelKind::unsupported);
  EXPECT_NE(ks[2].reason.find("DepthToSpace"), std::string::npos);
  EXPECT_EQ(ks[3].kind, KernelKind::layout);
}

// A Pad of zeros (DenseNet's AvgPool as exported) copies nothing; a Pad that grows the tensor is one pass over
// its output, like any element-wise op without a kernel.
TEST(Detection, ZeroPadIsLayoutAndAGrowingPadIsElementwise) {
  for (const auto& [pad, kind] : std::vector<std::pair<int64_t, KernelKind>>{{0, KernelKind::layout}, {1, KernelKind::elementwise}}) {
    LayerBuilder b("pad");
    const auto x = b.input("x", {1, 8, 6, 6});
    const auto padded = b.node("Pad", {x, b.constant_ints({0, 0, pad, pad, 0, 0, pad, pad})}, {1, 8, 6 + 2 * pad, 6 + 2 * pad},
                               {networks::attr("mode", std::string("constant"))});
    b.output(b.relu(padded));
    const auto ks = detect(b.model(), cpu_rules());
    ASSERT_EQ(ops_of(ks), (S{"pad", "relu"})) << pad;
    EXPECT_EQ(ks[0].kind, kind) << pad;
  }
}

TEST(Detection, EveryZooModelIsFullyCovered) {
  for (const auto& name : networks::architectures()) {
    SCOPED_TRACE(name);
    const auto ks = detect(networks::build(name, 64).model, cpu_rules());
    std::set<std::string> ops;
    for (const auto& k : ks) {
      EXPECT_NE(k.kind, KernelKind::unsupported) << k.name << ": " << k.reason;
      ops.insert(k.op);
    }
    if (name == "mobilenet_v3_large") {
      EXPECT_TRUE(ops.count("se"));
      EXPECT_TRUE(ops.count("conv-hswish"));  // BN folded into the conv, as exported
      EXPECT_TRUE(ops.count("dwconv-hswish"));
    }
    if (name == "efficientnet_b0") {
      EXPECT_TRUE(ops.count("se"));
      EXPECT_FALSE(ops.count("mul"));
    }
    if (name == "shufflenet_v2_x1_0") {
      EXPECT_TRUE(ops.count("channelshuffle"));
      EXPECT_TRUE(ops.count("split"));
    }
    if (name == "resnet18") {
      EXPECT_TRUE(ops.count("add-relu"));
    }
  }
}

// The kernels that are ours rather than nn-Meter's: EfficientNet's SiLU convs get their own kernels, and
// where the backend runs ShuffleNet's concat → channel shuffle → split as one kernel, the concat takes the split
// while the shuffle, which still moves every element, stays a kernel of its own.
TEST(Detection, SwishConvsAndTheShuffleChainFollowTheRules) {
  auto with = [](std::vector<std::string> extra) {
    std::vector<std::string> names = {"BF_conv_bn", "BF_conv_relu", "BF_dwconv_bn", "BF_dwconv_relu", "BF_conv_swish"};
    names.insert(names.end(), extra.begin(), extra.end());
    return rules(names);
  };
  std::map<std::string, int> kernels;
  for (const auto& k : detect(networks::build("efficientnet_b0", 64).model, with({"BF_dwconv_swish"}))) ++kernels[k.kernel];
  EXPECT_GT(kernels["conv-bn-swish"], 0);
  EXPECT_GT(kernels["dwconv-bn-swish"], 0);
  EXPECT_EQ(kernels["swish"], 0) << "every SiLU follows a conv's BN here";
  kernels.clear();
  for (const auto& k : detect(networks::build("efficientnet_b0", 64).model, with({}))) ++kernels[k.kernel];
  EXPECT_EQ(kernels["dwconv-bn-swish"], 0);
  EXPECT_GT(kernels["swish"], 0);

  const auto shuffle = networks::build("shufflenet_v2_x1_0", 64).model;
  const auto apart = detect(shuffle, with({}));
  const auto merged = detect(shuffle, with({"BF_concat_channelshuffle_split"}));
  auto count = [](const std::vector<DetectedKernel>& ks, const std::string& op) {
    return std::count_if(ks.begin(), ks.end(), [&](const DetectedKernel& k) { return k.op == op; });
  };
  const auto chains = count(merged, "concat-split");
  EXPECT_GT(chains, 0);
  EXPECT_EQ(count(apart, "concat-split"), 0);
  EXPECT_EQ(count(merged, "concat-channelshuffle-split"), 0);
  // Each chain makes two kernels of three: the split goes into the concat, the shuffle keeps its own.
  EXPECT_EQ(apart.size(), merged.size() + static_cast<size_t>(chains));
  EXPECT_EQ(count(merged, "channelshuffle"), count(apart, "channelshuffle"));
  for (size_t i = 0; i < merged.size(); ++i)
    if (merged[i].op == "concat-split") {
      EXPECT_EQ(merged[i].kernel, "concat");
      ASSERT_LT(i + 1, merged.size());
      const DetectedKernel& shuffle = merged[i + 1];  // the concat's shuffle comes right after it
      EXPECT_EQ(shuffle.kernel, "channelshuffle");
      EXPECT_EQ(shuffle.config["HW"], merged[i].config["HW"]);
      EXPECT_EQ(shuffle.config["CIN"], merged[i].config["CIN1"].get<int64_t>() + merged[i].config["CIN2"].get<int64_t>());
      EXPECT_EQ(shuffle.nodes.size(), 3u);  // Reshape, Transpose, Reshape
    }
}

// torch.onnx.export folds BatchNormalization into the conv: conv + SiLU is still the swish kernel (a folded BN
// costs nothing), never conv-bn-relu's; a conv with an activation no kernel has is named by its ops.
TEST(Detection, ConvsWithoutBnKeepTheirActivationsKernel) {
  LayerBuilder b("exported");
  const auto x = b.input("x", {1, 16, 16, 16});
  const auto y = b.swish(b.conv(x, 16, 3));
  const auto z = b.swish(b.conv(y, 16, 3, 1, -1, 16));
  const auto h = b.hardswish(b.conv(z, 16, 3, 1, -1, 16));
  b.output(b.sigmoid(b.conv(h, 16, 1)));
  const auto ks = detect(b.model(), rules({"BF_conv_swish", "BF_dwconv_swish", "BF_dwconv_hswish", "BF_conv_sigmoid"}));
  EXPECT_EQ(ops_of(ks), (S{"conv-swish", "dwconv-swish", "dwconv-hswish", "conv-sigmoid"}));
  EXPECT_EQ(kernel_with_op(ks, "conv-swish").kernel, "conv-bn-swish");
  EXPECT_EQ(kernel_with_op(ks, "dwconv-swish").kernel, "dwconv-bn-swish");
  EXPECT_EQ(kernel_with_op(ks, "dwconv-hswish").kernel, "dwconv-bn-hswish");
  EXPECT_EQ(kernel_with_op(ks, "conv-sigmoid").kernel, "conv-sigmoid");
}

// A ViT encoder block as torch.onnx.export writes it at opset 13 (the builder's LayerNorm, Linear and GELU are
// the exporter's): LN → Q, K, V → heads → Q·Kᵀ → scale → softmax → A·V → merge → projection → residual → LN →
// MLP (Linear → GELU → Linear) → residual.
onnx::ModelProto vit_block(int64_t t, int64_t c, int64_t heads, bool bert_gelu = false) {
  using onnx_io::attr_ints;
  onnx_io::GraphBuilder g("vit_block", 3);
  const int64_t d = c / heads;
  const std::string x = g.input({1, t, c});
  const std::string h = onnx_io::layer_norm(g, x, c);
  auto split_heads = [&](const std::string& y, std::vector<int64_t> perm) {
    return g.node1("Transpose", {g.node1("Reshape", {y, g.int64_const("heads", {1, t, heads, d})})}, {attr_ints("perm", perm)});
  };
  const std::string q = split_heads(onnx_io::linear(g, h, c, c), {0, 2, 1, 3});
  const std::string k = split_heads(onnx_io::linear(g, h, c, c), {0, 2, 3, 1});
  const std::string v = split_heads(onnx_io::linear(g, h, c, c), {0, 2, 1, 3});
  std::string a = g.node1("MatMul", {q, k});
  a = g.node1("Div", {a, g.float_const("scale", {}, {std::sqrt(static_cast<float>(d))})});
  a = g.node1("Softmax", {a}, {onnx_io::attr_int("axis", -1)});
  a = g.node1("Transpose", {g.node1("MatMul", {a, v})}, {attr_ints("perm", {0, 2, 1, 3})});
  a = g.node1("Reshape", {a, g.int64_const("merge", {1, t, c})});
  const std::string r = g.node1("Add", {x, onnx_io::linear(g, a, c, c)});
  std::string m = onnx_io::linear(g, onnx_io::layer_norm(g, r, c), c, 4 * c);
  if (bert_gelu) {  // x · 0.5 · (1 + erf(x / √2)), as BERT's code writes it
    const std::string e = g.node1("Erf", {g.node1("Div", {m, g.float_const("sqrt2", {}, {1.4142135f})})});
    m = g.node1("Mul", {g.node1("Mul", {m, g.float_const("half", {}, {0.5f})}), g.node1("Add", {e, g.float_const("one", {}, {1.0f})})});
  } else {
    m = onnx_io::gelu(g, m);
  }
  g.output(g.node1("Add", {r, onnx_io::linear(g, m, 4 * c, c)}), {1, t, c});
  return g.finish();
}

TEST(Detection, TransformerBlocksAreCoveredByTheTransformerKernels) {
  const auto fused = detect(vit_block(17, 32, 2), rules({"BF_linear_gelu"}));
  EXPECT_EQ(ops_of(fused), (S{"layernorm", "linear", "reshape", "transpose", "linear", "reshape", "transpose", "linear",
                              "reshape", "transpose", "matmul", "div", "softmax", "matmul", "transpose", "reshape", "linear",
                              "add", "layernorm", "linear-gelu", "linear", "add"}));
  for (const auto& k : fused) EXPECT_NE(k.kind, KernelKind::unsupported) << k.op << ": " << k.reason;
  EXPECT_EQ(kernel_with_op(fused, "layernorm").config, (Json{{"T", 17}, {"CIN", 32}}));
  EXPECT_EQ(kernel_with_op(fused, "layernorm").nodes.size(), 9u);  // with γ and β
  EXPECT_EQ(kernel_with_op(fused, "linear").config, (Json{{"T", 17}, {"CIN", 32}, {"COUT", 32}}));
  EXPECT_EQ(kernel_with_op(fused, "linear").nodes.size(), 2u);  // MatMul and its bias Add
  const auto& mlp = kernel_with_op(fused, "linear-gelu");
  EXPECT_EQ(mlp.kernel, "linear-gelu");
  EXPECT_EQ(mlp.config, (Json{{"T", 17}, {"CIN", 32}, {"COUT", 128}}));
  std::vector<Json> matmuls;
  for (const auto& k : fused)
    if (k.kernel == "matmul") matmuls.push_back(k.config);
  EXPECT_EQ(matmuls, (std::vector<Json>{{{"B", 2}, {"M", 17}, {"K", 16}, {"N", 17}}, {{"B", 2}, {"M", 17}, {"K", 17}, {"N", 16}}}));
  EXPECT_EQ(kernel_with_op(fused, "softmax").config, (Json{{"T", 34}, {"CIN", 17}}));  // a row per query of each head
  EXPECT_EQ(kernel_with_op(fused, "transpose").kind, KernelKind::elementwise);

  // Without the rule the MLP's GELU is a kernel of its own, at the MLP's width; BERT's form of it is the same unit.
  for (const bool bert : {false, true}) {
    const auto apart = detect(vit_block(17, 32, 2, bert), rules({}));
    EXPECT_EQ(kernel_with_op(apart, "gelu").config, (Json{{"T", 17}, {"CIN", 128}})) << bert;
    EXPECT_EQ(kernel_with_op(apart, "gelu").nodes.size(), 5u) << bert;
    for (const auto& k : apart) EXPECT_NE(k.kind, KernelKind::unsupported) << k.op;
  }
}

// nn.MultiheadAttention as torch.onnx.export writes it: the packed Q, K, V projection sliced three ways along
// its last axis, and the output projection a Gemm on [T·N, C]. The Gemm's rows are tokens, not the batch: a
// Linear over T rows (as fc it would be predicted for one row); the slices are a copy, not an image's split.
TEST(Detection, MultiheadAttentionsPackedProjectionsAreLinears) {
  LayerBuilder b("mha");
  const int64_t t = 10, c = 16;
  // batch_first: the layer's input [1, T, C] goes sequence-first for the attention.
  const auto x = b.node("Transpose", {b.input("x", {1, t, c})}, {t, 1, c}, {onnx_io::attr_ints("perm", {1, 0, 2})});
  const auto qkv = b.node("Add", {b.node("MatMul", {x, b.random_weights({c, 3 * c}, 0.1f)}, {t, 1, 3 * c}), b.random_weights({3 * c}, 0.1f)},
                          {t, 1, 3 * c});
  auto third = [&](int64_t i) {
    return b.node("Slice", {qkv, b.constant_ints({i * c}), b.constant_ints({(i + 1) * c}), b.constant_ints({-1})}, {t, 1, c});
  };
  const auto sum = b.add(b.add(third(0), third(1)), third(2));
  b.output(b.gemm(b.node("Reshape", {sum, b.constant_ints({t, c})}, {t, c}), c));
  const auto ks = detect(b.model(), cpu_rules());
  for (const auto& k : ks) EXPECT_NE(k.kind, KernelKind::unsupported) << k.op << ": " << k.reason;
  EXPECT_EQ(ks[1].kernel, "linear");
  EXPECT_EQ(ks[1].config, (Json{{"T", t}, {"CIN", c}, {"COUT", 3 * c}}));
  const auto& slices = kernel_with_op(ks, "split");
  EXPECT_EQ(slices.kind, KernelKind::elementwise);
  EXPECT_EQ(slices.nodes.size(), 3u);
  EXPECT_EQ(ks.back().kernel, "linear");
  EXPECT_EQ(ks.back().config, (Json{{"T", t}, {"CIN", c}, {"COUT", c}}));
}

// GELU(approximate='tanh') as PyTorch exports it: nine ops, one gelu kernel, its config from x.
TEST(Detection, TanhGeluIsOneGeluUnit) {
  LayerBuilder b("gelu_tanh");
  const Shape xs = {1, 17, 64};
  const auto x = b.relu(b.input("x", xs));
  const auto cube = b.node("Mul", {x, b.node("Mul", {x, x}, xs)}, xs);
  const auto inner = b.node("Add", {x, b.node("Mul", {scalar(b, 0.044715f), cube}, xs)}, xs);
  const auto t = b.node("Tanh", {b.node("Mul", {scalar(b, 0.7978845608f), inner}, xs)}, xs);
  b.output(b.node("Mul", {scalar(b, 0.5f), b.node("Mul", {x, b.node("Add", {scalar(b, 1.f), t}, xs)}, xs)}, xs));
  const auto ks = detect(b.model(), rules({}));
  ASSERT_EQ(ops_of(ks), (S{"relu", "gelu"}));
  EXPECT_EQ(ks[1].kernel, "gelu");
  EXPECT_EQ(ks[1].nodes.size(), 9u);
  EXPECT_EQ(ks[1].config, (Json{{"T", 17}, {"CIN", 64}}));
}

// LayerNormalization (opset 17) is the same kernel as the exporter's chain of seven ops before it.
TEST(Detection, LayerNormalizationOpIsTheLayernormKernel) {
  onnx_io::GraphBuilder g("ln17", 1, 17);
  const std::string x = g.input({1, 49, 96});
  g.output(g.node1("LayerNormalization", {x, g.random_weight("s", {96}, 0.5f, 1.5f), g.random_weight("b", {96}, 0.f, 0.1f)},
                   {onnx_io::attr_int("axis", -1)}),
           {1, 49, 96});
  const auto ks = detect(g.finish(), rules({}));
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].kernel, "layernorm");
  EXPECT_EQ(ks[0].config, (Json{{"T", 49}, {"CIN", 96}}));
}

TEST(Detection, StandInsKeepTheActivationFirst) {
  EXPECT_EQ(stand_in_kernels("conv-bn-swish"), (S{"conv-bn-swish", "conv-swish", "conv-bn-hswish", "conv-hswish", "conv-bn-relu",
                                                  "conv-bn-relu6", "conv-relu", "conv-bn", "conv-relu6", "conv-block"}));
  EXPECT_EQ(stand_in_kernels("dwconv-relu-add").at(1), "dwconv-bn-relu");
  EXPECT_EQ(stand_in_kernels("conv-sigmoid").at(1), "conv-bn-relu");
  EXPECT_EQ(stand_in_kernels("bn"), (S{"bn", "bnrelu"}));
  EXPECT_EQ(stand_in_kernels("fc"), (S{"fc"}));
  EXPECT_EQ(stand_in_kernels("linear-gelu"), (S{"linear-gelu", "linear"}));
  // A channel shuffle moves what the concat of its two halves moves.
  EXPECT_EQ(stand_in_kernels("channelshuffle"), (S{"channelshuffle", "concat"}));
  const KernelConfig shuffle = {{"HW", 14}, {"CIN", 232}};
  EXPECT_EQ(stand_in_config("channelshuffle", "concat", shuffle), (Json{{"HW", 14}, {"CIN1", 116}, {"CIN2", 116}}));
  EXPECT_EQ(stand_in_config("channelshuffle", "channelshuffle", shuffle), shuffle);
  EXPECT_EQ(stand_in_config("conv-swish", "conv-bn-relu", shuffle), shuffle);
}

TEST(FusionRules, ReadsObeyNullAndOldNames) {
  const auto r = FusionRules::from_json(
      {{"BF_conv_relu", {{"obey", true}}}, {"BF_relu_relu", {{"obey", false}}}, {"BF_dense_relu", {{"obey", true}}},
       {"BF_bn_relu", {{"obey", nullptr}}}, {"RBC", {{"latency", Json::object()}, {"obey", nullptr}}}, {"MON", {{"obey", true}}}},
      "rules.json");
  EXPECT_TRUE(r.multiple_outbounds);
  EXPECT_TRUE(r.can_fuse("conv", "relu"));
  EXPECT_TRUE(r.can_fuse("conv", "relu6"));
  EXPECT_TRUE(r.can_fuse("fc", "relu"));
  EXPECT_FALSE(r.can_fuse("bn", "relu"));
  EXPECT_FALSE(r.can_fuse("relu", "relu"));
  EXPECT_NE(test::error_of([] { FusionRules::from_json(Json::array(), "x.json"); }).find("x.json"), std::string::npos);
  EXPECT_NE(test::error_of([] { FusionRules::from_json({{"BF_conv_bn", true}}, "x.json"); }).find("BF_conv_bn"),
            std::string::npos);
}

}  // namespace
}  // namespace nnmeter
