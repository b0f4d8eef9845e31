// The project's own shape inference against ONNX's (with data propagation), which it replaces for the ops
// it knows and falls back to for everything else.
#include "prediction/onnx_model.h"
#include "networks/architectures.h"
#include "prediction/internal.h"
#include "prediction/prediction_fixtures.h"

namespace nnmeter {
namespace {

using networks::LayerBuilder;

// Every shape ONNX infers, inferred the same; nullopt-free (the zoo needs no fallback).
void expect_same_as_onnx(const onnx::ModelProto& model, const std::string& label) {
  const auto order = prediction::topological_nodes(model.graph(), label);
  const auto direct = prediction::infer_shapes_directly(model.graph(), order);
  ASSERT_TRUE(direct.has_value()) << label << " needed ONNX's inference";
  onnx::ModelProto copy = model;
  const prediction::ShapeMap onnx_shapes = prediction::infer_shapes_with_onnx(copy, label);
  ASSERT_FALSE(onnx_shapes.empty());
  for (const auto& [name, shape] : onnx_shapes) {
    auto it = direct->find(name);
    ASSERT_NE(it, direct->end()) << label << ": no shape for " << name;
    EXPECT_EQ(it->second, shape) << label << ": tensor " << name;
  }
  for (const auto& node : model.graph().node())
    for (const auto& out : node.output())
      EXPECT_TRUE(out.empty() || direct->count(out)) << label << ": " << node.op_type() << " output " << out;
}

TEST(ShapeInference, EqualsOnnxOverTheModelZoo) {
  for (const auto& name : networks::architectures())
    for (auto [res, width] : std::vector<std::pair<int64_t, double>>{{224, 0.25}, {113, 0.5}})
      expect_same_as_onnx(networks::build(name, res, width).model, name + "@" + std::to_string(res));
}

TEST(ShapeInference, CeilModeAndPaddedPoolingEqualOnnx) {
  LayerBuilder b("pools");
  auto x = b.input("x", {1, 8, 17, 17});
  x = b.maxpool(x, 3, 2, 0, true);
  x = b.avgpool(x, 3, 2, 1, true, true);
  x = b.conv(x, 8, 5, 3, 2, 1, true, 2);
  b.output(b.reduce_mean_hw(x, false));
  expect_same_as_onnx(b.model(), "pools");
}

TEST(ShapeInference, AutoPadIsInferredDirectly) {
  LayerBuilder b("same_pad");
  b.output(b.conv(b.input("x", {1, 3, 15, 15}), 4, 3, 2));
  onnx::ModelProto m = b.model();
  auto& attrs = *m.mutable_graph()->mutable_node(0)->mutable_attribute();
  for (auto& a : attrs)
    if (a.name() == "pads") a = networks::attr("auto_pad", std::string("SAME_UPPER"));
  const auto order = prediction::topological_nodes(m.graph(), "same_pad");
  const auto direct = prediction::infer_shapes_directly(m.graph(), order);
  ASSERT_TRUE(direct.has_value());
  EXPECT_EQ(direct->at(m.graph().output(0).name()), (Shape{1, 4, 8, 8}));
  expect_same_as_onnx(m, "same_pad");
}

TEST(ShapeInference, WhatItDoesNotHandleFallsBackToOnnx) {
  LayerBuilder b("lrn");
  const auto x = b.input("x", {1, 3, 15, 15});
  b.output(b.node("LRN", {x}, {1, 3, 15, 15}, {networks::attr("size", int64_t{3})}));
  const onnx::ModelProto m = b.model();
  const auto order = prediction::topological_nodes(m.graph(), "lrn");
  EXPECT_FALSE(prediction::infer_shapes_directly(m.graph(), order).has_value());
  const ModelIr ir = onnx_to_ir(m, "lrn");
  ASSERT_EQ(ir.nodes.size(), 2u);
  EXPECT_EQ(ir.nodes[1].output_shapes[0], (Shape{1, 3, 15, 15}));
}

}  // namespace
}  // namespace nnmeter
