// One libFuzzer binary per target; NNMETER_FUZZ_TARGET names it (fuzz/CMakeLists.txt).
#include <spdlog/spdlog.h>

#include "fuzz_targets.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Warnings about odd-but-accepted inputs would flood the fuzzer's own output.
  spdlog::set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nnmeter::fuzz::Entry entry = nnmeter::fuzz::find_target(NNMETER_FUZZ_TARGET);
  entry(data, size);
  return 0;
}
