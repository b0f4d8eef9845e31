// The limits of what every ONNX reader of nn-meter accepts (prediction's reader and every engine's loader).
#pragma once

#include <optional>

#include "nnmeter/common.h"

namespace nnmeter {

// What nn-meter agrees to read as a model (ONNX file or nn-Meter IR); beyond any of these → one-line Error
// before any work. They bound time and memory on hostile files and sit far above real networks (the
// largest CNN exports have a few thousand nodes and tensors of a few million elements).
inline constexpr size_t kMaxModelFileBytes = 2'147'483'647;  // protobuf parses no larger message
inline constexpr size_t kMaxModelNodes = 200'000;             // graph, subgraph and function nodes together
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 32;
inline constexpr size_t kMaxTensorRank = 32;
// Elements of a tensor of this shape, or nullopt when its rank or element count is beyond these limits or
// a dim is negative (checked without overflow).
std::optional<int64_t> bounded_elements(const Shape& shape);

}  // namespace nnmeter
