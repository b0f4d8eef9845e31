// The builtin fusion-rule operators: every one builds a valid ONNX model whose inferred output shapes are
// what output_shape() predicts, and the onednn_cpu backend runs it producing those shapes. Blocks made
// by chaining two operators' models run too.
#include <gtest/gtest.h>


#include "fusion/compose.h"
#include "fusion/testcases.h"
#include "kernels/kernel_test_util.h"
#include "nnmeter/backend.h"
#include "nnmeter/fusion.h"
#include "nnmeter/registry.h"
#include "nnmeter/workspace.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

using test::TempDir;

const Json kConfig = {{"COUT", 12}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}, {"POOL_STRIDES", 2}};

std::unique_ptr<Operator> make(const std::string& name, const Json& config = kConfig) {
  for (const auto& info : builtin_operators())
    if (info.name == name) return info.create(config);
  throw Error("no builtin operator " + name);
}

Shape with_batch(int64_t batch, const Shape& s) {
  Shape out = {batch};
  out.insert(out.end(), s.begin(), s.end());
  return out;
}

// Runs `model` on onednn_cpu with constant inputs and returns the output shapes.
std::vector<Shape> run_on_onednn(const fs::path& dir, const std::string& bytes, const std::string& name) {
  const Registry registry(dir / "home");
  auto backend = connect_backend(registry, "onednn_cpu", Json::object());
  const fs::path file = dir / (name + ".onnx");
  test::write_text(file, bytes);
  auto wrapper = backend->build_wrapper(backend->to_backend(file, dir / "work", name));
  std::vector<Tensor> inputs;
  const onnx::ModelProto model = fusion::parse_model(bytes, name);
  for (const auto* in : fusion::real_inputs(model.graph())) {
    Tensor t;
    t.name = in->name();
    int64_t n = 1;
    for (const auto& d : in->type().tensor_type().shape().dim()) {
      t.shape.push_back(d.dim_value());
      n *= d.dim_value();
    }
    t.data.assign(static_cast<size_t>(n), 0.25f);
    inputs.push_back(t);
  }
  std::vector<Shape> out;
  for (const auto& t : wrapper->forward(inputs)) out.push_back(t.shape);
  return out;
}

TEST(FusionOperators, ListsNnMetersEighteenInItsOrderThenOurs) {
  std::vector<std::string> names;
  for (const auto& info : builtin_operators()) {
    names.push_back(info.name);
    EXPECT_FALSE(info.customized);
    EXPECT_EQ(info.implement, "onnx");
  }
  EXPECT_EQ(names, (std::vector<std::string>{"conv", "dwconv", "convtrans", "bn", "globalavgpool", "maxpool", "avgpool",
                                             "se", "fc", "relu", "relu6", "sigmoid", "hswish", "reshape", "add", "concat",
                                             "flatten", "split", "swish", "channelshuffle", "linear", "gelu",
                                             "layernorm", "softmax"}));
  std::vector<std::string> cases;
  for (const auto& info : builtin_testcases()) cases.push_back(info.name);
  EXPECT_EQ(cases, std::vector<std::string>{"MON"});
}

TEST(FusionOperators, ShapeRulesFollowTheConfig) {
  EXPECT_EQ(make("conv")->output_shape({8, 9, 7}), (Shape{12, 5, 4}));
  EXPECT_EQ(make("dwconv")->output_shape({8, 9, 7}), (Shape{8, 5, 4}));
  EXPECT_EQ(make("convtrans")->output_shape({8, 9, 7}), (Shape{12, 18, 14}));
  EXPECT_EQ(make("maxpool")->output_shape({8, 9, 7}), (Shape{8, 5, 4}));
  EXPECT_EQ(make("globalavgpool")->output_shape({8, 9, 7}), (Shape{8}));
  EXPECT_EQ(make("fc")->output_shape({30}), (Shape{12}));
  EXPECT_EQ(make("reshape")->output_shape({8, 9, 7}), (Shape{9, 7, 8}));
  EXPECT_EQ(make("reshape")->output_shape({30}), (Shape{2, 15}));
  EXPECT_EQ(make("concat")->output_shape({8, 9, 7}), (Shape{16, 9, 7}));
  EXPECT_EQ(make("split")->output_shape({8, 9, 7}), (Shape{4, 9, 7}));
  EXPECT_EQ(make("flatten")->output_shape({8, 9, 7}), (Shape{504}));
  EXPECT_EQ(make("swish")->output_shape({8, 9, 7}), (Shape{8, 9, 7}));
  EXPECT_EQ(make("channelshuffle")->output_shape({8, 9, 7}), (Shape{8, 9, 7}));
  EXPECT_EQ(make("linear")->output_shape({17, 32}), (Shape{17, 12}));  // on the last axis, to COUT
  EXPECT_EQ(make("linear")->output_shape({8, 9, 7}), (Shape{8, 9, 12}));
  for (const char* op : {"gelu", "layernorm", "softmax"}) EXPECT_EQ(make(op)->output_shape({17, 32}), (Shape{17, 32})) << op;
  // Defaults when the config leaves a key out; STRIDES 1 keeps the spatial size.
  EXPECT_EQ(make("conv", Json::object())->output_shape({64, 28, 28}), (Shape{128, 28, 28}));
  EXPECT_TRUE(make("add")->is_two_inputs());
  EXPECT_TRUE(make("concat")->is_two_inputs());
  EXPECT_FALSE(make("conv")->is_two_inputs());
}

TEST(FusionOperators, BadInputsAreOneLineErrors) {
  EXPECT_NE(test::error_of([] { make("conv")->output_shape({428}); }).find("needs a [C, H, W] input"), std::string::npos);
  EXPECT_NE(test::error_of([] { make("split")->output_shape({7, 4, 4}); }).find("must be even"), std::string::npos);
  EXPECT_NE(test::error_of([] { make("channelshuffle")->output_shape({7, 4, 4}); }).find("must be even"), std::string::npos);
  EXPECT_NE(test::error_of([] { make("channelshuffle")->output_shape({8}); }).find("needs a [C, H, W] input"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { make("conv", Json{{"COUT", 0}}); }).find("ruletest_config.yaml: COUT must be an integer in [1, "),
            std::string::npos);
  EXPECT_NE(test::error_of([] { make("relu")->output_shape({4, 0}); }).find("non-positive"), std::string::npos);
  EXPECT_NE(test::error_of([] { make("linear")->output_shape({30}); }).find("use fc for a 1-D input"), std::string::npos);
}

struct OpCase {
  std::string op;
  Shape input;
};

class EveryOperator : public ::testing::TestWithParam<OpCase> {};

TEST_P(EveryOperator, BuildsValidOnnxThatOnednnRunsWithThePredictedShape) {
  const auto& [name, input] = GetParam();
  const auto op = make(name);
  const Shape out = op->output_shape(input);
  const std::string bytes = op->build_onnx(input, 1);
  const onnx::ModelProto model = test::parse_model(bytes);
  EXPECT_EQ(fusion::real_inputs(model.graph()).size(), op->is_two_inputs() ? 2u : 1u);
  const auto inferred = test::checked_output_shapes(model);
  ASSERT_FALSE(inferred.empty());
  for (const auto& s : inferred) EXPECT_EQ(s, with_batch(1, out)) << name;
  // onednn_cpu has no ConvTranspose primitive wired in (yet); the model itself is checked above.
  if (name == "convtrans") GTEST_SKIP() << "onednn_cpu does not run ConvTranspose";
  TempDir tmp;
  const auto ran = run_on_onednn(tmp.path(), bytes, name);
  ASSERT_EQ(ran.size(), inferred.size());
  for (const auto& s : ran) EXPECT_EQ(s, with_batch(1, out)) << name;
}

INSTANTIATE_TEST_SUITE_P(
    Builtin, EveryOperator,
    ::testing::Values(OpCase{"conv", {8, 9, 7}}, OpCase{"dwconv", {8, 9, 7}}, OpCase{"convtrans", {8, 9, 7}},
                      OpCase{"bn", {8, 9, 7}}, OpCase{"globalavgpool", {8, 9, 7}}, OpCase{"maxpool", {8, 9, 7}},
                      OpCase{"avgpool", {8, 9, 7}}, OpCase{"se", {8, 9, 7}}, OpCase{"fc", {30}}, OpCase{"fc", {2, 15}},
                      OpCase{"relu", {8, 9, 7}}, OpCase{"relu", {30}}, OpCase{"relu6", {8, 9, 7}},
                      OpCase{"sigmoid", {8, 9, 7}}, OpCase{"hswish", {8, 9, 7}}, OpCase{"reshape", {8, 9, 7}},
                      OpCase{"reshape", {30}}, OpCase{"add", {8, 9, 7}}, OpCase{"concat", {8, 9, 7}},
                      OpCase{"flatten", {8, 9, 7}}, OpCase{"split", {8, 9, 7}}, OpCase{"swish", {8, 9, 7}},
                      OpCase{"channelshuffle", {8, 9, 7}}, OpCase{"linear", {17, 32}}, OpCase{"linear", {8, 9, 7}},
                      OpCase{"gelu", {17, 32}}, OpCase{"layernorm", {17, 32}}, OpCase{"softmax", {17, 32}}),
    [](const ::testing::TestParamInfo<OpCase>& info) {
      return info.param.op + "_" + std::to_string(info.param.input.size()) + "d";
    });

// The block of a BasicFusion case is the two operator models stitched together: it validates, keeps the
// extra operand of a two-input second operator as a model input, and runs.
TEST(FusionOperators, ChainedBlocksRunOnOnednn) {
  TempDir tmp;
  for (const auto& [a, b] : std::vector<std::pair<std::string, std::string>>{
           {"conv", "relu"}, {"relu", "add"}, {"split", "conv"}, {"reshape", "conv"}, {"globalavgpool", "fc"},
           {"linear", "gelu"}, {"add", "layernorm"}}) {
    const auto op1 = make(a), op2 = make(b);
    const Shape in = {8, 9, 7};
    const Shape mid = op1->output_shape(in), out = op2->output_shape(mid);
    const onnx::ModelProto block = fusion::chain(test::parse_model(op1->build_onnx(in, 1)),
                                                 test::parse_model(op2->build_onnx(mid, 1)), b);
    EXPECT_EQ(fusion::real_inputs(block.graph()).size(), (op1->is_two_inputs() ? 2u : 1u) + (op2->is_two_inputs() ? 1u : 0u))
        << a << "_" << b;
    const auto inferred = test::checked_output_shapes(block);
    // split keeps its second half as an output; op2's output comes last.
    ASSERT_EQ(inferred.size(), a == "split" ? 2u : 1u);
    EXPECT_EQ(inferred.back(), with_batch(1, out)) << a << "_" << b;
    const auto ran = run_on_onednn(tmp.path(), fusion::serialize(block), a + "_" + b);
    EXPECT_EQ(ran.back(), with_batch(1, out)) << a << "_" << b;
  }
}

TEST(FusionOperators, ChainRefusesMismatchedShapes) {
  const auto relu = make("relu");
  const std::string msg = test::error_of([&] {
    fusion::chain(test::parse_model(relu->build_onnx({8, 4, 4}, 1)), test::parse_model(relu->build_onnx({8, 5, 5}, 1)),
                  "operator relu");
  });
  EXPECT_NE(msg.find("operator relu expects an input of shape [1, 8, 5, 5]"), std::string::npos) << msg;
}

}  // namespace
}  // namespace nnmeter

namespace nnmeter {
namespace {

// Every test case of the default ruletest_config.yaml generates valid ONNX (checker + strict shape
// inference), and onednn_cpu compiles every model but those with ConvTranspose.
TEST(FusionTestcases, DefaultConfigGeneratesModelsOnednnCompiles) {
  TempDir tmp;
  const Registry registry(tmp / "home");
  create_workspace(registry, tmp / "ws", WorkspaceFlavor::Builtin, "onednn_cpu");
  const Workspace ws = Workspace::load(tmp / "ws");
  const auto config = ws.ruletest();
  ASSERT_EQ(config.basic.size(), 83u);
  auto backend = connect_backend(registry, "onednn_cpu", Json::object());
  std::vector<std::unique_ptr<TestCase>> cases;
  for (const auto& pair : config.basic) {
    const auto ops = fusion::split_basic_name("BF_" + pair);
    ASSERT_TRUE(ops) << pair;
    fusion::BasicFusionCase::Ops chain;
    for (const auto& op : *ops) chain.emplace_back(op, make(op, ws.ruletest_config));
    cases.push_back(std::make_unique<fusion::BasicFusionCase>("BF_" + pair, std::move(chain),
                                                              fusion::basic_input_shape(config, *ops), config.alpha));
  }
  cases.push_back(builtin_testcases().front().create(ws.ruletest_config));
  size_t models = 0;
  for (const auto& tc : cases) {
    for (const auto& [name, m] : tc->generate_testcase(tmp / "testcases", 1)) {
      ++models;
      const onnx::ModelProto model = test::parse_model(test::read_text(m.model));
      EXPECT_NO_THROW(test::checked_output_shapes(model)) << m.model;
      EXPECT_EQ(m.shapes.size(), fusion::real_inputs(model.graph()).size()) << m.model;
      if (m.model.string().find("convtrans") != std::string::npos) continue;
      EXPECT_NO_THROW(backend->to_backend(m.model, tmp / "work", m.model.stem().string())) << m.model;
    }
  }
  // 82 pairs (three models each), the chain concat → channelshuffle → split (four) and MON (five).
  EXPECT_EQ(models, 82u * 3 + 4 + 5);
}

TEST(FusionTestcases, ChainNamesSplitIntoTwoToFourOperators) {
  EXPECT_EQ(fusion::split_basic_name("BF_conv_relu"), (std::vector<std::string>{"conv", "relu"}));
  EXPECT_EQ(fusion::split_basic_name("BF_concat_channelshuffle_split"),
            (std::vector<std::string>{"concat", "channelshuffle", "split"}));
  EXPECT_EQ(fusion::split_basic_name("BF_a_b_c_d"), (std::vector<std::string>{"a", "b", "c", "d"}));
  for (const char* bad : {"BF_conv", "BF_conv__relu", "BF_conv_relu_", "BF__conv", "BF_a_b_c_d_e", "conv_relu", "MON"})
    EXPECT_FALSE(fusion::split_basic_name(bad)) << bad;
}

// A chain case measures each op alone and the whole chain (ShuffleNet's unit boundary here), in models
// onednn_cpu compiles, and decides by the chain form of nn-Meter's criterion.
TEST(FusionTestcases, ConcatShuffleSplitChainGeneratesFourModels) {
  TempDir tmp;
  const Json config = {{"CIN", 4}, {"HW", 16}};
  fusion::BasicFusionCase::Ops ops;
  for (const char* op : {"concat", "channelshuffle", "split"}) ops.emplace_back(op, make(op, config));
  fusion::BasicFusionCase chain("BF_concat_channelshuffle_split", std::move(ops), {4, 16, 16}, 0.5);
  EXPECT_EQ(chain.op_models(), (std::vector<std::string>{"concat", "channelshuffle", "split"}));
  const auto models = chain.generate_testcase(tmp.path(), 1);
  ASSERT_EQ(models.size(), 4u);
  const Registry registry(tmp / "home");
  auto backend = connect_backend(registry, "onednn_cpu", Json::object());
  for (const auto& [name, m] : models) {
    const onnx::ModelProto model = test::parse_model(test::read_text(m.model));
    EXPECT_NO_THROW(test::checked_output_shapes(model)) << name;
    EXPECT_NO_THROW(backend->to_backend(m.model, tmp / "work", m.model.stem().string())) << name;
  }
  EXPECT_EQ(models.at("block").shapes, (std::vector<Shape>{{4, 16, 16}, {4, 16, 16}}));  // concat's two inputs
  EXPECT_EQ(models.at("split").shapes, (std::vector<Shape>{{8, 16, 16}}));
  EXPECT_EQ(chain.run_test({{"concat", 1.0}, {"channelshuffle", 1.0}, {"split", 1.0}, {"block", 1.2}}).at("obey"), true);
  EXPECT_EQ(chain.run_test({{"concat", 1.0}, {"channelshuffle", 1.0}, {"split", 1.0}, {"block", 2.9}}).at("obey"), false);
}

}  // namespace
}  // namespace nnmeter
