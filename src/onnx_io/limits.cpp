#include "nnmeter/model_limits.h"

namespace nnmeter {

std::optional<int64_t> bounded_elements(const Shape& shape) {
  if (shape.size() > kMaxTensorRank) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0) return std::nullopt;
  for (int64_t d : shape) {
    if (d == 0) return 0;
    if (n > kMaxTensorElements / d) return std::nullopt;
    n *= d;
  }
  return n;
}

}  // namespace nnmeter
