// A model as prediction reads it: an ONNX model or an nn-Meter IR json becomes a graph of runtime ops with
// static shapes (ModelIr).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nnmeter/common.h"
#include "nnmeter/model_limits.h"

namespace nnmeter {

// Graph input name -> full NCHW shape including the batch dimension.
using InputShapes = std::map<std::string, Shape>;

// One runtime op. Graph inputs are nodes of type "Placeholder". Initializers, Constant nodes and nodes
// computed from constants and static shapes only (Shape → Gather → Concat → Reshape targets) are not nodes.
struct IrNode {
  std::string name, type;  // type: the ONNX op_type ("Conv", "Clip", ...)
  // Producer of each runtime input, in input order (input_shapes[i] is the shape of inbounds[i]).
  std::vector<std::string> inbounds;
  std::vector<std::string> outbounds;  // consumers, each once, in topological order
  std::vector<Shape> input_shapes, output_shapes;  // as in the ONNX model (NCHW)
  // ONNX attributes (int, float, ints, floats, string), plus what detection needs from constant inputs:
  // "weight_shape" (Conv, ConvTranspose, Gemm, MatMul with a constant weight), "kernel_shape" (Conv,
  // from the weight when the attribute is absent), "min"/"max" (Clip), "constant" (the scalar operand of
  // a binary op with one constant input).
  Json attr = Json::object();
};

struct ModelIr {
  std::string origin;          // file or model name, for messages
  std::vector<IrNode> nodes;   // topological order
};

// Parses the file (Error if it is not an ONNX model) and converts it. The weights are never read into
// memory: only the graph structure and shapes are needed.
ModelIr load_onnx_ir(const fs::path& onnx_file, const InputShapes& shapes = {});
// The same from a serialized ModelProto in memory (e.g. handed over by Python); `origin` names it in messages.
ModelIr load_onnx_ir_bytes(std::string_view onnx_bytes, const std::string& origin, const InputShapes& shapes = {});

// nn-Meter's IR json: node name → {inbounds, outbounds, attr: {name, type, input_shape,
// output_shape, attr}}, 4-D shapes in NHWC. Each node also carries "order", its topological index, so
// that reading the file back gives the same graph order (and therefore the same kernels).
Json ir_to_nnmeter_json(const ModelIr& ir);
// Accepts what ir_to_nnmeter_json writes (4-D shapes back to NCHW); files without "order" are sorted
// topologically. Malformed input → Error naming `origin`.
ModelIr ir_from_nnmeter_json(const Json& ir_json, const std::string& origin);

// Parses "name:1x3x224x224" (the --input-shape flag). Malformed → Error showing the expected form.
std::pair<std::string, Shape> parse_input_shape(const std::string& text);

}  // namespace nnmeter
