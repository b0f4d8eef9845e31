// Shared test helpers: temporary folders and running the real nn-meter binary.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace nnmeter::test {

namespace fs = std::filesystem;

// A fresh folder under the system temp dir, removed with everything in it when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// Built with AddressSanitizer (GCC and Clang define __SANITIZE_ADDRESS__ then): CI's second run (.ci/run).
#ifdef __SANITIZE_ADDRESS__
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
// An end-to-end build through the real binary measures for minutes under the sanitizers and repeats what the
// Release run checks: its code runs under them in its parts' tests and in the one end-to-end build kept there
// (BuildCli.LeaveFamilyOutHoldsTheFamilysLayersOutOfTheKernelSamples: build, rule test, calibration, leave-family-out,
// predict).
#define NNMETER_RELEASE_RUN_ONLY()                                                                                   \
  do {                                                                                                             \
    if (::nnmeter::test::kSanitized) GTEST_SKIP() << "an end-to-end build: the Release run checks it";             \
  } while (0)

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs the nn-meter binary (posix_spawn, no shell) with `args`, NN_METER_HOME set to `home`, and extra
// environment variables; captures both streams.
CliResult run_cli(const std::vector<std::string>& args, const fs::path& home,
                  const std::map<std::string, std::string>& env = {});

// Runs any program by argv and captures both streams.
CliResult run_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});

// The message of the nnmeter::Error that `f` throws, or "" when it throws none.
std::string error_of(const std::function<void()>& f);

std::string read_text(const fs::path& path);
void write_text(const fs::path& path, const std::string& text);

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
// Lines of a text file (journals, logs); 0 when it does not exist.
size_t count_lines(const fs::path& path);

// SIGKILLs a child process while it writes `file` with io::write_file_atomic, as a run killed mid-write:
// returns the temp file it left beside `file` (".<name>.tmp.<dead pid>.<n>").
fs::path kill_mid_write(const fs::path& file);

}  // namespace nnmeter::test
