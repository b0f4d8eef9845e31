// The host side of a phone: adb started by argv (push, shell, getprop), with one-line errors that say
// whether adb, the device or the command is the problem, and a dry-run mode that prints the exact
// commands instead of running them.
#pragma once

#include "common/subprocess.h"
#include "nnmeter/common.h"

namespace nnmeter::tflite {

class Adb {
 public:
  struct Options {
    std::string program = "adb";  // a name on PATH or a path
    std::string serial;           // empty: adb's only device
    double timeout_s = 300;       // per command
    bool dry_run = false;
    std::string who = "adb";      // the backend, for messages
  };
  explicit Adb(Options options);

  // `adb [-s SERIAL] args...`
  std::vector<std::string> argv(const std::vector<std::string>& args) const;
  // Runs adb; throws Error when adb is missing, the device is unreachable, the command times out or
  // fails. In dry-run mode prints the command and returns "".
  std::string run(const std::vector<std::string>& args);
  // `adb shell` with `remote_argv` quoted for the device's shell (adb joins its arguments into one line
  // that the device's shell splits again). Returns the result whatever the exit status, for the caller
  // to judge the program's output; adb and device problems still throw. Dry run: prints, returns {}.
  CommandResult shell(const std::vector<std::string>& remote_argv, double timeout_s);
  std::string getprop(const std::string& name);
  bool dry_run() const { return options_.dry_run; }
  const Options& options() const { return options_; }
  // "Android Debug Bridge version 1.0.41" -> "1.0.41"; throws Error when adb cannot be run.
  std::string version();

 private:
  CommandResult execute(const std::vector<std::string>& full_argv, double timeout_s);
  void check_device_reached(const CommandResult& r, const std::vector<std::string>& full_argv) const;
  Options options_;
};

}  // namespace nnmeter::tflite
