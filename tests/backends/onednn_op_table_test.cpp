// The onednn_cpu op table holds the engine's half of each runtime op (its lowering, the eltwise steps
// of activations); the front end's table (onnx_io/ops/) the other half. Every lowered op must have a
// shape rule there, and the engine runs every op the front end does.
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

// onednn_cpu runs every op the front end has a shape rule for (tests/onnx_io/op_table_test.cpp pins that list).
TEST(OnednnOpTable, SupportedOpsAreTheFrontEndsRuntimeOps) {
  EXPECT_EQ(supported_runtime_ops(), onnx_io::runtime_ops());
  EXPECT_TRUE(std::is_sorted(supported_runtime_ops().begin(), supported_runtime_ops().end()));
}

TEST(OnednnOpTable, ActivationsAreEltwiseChains) {
  for (const char* name : {"Relu", "Clip", "HardSigmoid", "Sigmoid", "Neg", "Pow"}) {
    const OpDef* op = find_op(name);
    ASSERT_NE(op, nullptr);
    EXPECT_NE(op->eltwise, nullptr) << name;
  }
  EXPECT_EQ(find_op("Add")->eltwise, nullptr);
  EXPECT_EQ(find_op("Erf")->eltwise, nullptr) << "oneDNN has no erf: Erf runs only inside the GELU pattern";
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
