// Types and the error channel shared by every part of libnnmeter.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace nnmeter {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using Shape = std::vector<int64_t>;

// The one error type of the library. Its message is a single actionable line for the user: what failed,
// which file or name, and what to do. The CLI prints it after "(nn-Meter) " and exits non-zero.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Semantic version of nn-meter itself.
const char* version();

// The nn-meter-worker program that hosts profiling and plugin checks: $NN_METER_WORKER, else the one built
// or installed with the loaded libnnmeter. Throws Error if none exists.
fs::path find_worker_executable();

}  // namespace nnmeter
