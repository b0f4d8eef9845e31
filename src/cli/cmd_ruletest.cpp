// nn-meter ruletest: the fusion-rule tester.
#include "cli/cli.h"

namespace nnmeter::cli {

void add_ruletest_commands(CLI::App& /*app*/, Context& /*ctx*/) {}

}  // namespace nnmeter::cli
