// Internals of model-level prediction shared by the files of src/prediction/.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <memory_resource>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "nnmeter/prediction.h"

namespace nnmeter::prediction {

// ---- onnx_reader.cpp: the model's structure without its weights

// Tensor data fields larger than this are not read: detection needs weight shapes, never weight values,
// and skipping them keeps a 14 MB model from being copied (the ≤ 2 ms budget per model).
inline constexpr size_t kElideBytes = 4096;

// Parses an ONNX file (memory-mapped) into `model` (empty, typically arena-allocated), skipping large
// initializer payloads; elided tensors keep dims and type and are marked EXTERNAL so shape inference
// never tries to read them. Not ONNX → Error.
void read_onnx_structure(const fs::path& file, onnx::ModelProto& model);
// The same from serialized bytes in memory; `origin` names them in messages.
void read_onnx_structure(const uint8_t* data, size_t size, const std::string& origin, onnx::ModelProto& model);
// The same light copy of an in-memory model into `copy`.
void structure_copy(const onnx::ModelProto& model, onnx::ModelProto& copy);

// Values of a small constant tensor as doubles (onnx_io's codec); nullopt when the data was elided, is
// external, has another type or does not match the dims.
std::optional<std::vector<double>> tensor_values(const onnx::TensorProto& t);

// ---- onnx_checks.cpp: what a model must satisfy before any shape inference (limits in nnmeter/prediction.h)

// Version of the ONNX operator set the model imports; 0 when it imports none.
int64_t onnx_opset(const onnx::ModelProto& model);
// A non-empty graph, a known opset, at most kMaxModelNodes nodes, attribute values ONNX's inference can
// divide by, affordable constant and input tensors. Otherwise a one-line Error naming the node or tensor.
void check_onnx_model(const onnx::ModelProto& model, const std::string& origin);
// Each node against its ONNX schema (input and output counts, attribute types): ONNX's inference assumes
// them. Only needed before ONNX's inference runs, which is rare, so kept off the common path.
void check_node_schemas(const onnx::ModelProto& model, const std::string& origin);
// A runtime tensor: rank <= kMaxTensorRank, every dim >= 1, at most kMaxTensorElements elements; `what`
// names it in the Error.
void check_tensor_shape(const Shape& s, const std::function<std::string()>& what);

// ---- shapes (onnx_ir.cpp, shape_inference.cpp)

// Tensor name (viewing the model's strings) → static shape. Converting a model builds several name tables
// of ~1000 entries; `scratch` below is a monotonic buffer that holds them all and is freed at once (their
// node-by-node allocation and freeing was a tenth of a prediction).
using ShapeMap = std::pmr::unordered_map<std::string_view, Shape>;

// Dims of a tensor type when all are known and non-negative.
std::optional<Shape> static_shape(const onnx::TypeProto& type);
// Topological order of the graph's nodes (ONNX requires it, some tools break it). Cycles → Error.
std::vector<int> topological_nodes(const onnx::GraphProto& g, const std::string& origin,
                                   std::pmr::memory_resource* scratch = std::pmr::get_default_resource());
// Every tensor's shape by this project's own inference (graph inputs must be static), visiting nodes in
// `order`; nullopt when an op or attribute is outside what it handles, and ONNX's inference must run. A node
// that ONNX's inference would read out of bounds on (a Conv weight's rank not the input's) → Error naming
// `origin`.
std::optional<ShapeMap> infer_shapes_directly(const onnx::GraphProto& g, const std::vector<int>& order,
                                              std::pmr::memory_resource* scratch = std::pmr::get_default_resource(),
                                              const std::string& origin = "the model");
// ONNX's shape inference with data propagation (rewrites value_info, output shapes and, for folded
// shape tensors, node inputs); shapes of graph inputs, value_info and outputs. Failure → Error.
ShapeMap infer_shapes_with_onnx(onnx::ModelProto& model, const std::string& origin);

Shape nchw_to_nhwc(const Shape& s);
Shape nhwc_to_nchw(const Shape& s);

}  // namespace nnmeter::prediction
