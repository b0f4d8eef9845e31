// The front end's op table is the one list the loader dispatches through: every entry runs or folds,
// the runtime set, the parameter inputs and the load-time-only ops stay what models were loaded with
// before the table moved out of onednn_cpu.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "onnx_io/ops/op.h"

namespace nnmeter::onnx_io {
namespace {

TEST(OnnxOpTable, NamesAreUnique) {
  std::set<std::string> seen;
  for (const auto& op : op_table()) EXPECT_TRUE(seen.insert(op.name).second) << op.name << " is registered twice";
  EXPECT_FALSE(seen.empty());
}

TEST(OnnxOpTable, EveryEntryRunsOrFolds) {
  for (const auto& op : op_table()) {
    EXPECT_TRUE(op.runs() || op.fold) << op.name << " is neither run nor folded";
    if (!op.runs()) {
      EXPECT_TRUE(op.attributes.empty()) << op.name << " declares runtime attributes but never runs";
      EXPECT_EQ(op.parameters_from, -1) << op.name;
    }
  }
}

TEST(OnnxOpTable, RuntimeOps) {
  const std::vector<std::string> expected = {
      "Abs",       "Add",       "AveragePool", "BatchNormalization", "Cast",    "Clip",      "Concat",
      "Conv",      "Div",       "Dropout",     "Elu",                "Erf",     "Exp",       "Flatten",
      "Gather",    "Gemm",      "GlobalAveragePool", "GlobalMaxPool", "HardSigmoid", "HardSwish", "Identity",
      "LayerNormalization", "LeakyRelu", "MatMul", "Max",           "MaxPool", "Min",       "Mul",
      "Neg",       "Pad",       "Pow",         "ReduceMean",         "Relu",    "Reshape",   "Sigmoid",
      "Slice",     "Softmax",   "Split",       "Sqrt",               "Squeeze", "Sub",       "Sum",
      "Tanh",      "Transpose", "Unsqueeze"};
  EXPECT_EQ(runtime_ops(), expected);
}

TEST(OnnxOpTable, LoadTimeOnlyOps) {
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

TEST(OnnxOpTable, ParameterInputs) {
  const std::set<std::string> with_parameters = {"BatchNormalization", "Clip",    "Conv",  "Gather", "Gemm",
                                                 "LayerNormalization", "Pad",     "Pow",   "ReduceMean", "Reshape",
                                                 "Slice",              "Split",   "Squeeze", "Unsqueeze"};
  for (const auto& op : op_table()) {
    EXPECT_FALSE(is_parameter_input(op.name, 0)) << op.name;
    EXPECT_EQ(is_parameter_input(op.name, 1), with_parameters.count(op.name) == 1) << op.name;
  }
  EXPECT_FALSE(is_parameter_input("NoSuchOp", 1));
}

}  // namespace
}  // namespace nnmeter::onnx_io
