// External programs (adb, benchmark_app, ...) started by argv with posix_spawn, never through a local
// shell: a model path with a space or a quote is one argument, not a second command.
#pragma once

#include <optional>

#include "nnmeter/common.h"

namespace nnmeter {

struct CommandResult {
  int exit_code = -1;      // the program's exit status; -1 when it was killed
  int signal = 0;          // the signal that ended it, 0 if it exited
  bool timed_out = false;  // killed (with its process group) because it ran past the timeout
  std::string output;      // stdout and stderr, interleaved as the program wrote them
  bool ok() const { return !timed_out && signal == 0 && exit_code == 0; }
};

// Runs `argv` (argv[0] looked up on PATH when it has no '/') with stdin from /dev/null, in its own process
// group, and collects its output. After `timeout_s` seconds the group is killed. Throws Error when the
// program cannot be started at all.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s);

// How a backend runs its external tool (adb, benchmark_app): `who` names the backend in messages,
// `missing_hint` says how to get the tool, a dry run prints the command instead of running it.
struct ToolRun {
  std::string who;
  std::string missing_hint;
  double timeout_s = 300;
  bool dry_run = false;
};
// Dry run: prints "[dry-run] <command line>" and returns an empty success. Otherwise throws a one-line
// Error when argv[0] is not installed or the run passes the timeout, and returns the result (any exit
// status) for the caller to judge.
CommandResult run_tool(const std::vector<std::string>& argv, const ToolRun& how);

// The executable `program` resolves to (a path with '/' as given, else the first match on PATH).
std::optional<fs::path> find_executable(const std::string& program);

// `argv` as one line a POSIX shell would split back into the same words: words of safe characters as
// they are, others in single quotes. For showing commands (--dry-run, errors) and for the one place a
// remote shell parses a line anyway (`adb shell`).
std::string shell_quote(const std::string& word);
std::string command_line(const std::vector<std::string>& argv);

// The last line of `output` with text on it (trimmed), or "(no output)": what error messages quote.
std::string last_output_line(const std::string& output);

}  // namespace nnmeter
