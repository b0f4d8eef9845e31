// Load-time evaluation of the small tensors exporters compute shapes with. torch.onnx.export writes a
// ShuffleNetV2 `chunk` as Shape → Gather → Add → Div → Slice, a ViT's class token as an Expand to a
// Shape-derived batch, a flatten as Shape → Gather → Concat → Reshape: with static input shapes all of it is
// known before inference, and a runtime folds it away. ONNX 1.12's data propagation covers only some of
// these ops (not Div, Range, Where, Expand, ConstantOfShape, ...).
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>
#include <string_view>
#include <vector>

#include "onnx_io/tensor.h"

namespace nnmeter::onnx_io {

// Outputs larger than this are left to the runtime: folding is for shape arithmetic and small constants
// (a class token expanded to the batch), not for weights.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 16;

// One input of a node to fold: its value when known at load time, and its static shape when known (enough
// for Shape and Size). An omitted optional input has neither.
struct FoldInput {
  const HostTensor* value = nullptr;
  const Shape* shape = nullptr;
};

// The node's attribute of that name, or null.
const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, std::string_view name);

// The node's outputs when all of them can be computed at load time; nullopt when the op is not one this
// evaluates, an input it needs is unknown, or the arguments do not check out (the caller's shape inference
// then reports the node as it would have). Never throws.
std::optional<std::vector<HostTensor>> fold_node(const onnx::NodeProto& node, const std::vector<FoldInput>& inputs);

}  // namespace nnmeter::onnx_io
