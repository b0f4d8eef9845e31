// A stand-in program for a backend's external tool (tests/backends/fake_*.sh): copied executable into a
// temp folder, fed through environment variables set for the test's lifetime, and its argv log read back.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <sstream>

#include "support/test_support.h"

namespace nnmeter::test {

class FakeTool {
 public:
  // `script` under tests/backends/, installed as `dir()/name`; `log_variable` is the variable naming its argv log.
  FakeTool(const std::string& script, const std::string& name, const std::string& log_variable) {
    program_ = dir_ / name;
    fs::copy_file(fs::path(NNMETER_SOURCE_DIR) / "tests/backends" / script, program_);
    ::chmod(program_.c_str(), 0755);
    set(log_variable, log_.string());
  }
  ~FakeTool() {
    for (const auto& name : set_) ::unsetenv(name.c_str());
  }
  FakeTool(const FakeTool&) = delete;
  FakeTool& operator=(const FakeTool&) = delete;

  void set(const std::string& name, const std::string& value) {
    ::setenv(name.c_str(), value.c_str(), 1);
    set_.push_back(name);
  }
  const fs::path& program() const { return program_; }
  const fs::path& dir() const { return dir_.path(); }
  const fs::path& log() const { return log_; }
  // The argv of every call so far, one entry per call, words joined by '|'.
  std::vector<std::string> calls() const {
    std::vector<std::string> out;
    if (!fs::exists(log_)) return out;
    std::istringstream in(read_text(log_));
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  TempDir dir_;
  fs::path program_;
  fs::path log_ = dir_ / "argv.log";
  std::vector<std::string> set_;
};

inline fs::path fixture_path(const std::string& name) { return fs::path(NNMETER_SOURCE_DIR) / "tests/backends/fixtures" / name; }

}  // namespace nnmeter::test
