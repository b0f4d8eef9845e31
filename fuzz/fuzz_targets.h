// The entry points of the libFuzzer targets. The fuzzers (fuzz/CMakeLists.txt, NNMETER_FUZZ=ON, clang)
// and the corpus replay test of the regular suite (tests/fuzz/) call the same functions, so an input that
// once crashed a fuzzer is checked on every test run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace nnmeter::fuzz {

// Feeds one input to the loader behind `target`. A clean nnmeter::Error is a handled bad input and
// returns normally; anything else (another exception, a signal, a sanitizer report) is a finding.
using Entry = void (*)(const uint8_t* data, size_t size);

struct Target {
  std::string name;  // also the corpus folder: fuzz/corpus/<name>/
  Entry entry;
};

const std::vector<Target>& targets();
Entry find_target(const std::string& name);

}  // namespace nnmeter::fuzz
