// Plugin packages for tests: copies of the example plugins in a temporary folder with their meta files.
#pragma once

#include "support/test_support.h"

namespace nnmeter::test {

// Copies the built library `built` into `dir` (created) as `file_name`; returns the copy.
fs::path install_library(const fs::path& built, const fs::path& dir, const std::string& file_name);
// Creates <dir>/backend.so + config.yaml + meta_backend.yaml (builtinName `name`, className myBackend).
fs::path make_backend_package(const fs::path& dir, const std::string& name = "my_backend");
// Creates <dir>/backend.so (tests/support/chaos_backend.cpp) + meta.yaml (builtinName chaos).
fs::path make_chaos_package(const fs::path& dir);
// Creates <dir>/{kernel_script,config_sampler,feature_parser}.so + meta_kernel.yaml (builtin_name `name`).
fs::path make_kernel_package(const fs::path& dir, const std::string& name = "mykernel");

}  // namespace nnmeter::test
