// The onednn_cpu op table holds the engine's half of each runtime op (its lowering, the eltwise steps
// of activations); the front end's table (onnx_io/ops/) the other half. Every lowered op must have a
// shape rule there, and the supported set stays what models were converted with before.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "backends/onednn/ops/op.h"
#include "onnx_io/ops/op.h"

namespace nnmeter::onednn {
namespace {

TEST(OnednnOpTable, NamesAreUnique) {
  std::set<std::string> seen;
  for (const auto& op : op_table()) EXPECT_TRUE(seen.insert(op.name).second) << op.name << " is registered twice";
  EXPECT_FALSE(seen.empty());
}

TEST(OnednnOpTable, EveryLoweredOpHasAFrontEndShapeRule) {
  for (const auto& op : op_table()) {
    EXPECT_NE(op.lower, nullptr) << op.name << " has no lowering";
    const onnx_io::OpDef* rules = onnx_io::find_op(op.name);
    ASSERT_NE(rules, nullptr) << op.name << " is not in the front end's table";
    EXPECT_TRUE(rules->runs()) << op.name << " has no shape rule in onnx_io/ops/";
  }
}

TEST(OnednnOpTable, SupportedOpsAreTheConvertedSet) {
  const std::vector<std::string> expected = {
      "Abs",       "Add",       "AveragePool", "BatchNormalization", "Cast",    "Clip",      "Concat",
      "Conv",      "Div",       "Dropout",     "Elu",                "Exp",     "Flatten",   "Gather",
      "Gemm",      "GlobalAveragePool", "GlobalMaxPool", "HardSigmoid", "HardSwish", "Identity", "LeakyRelu",
      "MatMul",    "Max",       "MaxPool",     "Min",                "Mul",     "Neg",       "Pad",
      "ReduceMean", "Relu",     "Reshape",     "Sigmoid",            "Slice",   "Softmax",   "Split",
      "Sqrt",      "Squeeze",   "Sub",         "Sum",                "Tanh",    "Transpose", "Unsqueeze"};
  EXPECT_EQ(supported_runtime_ops(), expected);
  EXPECT_TRUE(std::is_sorted(supported_runtime_ops().begin(), supported_runtime_ops().end()));
}

TEST(OnednnOpTable, ActivationsAreEltwiseChains) {
  for (const char* name : {"Relu", "Clip", "HardSigmoid", "Sigmoid", "Neg"}) {
    const OpDef* op = find_op(name);
    ASSERT_NE(op, nullptr);
    EXPECT_NE(op->eltwise, nullptr) << name;
  }
  EXPECT_EQ(find_op("Add")->eltwise, nullptr);
}

TEST(OnednnOpTable, LayoutPickers) {
  std::vector<std::string> pickers;
  for (const auto& op : op_table())
    if (op.picks_layout) pickers.push_back(op.name);
  std::sort(pickers.begin(), pickers.end());
  EXPECT_EQ(pickers, (std::vector<std::string>{"Conv", "Gemm", "MatMul"}));
}

}  // namespace
}  // namespace nnmeter::onednn
