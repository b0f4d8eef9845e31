#include "onnx_io/shape_rules.h"

#include <algorithm>

namespace nnmeter::onnx_io {

std::optional<WindowAxis> window_axis(int64_t in, int64_t extent, int64_t stride, int64_t pad_begin, int64_t pad_end,
                                      std::string_view auto_pad, bool ceil_mode) {
  if (in <= 0 || extent <= 0 || stride <= 0 || pad_begin < 0 || pad_end < 0) return std::nullopt;
  WindowAxis w{0, pad_begin, pad_end};
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    w.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>(0, (w.out - 1) * stride + extent - in);
    w.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    w.pad_end = total - w.pad_begin;
    return w;
  }
  if (auto_pad == "VALID") {
    w.pad_begin = w.pad_end = 0;
  } else if (auto_pad != "NOTSET") {
    return std::nullopt;
  }
  const int64_t span = in + w.pad_begin + w.pad_end - extent;
  if (span < 0) return std::nullopt;
  w.out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (w.out - 1) * stride >= in + w.pad_begin) --w.out;
  return w;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace nnmeter::onnx_io
