// The onednn_cpu op table is the one list every stage dispatches through: each runtime op must be
// complete (shape rule and lowering), every entry must be reachable, and the supported set, the
// parameter inputs and the load-time-only ops stay what models were converted with before.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {
namespace {

TEST(OnednnOpTable, NamesAreUnique) {
  std::set<std::string> seen;
  for (const auto& op : op_table()) EXPECT_TRUE(seen.insert(op.name).second) << op.name << " is registered twice";
  EXPECT_FALSE(seen.empty());
}

TEST(OnednnOpTable, RuntimeOpsHaveShapeRuleAndLowering) {
  for (const auto& name : supported_runtime_ops()) {
    const OpDef* op = find_op(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_NE(op->shape, nullptr) << name << " has no shape rule";
    EXPECT_NE(op->lower, nullptr) << name << " has no lowering";
  }
}

TEST(OnednnOpTable, EveryEntryRunsOrFolds) {
  for (const auto& op : op_table()) {
    EXPECT_TRUE(op.lower || op.fold) << op.name << " is neither run nor folded";
    EXPECT_EQ(op.shape != nullptr, op.lower != nullptr) << op.name << ": shape rule and lowering go together";
    if (!op.runs()) {
      EXPECT_TRUE(op.attributes.empty()) << op.name << " declares runtime attributes but never runs";
      EXPECT_EQ(op.eltwise, nullptr) << op.name;
      EXPECT_EQ(op.parameters_from, -1) << op.name;
    }
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

TEST(OnednnOpTable, LoadTimeOnlyOps) {
  std::vector<std::string> folded_only;
  for (const auto& op : op_table())
    if (!op.runs()) folded_only.push_back(op.name);
  std::sort(folded_only.begin(), folded_only.end());
  const std::vector<std::string> expected = {"Ceil",  "Constant", "ConstantOfShape", "Equal", "Expand",
                                             "Floor", "Range",    "Shape",           "Size",  "Where"};
  EXPECT_EQ(folded_only, expected);
  for (const auto& op : op_table())
    EXPECT_EQ(op.folds_from_shapes, op.name == "Shape" || op.name == "Size") << op.name;
}

TEST(OnednnOpTable, ParameterInputs) {
  const std::set<std::string> with_parameters = {"BatchNormalization", "Clip",  "Conv",      "Gather", "Gemm", "Pad",
                                                 "ReduceMean",         "Reshape", "Slice", "Split", "Squeeze", "Unsqueeze"};
  for (const auto& op : op_table()) {
    EXPECT_FALSE(is_parameter_input(op.name, 0)) << op.name;
    EXPECT_EQ(is_parameter_input(op.name, 1), with_parameters.count(op.name) == 1) << op.name;
  }
  EXPECT_FALSE(is_parameter_input("NoSuchOp", 1));
}

TEST(OnednnOpTable, ActivationsAreEltwiseChains) {
  for (const auto& op : op_table()) EXPECT_TRUE(!op.eltwise || op.runs()) << op.name;
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
