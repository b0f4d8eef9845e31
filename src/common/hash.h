// A stable 64-bit hash (FNV-1a) for IDs that must stay the same across runs and machines (journal keys,
// derived seeds); std::hash promises neither.
#pragma once

#include <cstdint>
#include <string_view>

namespace nnmeter {

inline uint64_t fnv1a(std::string_view text, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace nnmeter
