// ONNX models a hostile user could hand to get_ir / predict. Each must end in one Error naming the file
// and what is wrong, raised before ONNX's shape inference (which divides by strides and trusts schemas) can
// crash on it; resource limits hold; conversion stays linear in the number of nodes.
#include <fcntl.h>
#include <algorithm>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include "prediction/onnx_model.h"
#include "prediction/prediction_fixtures.h"

namespace nnmeter::test {
namespace {

using networks::attr;

// conv (group 2) → relu → maxpool, every attribute explicit.
onnx::ModelProto conv_pool_model() {
  networks::LayerBuilder b("hostile");
  const std::string x = b.input("x", {1, 8, 16, 16});
  b.output(b.maxpool(b.relu(b.conv(x, 8, 3, 1, -1, 2)), 2, 2));
  return b.model();
}

onnx::NodeProto& node_of(onnx::ModelProto& m, const std::string& op) {
  for (auto& n : *m.mutable_graph()->mutable_node())
    if (n.op_type() == op) return n;
  throw std::runtime_error("no " + op + " node");
}

void set_attr(onnx::NodeProto& n, const onnx::AttributeProto& a) {
  for (auto& existing : *n.mutable_attribute())
    if (existing.name() == a.name()) {
      existing = a;
      return;
    }
  *n.add_attribute() = a;
}

onnx::TensorShapeProto& input_shape(onnx::ModelProto& m) {
  return *m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
}

std::string conversion_error(const onnx::ModelProto& m) {
  return error_of([&] { onnx_to_ir(m, "hostile.onnx"); });
}

void expect_error(const onnx::ModelProto& m, const std::string& expected, const std::string& label) {
  const std::string e = conversion_error(m);
  EXPECT_TRUE(contains(e, expected)) << label << ": " << e;
  EXPECT_TRUE(contains(e, "hostile.onnx")) << label << ": " << e;
  EXPECT_FALSE(contains(e, "\n")) << label << ": " << e;
}

onnx::ModelProto relu_chain(int length, const std::vector<std::pair<int, std::string>>& names = {}) {
  networks::LayerBuilder b("chain");
  std::string x = b.input("x", {1, 8, 4, 4});
  for (int i = 0; i < length; ++i) x = b.relu(x);
  b.output(x);
  onnx::ModelProto m = b.model();
  for (auto& n : *m.mutable_graph()->mutable_node()) n.clear_name();
  for (const auto& [index, name] : names) m.mutable_graph()->mutable_node(index)->set_name(name);
  return m;
}

TEST(OnnxHardening, TheReferenceModelConverts) {
  EXPECT_EQ(onnx_to_ir(conv_pool_model(), "hostile.onnx").nodes.size(), 4u);
}

// Each would divide by zero or loop in ONNX's convPoolShapeInference (zero strides: SIGFPE).
TEST(OnnxHardening, NonPositiveWindowAttributesAreRejected) {
  struct Case {
    std::string op, name;
    std::vector<int64_t> values;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"Conv", "strides", {0, 0}, "(Conv) of hostile.onnx has strides [0,0]; each must be from 1 to 2147483647"},
      {"MaxPool", "strides", {0, 1}, "(MaxPool) of hostile.onnx has strides [0,1]"},
      {"Conv", "strides", {-2, 1}, "strides [-2,1]"},
      {"Conv", "dilations", {1, 0}, "dilations [1,0]"},
      {"MaxPool", "dilations", {-1, 1}, "dilations [-1,1]"},
      {"Conv", "kernel_shape", {0, 3}, "kernel_shape [0,3]"},
      {"MaxPool", "kernel_shape", {2, 0}, "kernel_shape [2,0]"},
      {"Conv", "pads", {-1, 1, 1, 1}, "pads [-1,1,1,1]; each must be from 0 to"},
      // Large enough to overflow the kernel extent (kernel - 1) · dilation.
      {"Conv", "dilations", {1, int64_t{1} << 62}, "dilations [1,4611686018427387904]; each must be from 1 to 2147483647"},
  };
  for (const Case& c : cases) {
    onnx::ModelProto m = conv_pool_model();
    set_attr(node_of(m, c.op), attr(c.name, c.values));
    expect_error(m, c.expected, c.op + " " + c.name);
  }
  onnx::ModelProto same = conv_pool_model();
  onnx::AttributeProto pad;
  pad.set_name("auto_pad");
  pad.set_type(onnx::AttributeProto::STRING);
  pad.set_s("SAME_UPPER");
  set_attr(node_of(same, "MaxPool"), pad);
  set_attr(node_of(same, "MaxPool"), attr("strides", std::vector<int64_t>{0, 0}));
  expect_error(same, "strides [0,0]", "auto_pad with zero strides");
}

// ONNX's convPoolShapeInference indexes the per-axis attributes and the input's dims by the window's length
// unchecked: a window longer than them read out of bounds (a fuzzing find, kept in fuzz/corpus).
TEST(OnnxHardening, WindowsMustMatchTheirAttributesAndInputRank) {
  onnx::ModelProto pool = conv_pool_model();
  set_attr(node_of(pool, "MaxPool"), attr("strides", std::vector<int64_t>{2, 2, 2}));
  expect_error(pool, "(MaxPool) of hostile.onnx has a 2-D window but 3 strides: give 2 values", "pool strides");
  onnx::ModelProto pads = conv_pool_model();
  set_attr(node_of(pads, "Conv"), attr("pads", std::vector<int64_t>{1, 1}));
  expect_error(pads, "has a 2-D window but 2 pads: give 4 values", "conv pads");

  // A 3-D weight window (no kernel_shape) behind a Relu, so only the input's rank is wrong: our own shape
  // inference stops instead of handing the node to ONNX's.
  networks::LayerBuilder b("hostile");
  b.output(b.relu(b.conv(b.relu(b.input("x", {1, 8, 16, 16})), 8, 3, 1, -1, 1)));
  onnx::ModelProto deep = b.model();
  onnx::NodeProto& conv = node_of(deep, "Conv");
  for (auto& t : *deep.mutable_graph()->mutable_initializer())
    if (t.name() == conv.input(1)) t.add_dims(3);
  auto& attrs = *conv.mutable_attribute();
  attrs.erase(std::remove_if(attrs.begin(), attrs.end(), [](const auto& a) { return a.name() == "kernel_shape"; }),
              attrs.end());
  set_attr(conv, attr("strides", std::vector<int64_t>{1, 1, 1}));
  set_attr(conv, attr("dilations", std::vector<int64_t>{1, 1, 1}));
  set_attr(conv, attr("pads", std::vector<int64_t>{1, 1, 1, 1, 1, 1}));
  expect_error(deep, "(Conv) has a weight of rank 5 for an input of rank 4 in hostile.onnx", "deep conv");
}

TEST(OnnxHardening, GroupsMustSplitTheChannels) {
  onnx::ModelProto zero = conv_pool_model();
  set_attr(node_of(zero, "Conv"), attr("group", int64_t{0}));
  expect_error(zero, "has group 0; each must be from 1", "group 0");
  onnx::ModelProto three = conv_pool_model();
  set_attr(node_of(three, "Conv"), attr("group", int64_t{3}));
  expect_error(three, "group 3", "group 3 of 8 channels");
  onnx::ModelProto negative = conv_pool_model();
  set_attr(node_of(negative, "Conv"), attr("group", int64_t{-2}));
  expect_error(negative, "group -2", "negative group");
}

TEST(OnnxHardening, ZeroSizedTensorsAreRejected) {
  onnx::ModelProto input = conv_pool_model();
  input_shape(input).mutable_dim(2)->set_dim_value(0);
  expect_error(input, "input 'x' of hostile.onnx has shape [1,8,0,16]: every dim must be >= 1", "zero-sized input");
  // An empty slice in the middle of the graph: only ONNX's inference knows Slice, and it accepts it.
  networks::LayerBuilder b("slice");
  const std::string x = b.input("x", {1, 8, 4, 4});
  const std::string empty = b.node("Slice", {x, b.constant_ints({2}), b.constant_ints({2}), b.constant_ints({1})}, {1, 0, 4, 4});
  b.output(b.relu(empty));
  expect_error(b.model(), "has shape [1,0,4,4]: every dim must be >= 1", "empty slice");
}

// What the engines refuse, prediction refuses too (ONNX 1.12 lets Gemm and Reshape through).
TEST(OnnxHardening, OperandsMustFitAsTheEnginesCheck) {
  networks::LayerBuilder gemm("hostile");
  gemm.output(gemm.node("Gemm", {gemm.input("x", {1, 16}), gemm.random_weights({10, 8}, 0.1f)}, {1, 10},
                        {attr("transB", int64_t{1})}));
  expect_error(gemm.model(), "the inner dims of [1,16] and [10,8] differ (16 and 8)", "gemm");
  networks::LayerBuilder matmul("hostile");
  matmul.output(matmul.node("MatMul", {matmul.input("x", {1, 4, 16}), matmul.random_weights({8, 10}, 0.1f)}, {1, 4, 10}));
  expect_error(matmul.model(), "MatMul_1): [ShapeInferenceError] Incompatible dimensions", "matmul");  // ONNX checks this one
  networks::LayerBuilder reshape("hostile");
  reshape.output(reshape.node("Reshape", {reshape.input("x", {1, 16}), reshape.constant_ints({1, 15})}, {1, 15}));
  expect_error(reshape.model(), "reshapes 16 elements [1,16] into 15 elements [1,15]", "reshape");
  networks::LayerBuilder softmax("hostile");
  softmax.output(softmax.softmax(softmax.input("x", {1, 4, 16}), 3));
  expect_error(softmax.model(), "axis 3 is outside the input's rank 3 ([1,4,16])", "softmax");
  networks::LayerBuilder ln("hostile", 17);
  const auto x = ln.input("x", {1, 4, 16});
  ln.output(ln.node("LayerNormalization", {x, ln.random_weights({16}, 0.1f), ln.random_weights({16}, 0.1f)}, {1, 4, 16},
                    {attr("axis", int64_t{5})}));
  expect_error(ln.model(), "(LayerNormalization) of hostile.onnx: axis 5 is outside the input's rank 3", "layernorm");
}

TEST(OnnxHardening, OpsetMustBeOneOnnxKnows) {
  onnx::ModelProto future = conv_pool_model();
  future.mutable_opset_import(0)->set_version(99);
  expect_error(future, "hostile.onnx uses ONNX opset 99; nn-meter reads opsets 1 to 17", "opset 99");
  onnx::ModelProto none = conv_pool_model();
  none.clear_opset_import();
  expect_error(none, "declares no opset for the ONNX operators", "no opset");
  onnx::ModelProto zero = conv_pool_model();
  zero.mutable_opset_import(0)->set_version(0);
  expect_error(zero, "declares no opset", "opset 0");
}

TEST(OnnxHardening, EmptyGraphsHaveNoLatency) {
  onnx::ModelProto empty = conv_pool_model();
  empty.mutable_graph()->clear_node();
  expect_error(empty, "has an empty graph (no nodes)", "no nodes");
  onnx::ModelProto constants = conv_pool_model();
  auto* g = constants.mutable_graph();
  g->clear_node();
  auto* node = g->add_node();
  node->set_op_type("Constant");
  node->add_output("c");
  *node->add_attribute() = attr("value_ints", std::vector<int64_t>{1, 2, 3});
  g->mutable_output(0)->set_name("c");
  expect_error(constants, "computes nothing at run time", "only constants");
}

TEST(OnnxHardening, SizesBeyondTheLimitsAreRejected) {
  onnx::ModelProto big = conv_pool_model();
  input_shape(big).mutable_dim(2)->set_dim_value(100000);
  input_shape(big).mutable_dim(3)->set_dim_value(100000);
  expect_error(big, fmt::format("more than {} elements", kMaxTensorElements), "huge input");
  onnx::ModelProto overflow = conv_pool_model();
  input_shape(overflow).mutable_dim(2)->set_dim_value(int64_t{1} << 62);
  input_shape(overflow).mutable_dim(3)->set_dim_value(int64_t{1} << 62);
  expect_error(overflow, "elements", "dims whose product overflows");
  onnx::ModelProto deep = conv_pool_model();
  for (size_t i = 0; i < kMaxTensorRank; ++i) input_shape(deep).add_dim()->set_dim_value(1);
  expect_error(deep, fmt::format("rank {}; nn-meter reads tensors of rank <= {}", kMaxTensorRank + 4, kMaxTensorRank), "rank");
  onnx::ModelProto weight = conv_pool_model();
  auto* w = weight.mutable_graph()->mutable_initializer(0);
  w->set_dims(0, int64_t{1} << 40);
  w->set_dims(1, int64_t{1} << 40);
  expect_error(weight, "initializer", "huge initializer dims");
}

TEST(OnnxHardening, NodeCountIsLimited) {
  const onnx::ModelProto m = relu_chain(static_cast<int>(kMaxModelNodes) + 1);
  expect_error(m, fmt::format("has more than {} nodes", kMaxModelNodes), "too many nodes");
}

// Ops only ONNX's inference knows are checked against their schemas first: its inference functions
// assume the input counts the schema declares.
TEST(OnnxHardening, NodesOutsideTheirSchemaAreRejectedBeforeOnnxInference) {
  networks::LayerBuilder b("schema");
  const std::string x = b.input("x", {1, 8, 4, 4});
  b.output(b.relu(b.node("Slice", {x}, {1, 8, 4, 4})));
  onnx::ModelProto m = b.model();
  m.mutable_graph()->set_name("schema");
  const std::string e = error_of([&] { onnx_to_ir(m, "hostile.onnx"); });
  EXPECT_TRUE(contains(e, "(Slice) of hostile.onnx is not valid ONNX")) << e;
  EXPECT_FALSE(contains(e, "\n")) << e;
}

TEST(OnnxHardening, SubgraphsAreCheckedToo) {
  onnx::ModelProto inner = conv_pool_model();
  set_attr(node_of(inner, "Conv"), attr("strides", std::vector<int64_t>{0, 0}));
  networks::LayerBuilder b("outer");
  const std::string x = b.input("x", {1, 8, 16, 16});
  onnx::ModelProto m = b.model();
  auto* cond = m.mutable_graph()->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->add_int32_data(1);
  auto* node = m.mutable_graph()->add_node();
  node->set_op_type("If");
  node->add_input("cond");
  node->add_output("y");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = node->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = inner.graph();
  }
  *m.mutable_graph()->add_output() = inner.graph().output(0);
  m.mutable_graph()->mutable_output(0)->set_name("y");
  expect_error(m, "strides [0,0]", "a zero-stride Conv inside an If");
}

TEST(OnnxHardening, FilesBeyondTheSizeLimitAreNotRead) {
  TempDir dir;
  const fs::path file = dir / "huge.onnx";
  // Sparse: the size is what is checked, no disk is used.
  const int fd = ::open(file.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kMaxModelFileBytes) + 1), 0);
  ::close(fd);
  const std::string e = error_of([&] { load_onnx_ir(file); });
  EXPECT_TRUE(contains(e, "huge.onnx is 2147483648 bytes, more than the 2147483647")) << e;
}

// Opening a FIFO for reading waited for a writer that never comes.
TEST(OnnxHardening, FifosAreNotWaitedOn) {
  TempDir dir;
  const fs::path fifo = dir / "pipe.onnx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(contains(error_of([&] { load_onnx_ir(fifo); }), "pipe.onnx: not a regular file"));
}

// Unnamed nodes get their op type and the first free suffix; explicit names keep theirs.
TEST(OnnxHardening, GeneratedNamesStayUniqueAndStable) {
  const ModelIr ir = onnx_to_ir(relu_chain(5, {{2, "Relu_2"}, {4, "x"}}), "chain");
  std::vector<std::string> names;
  for (const auto& n : ir.nodes) names.push_back(n.name);
  EXPECT_EQ(names, (std::vector<std::string>{"x", "Relu", "Relu_1", "Relu_2", "Relu_3", "x_1"}));
}

// A fuzzed chain (20,000 unnamed Relus, 457 KB): converting it took 29 s and 4 GB while names were
// found by retrying every suffix. Here it only has to convert, completely and in order.
TEST(OnnxHardening, LongChainsConvert) {
  const ModelIr ir = onnx_to_ir(relu_chain(20000), "chain");
  ASSERT_EQ(ir.nodes.size(), 20001u);
  EXPECT_EQ(ir.nodes.back().name, "Relu_19999");
  EXPECT_EQ(ir.nodes[1].outbounds, std::vector<std::string>{"Relu_1"});
}

}  // namespace
}  // namespace nnmeter::test
