// The builtin test cases: BasicFusion (BF_op1_op2, one per BASIC_TESTCASES pair) and MON.
#pragma once

#include <optional>

#include "nnmeter/fusion.h"

namespace nnmeter::fusion {

// ruletest_config.yaml, checked once. Every message names the file and the key.
struct RuleTestConfig {
  bool detail = false;
  int64_t hw = 28, cin = 64, shape_1d = 428;
  double alpha = 0.5;
  std::vector<std::string> basic, other, layers_1d;
  static RuleTestConfig parse(const Json& ruletest_config);
};

// BasicFusion (reference §8): op1 alone, op2 alone on op1's output shape, and the block op1 → op2; a
// two-input operator takes its extra operand as an extra model input. Equal operators are named
// <op>_1 / <op>_2.
class BasicFusionCase final : public TestCase {
 public:
  // `input` is the test input shape without batch. Checks that op1 takes `input` and op2 takes op1's
  // output (Error otherwise), so a bad pair fails before any file is written.
  BasicFusionCase(std::string name, std::string op1, std::unique_ptr<Operator> first, std::string op2,
                  std::unique_ptr<Operator> second, Shape input, double alpha);
  std::map<std::string, TestCaseModel> generate_testcase(const fs::path& directory, int batch_size) override;
  Json run_test(const std::map<std::string, double>& latencies_ms) override;
  std::vector<std::string> depends_on() const override { return {}; }

  // The model names of op1 and op2 alone (their sum is "ops" in DETAIL output).
  const std::string& op1_model() const { return alias1_; }
  const std::string& op2_model() const { return alias2_; }

 private:
  std::string name_, alias1_, alias2_;
  std::unique_ptr<Operator> first_, second_;
  Shape input_, middle_;
  double alpha_;
};

// "BF_<op1>_<op2>" → {op1, op2}; nullopt for any other name. Operator names never contain '_'.
std::optional<std::pair<std::string, std::string>> split_basic_name(const std::string& testcase);

// The test input of BF_op1_op2: [SHAPE_1D] when either operator is in LAYERS_1D, else [CIN, HW, HW].
Shape basic_input_shape(const RuleTestConfig& config, const std::string& op1, const std::string& op2);

// MON (multiple out nodes), with a real decision instead of nn-Meter's always-true; see testcases.cpp.
std::unique_ptr<TestCase> make_mon_case(const Json& ruletest_config);

}  // namespace nnmeter::fusion
