// Warnings that a loop would repeat (a predictor built on noisy measurements, a model's stand-in kernels) are
// said once per process: a NAS loop that predicts the same model a million times keeps its own output.
#pragma once

#include <cstdint>
#include <string>

namespace nnmeter {

// Logs `message` as a warning the first time `key` is seen in this process. Later calls with the same key
// only count, and say the count at the 10th, 100th, 1000th... call. Thread-safe.
void warn_once(const std::string& key, const std::string& message);

// How often `key` has been warned about in this process (0: never).
uint64_t warning_count(const std::string& key);

}  // namespace nnmeter
