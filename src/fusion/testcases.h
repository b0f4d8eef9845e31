// The builtin test cases: BasicFusion (BF_op1_op2[_op3…], one per BASIC_TESTCASES entry) and MON.
#pragma once

#include <optional>

#include "nnmeter/fusion.h"
#include "nnmeter/workspace.h"

namespace nnmeter::fusion {

// nn-Meter's BasicFusion: each op alone on its input shape, and the block op1 → op2 [→ op3 …]; a
// two-input operator takes its extra operand as an extra model input. An operator named twice or more is
// named <op>_<position> (conv_1, conv_2). nn-Meter tests pairs; a longer chain asks whether the backend
// runs the whole chain as one kernel (ShuffleNet's concat → channelshuffle → split).
class BasicFusionCase final : public TestCase {
 public:
  using Ops = std::vector<std::pair<std::string, std::unique_ptr<Operator>>>;
  // `input` is the test input shape without batch. Checks that every op takes its predecessor's output
  // (Error otherwise), so a bad chain fails before any file is written.
  BasicFusionCase(std::string name, Ops ops, Shape input, double alpha);
  std::map<std::string, TestCaseModel> generate_testcase(const fs::path& directory, int batch_size) override;
  Json run_test(const std::map<std::string, double>& latencies_ms) override;
  std::vector<std::string> depends_on() const override { return {}; }

  // The model names of the ops alone, in chain order (their sum is "ops" in DETAIL output).
  const std::vector<std::string>& op_models() const { return aliases_; }

 private:
  std::string name_;
  std::vector<std::string> aliases_;
  Ops ops_;
  std::vector<Shape> inputs_;  // the input shape of each op
  double alpha_;
};

// The longest chain a BF test case may name.
inline constexpr size_t kMaxChainOps = 4;

// "BF_<op1>_<op2>[_<op3>…]" (2 to kMaxChainOps operators) → the operators; nullopt for any other name.
// Operator names never contain '_'.
std::optional<std::vector<std::string>> split_basic_name(const std::string& testcase);

// The test input of a BF case: [SHAPE_1D] when any of its operators is in LAYERS_1D, else [CIN, HW, HW].
Shape basic_input_shape(const RuleTestConfig& config, const std::vector<std::string>& ops);

// MON (multiple out nodes), with a real decision instead of nn-Meter's always-true; see testcases.cpp.
std::unique_ptr<TestCase> make_mon_case(const Json& ruletest_config);

// A case that decides between two predictions of its block, each the sum of some of its models' latencies:
// the block runs the ops fused, or apart.
struct Hypotheses {
  std::vector<std::string> fused, apart;
};
// MON's: the producer with its consumer fused (the pair measured alone) plus the other branch, or all three apart.
inline const Hypotheses kMonHypotheses = {{"dwconv_relu", "branch"}, {"dwconv", "relu", "branch"}};

}  // namespace nnmeter::fusion
