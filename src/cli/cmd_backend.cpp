#include "cli/cli.h"
namespace nnmeter::cli {
void add_backend_commands(CLI::App&, Context&) {}
}
