// nn-meter predict / get_ir: model-level latency prediction.
#include "cli/cli.h"

namespace nnmeter::cli {

void add_predict_commands(CLI::App& /*app*/, Context& /*ctx*/) {}

}  // namespace nnmeter::cli
