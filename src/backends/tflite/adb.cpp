#include "backends/tflite/adb.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <sstream>

namespace nnmeter::tflite {

namespace {

// adb's own complaints about the connection ("error: no devices/emulators found", "error: device 'X' not
// found", "error: device offline", "adb: error: ... unauthorized", "cannot connect to daemon"), as opposed to
// the output of a program that ran on the device.
std::string device_problem(const std::string& output) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const bool adb_says = line.starts_with("error:") || line.starts_with("adb: ") || line.starts_with("* cannot") ||
                          line.find("cannot connect to daemon") != std::string::npos;
    if (!adb_says) continue;
    // adb's own phrases, not words a remote path may contain.
    for (const char* phrase : {"no devices", "device '", "device not found", "device offline", "unauthorized",
                               "more than one device", "still authorizing", "cannot connect to daemon"})
      if (line.find(phrase) != std::string::npos) return line;
  }
  return "";
}

}  // namespace

Adb::Adb(Options options) : options_(std::move(options)) {}

std::vector<std::string> Adb::argv(const std::vector<std::string>& args) const {
  std::vector<std::string> out = {options_.program};
  if (!options_.serial.empty()) out.insert(out.end(), {"-s", options_.serial});
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

CommandResult Adb::execute(const std::vector<std::string>& full_argv, double timeout_s) {
  const ToolRun how{options_.who, "install Android's platform tools (Debian: apt-get install adb) or set ADB to its path",
                    timeout_s, options_.dry_run};
  CommandResult r = run_tool(full_argv, how);
  check_device_reached(r, full_argv);
  return r;
}

void Adb::check_device_reached(const CommandResult& r, const std::vector<std::string>& full_argv) const {
  if (r.ok()) return;
  const std::string problem = device_problem(r.output);
  if (problem.empty()) return;
  const std::string which = options_.serial.empty() ? "the device" : "device '" + options_.serial + "'";
  throw Error(fmt::format("{}: adb cannot reach {} ({}) running `{}`: connect it and check `adb devices`{}", options_.who,
                          which, problem, command_line(full_argv),
                          options_.serial.empty() ? "; with several devices set DEVICE_SERIAL" : " and DEVICE_SERIAL"));
}

std::string Adb::run(const std::vector<std::string>& args) {
  const auto full = argv(args);
  const CommandResult r = execute(full, options_.timeout_s);
  if (!r.ok())
    throw Error(fmt::format("{}: `{}` failed ({}): {}", options_.who, command_line(full),
                            r.signal ? fmt::format("signal {}", r.signal) : fmt::format("exit code {}", r.exit_code),
                            last_output_line(r.output)));
  return r.output;
}

CommandResult Adb::shell(const std::vector<std::string>& remote_argv, double timeout_s) {
  std::vector<std::string> args = {"shell"};
  for (const auto& word : remote_argv) args.push_back(shell_quote(word));
  return execute(argv(args), timeout_s);
}

std::string Adb::getprop(const std::string& name) {
  const std::string out = run({"shell", "getprop", name});
  if (options_.dry_run) return "";
  const std::string line = last_output_line(out);
  return line == "(no output)" ? "" : line;
}

std::string Adb::version() {
  const auto full = std::vector<std::string>{options_.program, "version"};
  const CommandResult r = run_command(full, 30);
  const std::string marker = "Android Debug Bridge version ";
  const size_t at = r.output.find(marker);
  if (!r.ok() || at == std::string::npos)
    throw Error(fmt::format("`{}` did not print its version: {}", command_line(full), last_output_line(r.output)));
  const size_t start = at + marker.size();
  return r.output.substr(start, r.output.find_first_of(" \r\n", start) - start);
}

}  // namespace nnmeter::tflite
