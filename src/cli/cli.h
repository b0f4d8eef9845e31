// The nn-meter command line: a thin client of libnnmeter. Each subcommand lives in its own
// cmd_<name>.cpp and is added to the app by add_<name>_command(); cli.cpp lists them all.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "nnmeter/registry.h"

namespace nnmeter::cli {

// A command line that cannot mean anything (a missing or contradictory flag): exit 2, like a parse error.
class UsageError : public Error {
 public:
  using Error::Error;
};

// A command that ends without an error but short of done, after printing its result: the process exits with `code`
// (nn-meter build --shards: 3, another phase of measurements to run on the shards first).
struct EarlyExit {
  int code;
};

struct Context {
  bool verbose = false;
  bool json = false;  // machine-readable output on stdout, no progress
  Registry registry;
};

// A command's result: its "(nn-Meter) " line, or with --json the object `json` on stdout.
void report(const Context& ctx, const std::string& line, const Json& json);
// --json output: indented, with bytes that are not UTF-8 (a fuzzed model's tensor name) replaced, never thrown on.
std::string json_text(const Json& json);
// An error message as one terminal line: bytes that are not UTF-8 replaced, control characters escaped.
std::string one_line(const std::string& message);

// Runs the CLI on argv-style arguments (args[0] is the program name); returns the exit code.
// Errors are printed as one "(nn-Meter) ..." line on stderr.
int run(int argc, char** argv);

// Subcommands. Each registers its options and a callback that does the work through libnnmeter.
void add_register_commands(CLI::App& app, Context& ctx);  // register, unregister
void add_workspace_commands(CLI::App& app, Context& ctx);  // create, connect
void add_backend_commands(CLI::App& app, Context& ctx);    // backend NAME convert|run|profile, check-env, benchmark
void add_sample_commands(CLI::App& app, Context& ctx);     // sample, kernel-data
void add_builder_commands(CLI::App& app, Context& ctx);    // build, profile
void add_ruletest_commands(CLI::App& app, Context& ctx);   // ruletest
void add_predict_commands(CLI::App& app, Context& ctx);    // predict (lat_pred), get_ir
void add_evaluate_commands(CLI::App& app, Context& ctx);   // evaluate, calibrate
void add_machine_commands(CLI::App& app, Context& ctx);    // check-machine
void add_networks_commands(CLI::App& app, Context& ctx);   // networks list|export

// The short machine check before measuring on this machine with `backend` ("" when not known yet): warnings
// logged; with `strict` an unfit machine is an Error. Backends that measure a remote device skip it.
void check_machine_before_measuring(Context& ctx, const std::string& backend, bool strict);

}  // namespace nnmeter::cli
