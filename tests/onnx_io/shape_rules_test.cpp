// The shape arithmetic and graph order every reader and engine shares (onnx_io/shape_rules.h,
// common/graph_order.h), checked against hand-computed cases.
#include <gtest/gtest.h>

#include <functional>

#include "common/graph_order.h"
#include "onnx_io/shape_rules.h"

namespace nnmeter {
namespace {

using onnx_io::window_axis;

TEST(ShapeRules, WindowAxisFollowsOnnx) {
  // Explicit pads: floor((in + pads − extent) / stride) + 1.
  EXPECT_EQ(window_axis(224, 3, 2, 1, 1)->out, 112);
  EXPECT_EQ(window_axis(7, 7, 1, 0, 0)->out, 1);
  // SAME: ceil(in / stride), the odd padding row at the end (UPPER) or the start (LOWER).
  const auto upper = window_axis(15, 3, 2, 0, 0, "SAME_UPPER");
  EXPECT_EQ(upper->out, 8);
  EXPECT_EQ(upper->pad_begin, 1);
  EXPECT_EQ(upper->pad_end, 1);
  const auto even = window_axis(16, 3, 2, 0, 0, "SAME_UPPER");
  EXPECT_EQ(even->out, 8);
  EXPECT_EQ(even->pad_begin, 0);
  EXPECT_EQ(even->pad_end, 1);
  const auto lower = window_axis(16, 3, 2, 0, 0, "SAME_LOWER");
  EXPECT_EQ(lower->pad_begin, 1);
  EXPECT_EQ(lower->pad_end, 0);
  // VALID drops the pads.
  EXPECT_EQ(window_axis(15, 3, 2, 5, 5, "VALID")->out, 7);
  // ceil_mode: the last window may hang over the end …
  EXPECT_EQ(window_axis(112, 3, 2, 0, 0, "NOTSET", true)->out, 56);
  EXPECT_EQ(window_axis(113, 3, 2, 0, 0, "NOTSET", true)->out, 56);
  EXPECT_EQ(window_axis(114, 3, 2, 0, 0, "NOTSET", true)->out, 57);
  EXPECT_EQ(window_axis(114, 3, 2, 0, 0, "NOTSET", false)->out, 56);
  // … but must start inside the input or its leading padding (PyTorch's rule): 5 + 1 pad, window 2,
  // stride 2 would give 4 windows by the ceiling, the 4th starting at 6 ≥ 5 + 1.
  EXPECT_EQ(window_axis(5, 2, 2, 1, 1, "NOTSET", true)->out, 3);
}

TEST(ShapeRules, ImpossibleWindowsAreNullopt) {
  EXPECT_FALSE(window_axis(2, 3, 1, 0, 0));          // larger than the input
  EXPECT_FALSE(window_axis(8, 3, 0, 0, 0));          // stride 0
  EXPECT_FALSE(window_axis(8, 3, 1, -1, 0));         // negative pad
  EXPECT_FALSE(window_axis(8, 3, 1, 0, 0, "SAME"));  // unknown auto_pad
  EXPECT_FALSE(window_axis(0, 1, 1, 0, 0));
}

TEST(ShapeRules, BroadcastIsNumpys) {
  EXPECT_EQ(onnx_io::broadcast_shapes({1, 16, 1, 1}, {1, 16, 7, 7}), (Shape{1, 16, 7, 7}));
  EXPECT_EQ(onnx_io::broadcast_shapes({7}, {2, 3, 1}), (Shape{2, 3, 7}));
  EXPECT_EQ(onnx_io::broadcast_shapes({}, {4, 5}), (Shape{4, 5}));
  EXPECT_FALSE(onnx_io::broadcast_shapes({3}, {4}));
}

TEST(GraphOrder, KahnWithDeterministicTies) {
  // 0 → 2, 1 → 2, 3 alone: ties by index, or by the caller's order.
  const std::vector<std::pair<size_t, size_t>> edges = {{0, 2}, {1, 2}};
  EXPECT_EQ(topological_order(4, edges, std::less<size_t>()), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(topological_order(4, edges, std::greater<size_t>()), (std::vector<size_t>{3, 1, 0, 2}));
  // Edges against the index order are followed.
  EXPECT_EQ(topological_order(3, {{2, 0}, {1, 2}}, std::less<size_t>()), (std::vector<size_t>{1, 2, 0}));
  EXPECT_FALSE(topological_order(3, {{0, 1}, {1, 2}, {2, 0}}, std::less<size_t>()));
}

TEST(ShapeRules, ReshapeTargets) {
  using onnx_io::reshape_shape;
  EXPECT_EQ(reshape_shape({2, 16, 16, 16}, {0, -1}, false, 1 << 20), (Shape{2, 4096}));
  EXPECT_EQ(reshape_shape({2, 3}, {3, 0}, true, 1 << 20), std::nullopt);  // allowzero: a real 0, 6 != 0
  EXPECT_EQ(reshape_shape({4, 0}, {0, 7}, true, 1 << 20), (Shape{0, 7}));
  EXPECT_EQ(reshape_shape({1, 16}, {1, 15}, false, 1 << 20), std::nullopt);
  EXPECT_EQ(reshape_shape({1, 16}, {-1, -1}, false, 1 << 20), std::nullopt);
  EXPECT_EQ(reshape_shape({1, 16}, {4, -1}, false, 8), std::nullopt);  // beyond the limit
}

TEST(ShapeRules, EinsumOutputs) {
  using onnx_io::einsum_shape;
  // MaxViT's attention as torchvision exports it: upper-case letters and spaces.
  EXPECT_EQ(einsum_shape("B G H I D, B G H J D -> B G H I J", {{1, 2, 3, 49, 32}, {1, 2, 3, 49, 32}}),
            (Shape{1, 2, 3, 49, 49}));
  EXPECT_EQ(einsum_shape("ij,jk", {{2, 3}, {3, 4}}), (Shape{2, 4}));  // implicit: letters used once, sorted
  EXPECT_EQ(einsum_shape("...ij,...jk->...ik", {{5, 1, 2, 3}, {4, 3, 6}}), (Shape{5, 4, 2, 6}));
  EXPECT_EQ(einsum_shape("ii->i", {{3, 3}}), (Shape{3}));
  EXPECT_FALSE(einsum_shape("ij,jk->ik", {{2, 3}, {4, 5}}));   // j disagrees
  EXPECT_FALSE(einsum_shape("ij->ik", {{2, 3}}));              // k is in no input
  EXPECT_FALSE(einsum_shape("ijk->i", {{2, 3}}));              // more letters than dims
  EXPECT_FALSE(einsum_shape("ij,jk->ik", {{2, 3}}));           // two terms, one input
}

}  // namespace
}  // namespace nnmeter
