#include "nnmeter/fusion.h"

namespace nnmeter {

// Builtin fusion-rule operators and test cases arrive with the fusion-rule tester; until then only
// registered plugins are listed.
std::vector<OperatorInfo> builtin_operators() { return {}; }
std::vector<TestCaseInfo> builtin_testcases() { return {}; }

}  // namespace nnmeter
