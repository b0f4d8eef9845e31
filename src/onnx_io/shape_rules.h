// Shape arithmetic of ONNX ops that more than one part of nn-meter needs: model prediction's shape
// inference, the engines' convert step, the TFLite export, the kernel and test-kit model builders.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter::onnx_io {

// One spatial axis of a convolution or pooling window.
struct WindowAxis {
  int64_t out = 0;        // output size
  int64_t pad_begin = 0;  // the padding that gives it (auto_pad resolved)
  int64_t pad_end = 0;
};

// `extent` is the dilated window, (kernel − 1) · dilation + 1. auto_pad is ONNX's NOTSET (the explicit pads
// count), SAME_UPPER, SAME_LOWER (output ceil(in / stride), the odd padding row at the end or the start) or
// VALID. With ceil_mode the last window may hang over the end, but must start inside the input or its
// leading padding (PyTorch's rule, which ONNX follows). nullopt when the arguments are not positive, the
// pads negative, auto_pad unknown, or the window larger than the padded input.
std::optional<WindowAxis> window_axis(int64_t in, int64_t extent, int64_t stride, int64_t pad_begin, int64_t pad_end,
                                      std::string_view auto_pad = "NOTSET", bool ceil_mode = false);

// Reshape's output: a 0 in `target` copies the input's dim (unless allow_zero), one -1 takes what is left.
// nullopt when the target does not hold the input's elements, or a partial product exceeds `max_elements`.
std::optional<Shape> reshape_shape(const Shape& in, const std::vector<int64_t>& target, bool allow_zero,
                                   int64_t max_elements);

// ONNX Slice over `in`, per axis: the first index taken, the step and the output length (axes not sliced: 0, 1
// and the input's length). `axes` empty: the first starts.size() axes; `steps` empty: 1. Starts and ends are
// clamped as ONNX says. nullopt when the lists disagree in length, an axis is out of range or twice, or a step is 0.
struct SliceAxes {
  Shape begin, step, out;
};
std::optional<SliceAxes> slice_axes(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                                    std::vector<int64_t> axes, std::vector<int64_t> steps);

// numpy's (ONNX's multidirectional) broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// The output shape of an Einsum (explicit "->" or implicit output, spaces allowed, letters a-z and A-Z; an
// ellipsis broadcasts the leading dims). nullopt when the equation does not parse or the dims disagree.
// ONNX 1.12 infers no Einsum output (torchvision's MaxViT writes "B G H I D, B G H J D -> B G H I J").
std::optional<Shape> einsum_shape(std::string_view equation, const std::vector<Shape>& inputs);

}  // namespace nnmeter::onnx_io
