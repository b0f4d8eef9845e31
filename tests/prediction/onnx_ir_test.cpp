// ONNX → IR with static shapes (shape inference, constant folding by construction, --input-shape) and
// nn-Meter's IR json.
#include "prediction/onnx_model.h"
#include "networks/architectures.h"
#include "prediction/prediction_fixtures.h"

namespace nnmeter {
namespace {

using networks::LayerBuilder;
using test::error_of;

const IrNode& node_of_type(const ModelIr& ir, const std::string& type) {
  for (const auto& n : ir.nodes)
    if (n.type == type) return n;
  throw std::runtime_error("no node " + type);
}

// conv → Shape → Gather → Unsqueeze → Concat → Reshape → Gemm, as PyTorch's exporter writes x.view(b, -1).
onnx::ModelProto view_model() {
  LayerBuilder b("view");
  const auto x = b.relu(b.conv(b.input("x", {1, 3, 32, 32}), 16, 3, 2));
  const auto shape = b.node("Shape", {x}, {4});
  const auto batch = b.node("Gather", {shape, b.constant_ints({0})}, {1}, {networks::attr("axis", int64_t{0})});
  const auto target = b.node("Concat", {batch, b.constant_ints({-1})}, {2}, {networks::attr("axis", int64_t{0})});
  const auto flat = b.node("Reshape", {x, target}, {1, 16 * 16 * 16});
  b.output(b.gemm(flat, 10));
  return b.model();
}

// The same model with a symbolic batch dimension on its input (and no shapes for anything else).
onnx::ModelProto dynamic_batch(onnx::ModelProto m) {
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  m.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_param("N");
  return m;
}

TEST(OnnxIr, ShapeSubgraphsResolveAndAreNotNodes) {
  const ModelIr ir = onnx_to_ir(view_model(), "view");
  std::vector<std::string> types;
  for (const auto& n : ir.nodes) types.push_back(n.type);
  EXPECT_EQ(types, (std::vector<std::string>{"Placeholder", "Conv", "Relu", "Reshape", "Gemm"}));
  EXPECT_EQ(node_of_type(ir, "Reshape").output_shapes, std::vector<Shape>{Shape({1, 4096})});
  const IrNode& conv = node_of_type(ir, "Conv");
  EXPECT_EQ(conv.input_shapes, std::vector<Shape>{Shape({1, 3, 32, 32})});
  EXPECT_EQ(conv.output_shapes, std::vector<Shape>{Shape({1, 16, 16, 16})});
  EXPECT_EQ(conv.attr["weight_shape"], Json({16, 3, 3, 3}));
  EXPECT_EQ(conv.inbounds, std::vector<std::string>{"x"});
  EXPECT_EQ(ir.nodes[0].outbounds, std::vector<std::string>{conv.name});
  EXPECT_EQ(node_of_type(ir, "Gemm").attr["weight_shape"], Json({10, 4096}));
}

// Bounds computed at run time the way ONNX 1.12 cannot follow (no data propagation through Div, no Expand in
// this file's own inference): the chain is evaluated at load and leaves the graph, and every node that stays is
// in the IR once (the nodes are ordered after folding, not before).
TEST(OnnxIr, FoldedChainsLeaveTheGraphAndTheRestIsInTheIrOnce) {
  LayerBuilder b("chunk");
  const auto x = b.relu(b.input("x", {1, 8, 4, 4}));
  const auto channels = b.node("Gather", {b.node("Shape", {x}, {4}), b.constant_ints({1})}, {1}, {networks::attr("axis", int64_t{0})});
  const auto half = b.node("Expand", {b.node("Div", {channels, b.constant_ints({2})}, {1}), b.constant_ints({1})}, {1});
  const auto left = b.node("Slice", {x, b.constant_ints({0}), half, b.constant_ints({1})}, {1, 4, 4, 4});
  b.output(b.relu(left));
  const ModelIr ir = onnx_to_ir(b.model(), "chunk");
  std::vector<std::string> types;
  for (const auto& n : ir.nodes) types.push_back(n.type);
  EXPECT_EQ(types, (std::vector<std::string>{"Placeholder", "Relu", "Slice", "Relu"}));
  EXPECT_EQ(node_of_type(ir, "Slice").output_shapes, std::vector<Shape>{Shape({1, 4, 4, 4})});
}

TEST(OnnxIr, DynamicInputsNeedInputShape) {
  const auto m = dynamic_batch(view_model());
  const std::string err = error_of([&] { onnx_to_ir(m, "dyn.onnx"); });
  EXPECT_NE(err.find("'x'"), std::string::npos) << err;
  EXPECT_NE(err.find("--input-shape x:"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos);

  const ModelIr ir = onnx_to_ir(m, "dyn.onnx", {{"x", {2, 3, 32, 32}}});
  EXPECT_EQ(node_of_type(ir, "Conv").output_shapes[0], Shape({2, 16, 16, 16}));
  EXPECT_EQ(node_of_type(ir, "Reshape").output_shapes[0], Shape({2, 4096}));
  // At 64 x 64 the flattened features no longer fit the classifier: refused as the engines refuse it.
  EXPECT_NE(error_of([&] { onnx_to_ir(m, "dyn.onnx", {{"x", {2, 3, 64, 64}}}); }).find("inner dims of [2,16384] and [10,4096]"),
            std::string::npos);

  EXPECT_NE(error_of([&] { onnx_to_ir(m, "dyn.onnx", {{"image", {1, 3, 8, 8}}}); }).find("not an input"), std::string::npos);
  EXPECT_NE(error_of([&] { onnx_to_ir(view_model(), "v", {{"x", {1, 3, 0, 8}}}); }).find("positive"), std::string::npos);
}

TEST(OnnxIr, ParseInputShapeFlag) {
  EXPECT_EQ(parse_input_shape("input.1:1x3x224x224"), (std::pair<std::string, Shape>{"input.1", {1, 3, 224, 224}}));
  for (const char* bad : {"x", "x:", ":1x3", "x:1xx3", "x:1x-3", "x:0x3", "x:axb"})
    EXPECT_NE(error_of([&] { parse_input_shape(bad); }).find("--input-shape"), std::string::npos) << bad;
}

TEST(OnnxIr, FileReaderSkipsWeightsButKeepsTheGraph) {
  test::TempDir dir;
  const auto zm = networks::build("mobilenet_v2", 96);
  const fs::path file = dir / "mbv2.onnx";
  test::write_text(file, zm.model.SerializeAsString());
  const ModelIr from_file = load_onnx_ir(file);
  const ModelIr in_memory = onnx_to_ir(zm.model, file.string());
  ASSERT_EQ(from_file.nodes.size(), in_memory.nodes.size());
  for (size_t i = 0; i < from_file.nodes.size(); ++i) {
    EXPECT_EQ(from_file.nodes[i].name, in_memory.nodes[i].name);
    EXPECT_EQ(from_file.nodes[i].output_shapes, in_memory.nodes[i].output_shapes);
    EXPECT_EQ(from_file.nodes[i].attr, in_memory.nodes[i].attr);
  }
  // Clip's bounds are read from its constant inputs; detection needs them to see relu6.
  EXPECT_EQ(node_of_type(from_file, "Clip").attr["max"], 6.0);
}

TEST(OnnxIr, NotOnnxIsOneLineError) {
  test::TempDir dir;
  test::write_text(dir / "bad.onnx", "this is not a protobuf\n");
  const std::string err = error_of([&] { load_onnx_ir(dir / "bad.onnx"); });
  EXPECT_NE(err.find("not an ONNX model"), std::string::npos) << err;
  test::write_text(dir / "empty.onnx", "");
  EXPECT_NE(error_of([&] { load_onnx_ir(dir / "empty.onnx"); }).find("not an ONNX model"), std::string::npos);
  EXPECT_NE(error_of([&] { load_onnx_ir(dir / "missing.onnx"); }).find("missing.onnx"), std::string::npos);
}

TEST(IrJson, RoundTripIsExactAndShapesAreNhwc) {
  const auto zm = networks::build("shufflenet_v2_x1_0", 64);
  const ModelIr ir = onnx_to_ir(zm.model, "shufflenet");
  const Json j = ir_to_nnmeter_json(ir);
  const IrNode& conv = node_of_type(ir, "Conv");
  EXPECT_EQ(j[conv.name]["attr"]["input_shape"], Json({{1, 64, 64, 3}}));
  EXPECT_EQ(j[conv.name]["attr"]["type"], "Conv");
  EXPECT_EQ(j[conv.name]["outbounds"], Json(conv.outbounds));

  // Through text, as get_ir writes it.
  const ModelIr back = ir_from_nnmeter_json(Json::parse(j.dump(4)), "ir.json");
  ASSERT_EQ(back.nodes.size(), ir.nodes.size());
  for (size_t i = 0; i < ir.nodes.size(); ++i) {
    EXPECT_EQ(back.nodes[i].name, ir.nodes[i].name);
    EXPECT_EQ(back.nodes[i].type, ir.nodes[i].type);
    EXPECT_EQ(back.nodes[i].inbounds, ir.nodes[i].inbounds);
    EXPECT_EQ(back.nodes[i].outbounds, ir.nodes[i].outbounds);
    EXPECT_EQ(back.nodes[i].input_shapes, ir.nodes[i].input_shapes);
    EXPECT_EQ(back.nodes[i].output_shapes, ir.nodes[i].output_shapes);
    EXPECT_EQ(back.nodes[i].attr, ir.nodes[i].attr);
  }
  const auto a = detect_kernels(ir, test::cpu_rules()), b = detect_kernels(back, test::cpu_rules());
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].config, b[i].config);
  }
}

TEST(IrJson, WithoutOrderNodesAreSortedTopologically) {
  const ModelIr ir = onnx_to_ir(view_model(), "view");
  Json j = ir_to_nnmeter_json(ir);
  for (auto& [name, node] : j.items()) node.erase("order");
  const ModelIr back = ir_from_nnmeter_json(j, "nn-meter.json");
  std::vector<std::string> names;
  for (const auto& n : back.nodes) names.push_back(n.name);
  std::vector<std::string> expected;
  for (const auto& n : ir.nodes) expected.push_back(n.name);
  EXPECT_EQ(names, expected);  // a chain has one topological order
  EXPECT_NE(error_of([] { ir_from_nnmeter_json(Json::array(), "a.json"); }).find("a.json"), std::string::npos);
  EXPECT_NE(error_of([] { ir_from_nnmeter_json({{"n", {{"inbounds", {"ghost"}}, {"attr", {{"type", "Relu"}}}}}}, "b.json"); })
                .find("ghost"),
            std::string::npos);
}

}  // namespace
}  // namespace nnmeter
