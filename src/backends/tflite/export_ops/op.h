// The tflite export's op table. Each ONNX op is one ExportOp in one file of this folder, writing the
// node as TFLite builtin ops through the shared ExportContext; the exporter (tflite_export.cpp) walks the
// graph and dispatches through the table, so adding an op touches only the file of its family (a new
// family is a new file; the build picks it up).
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "onnx_io/graph.h"
#include "tflite_schema_generated.h"

namespace nnmeter::tflite {

namespace tfl = nnmeter::tflite_schema;

// NCHW -> NHWC: stored dim j is ONNX dim kToNhwc[j]; ONNX dim i is stored at kFromNhwc[i].
inline const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
inline const std::vector<int64_t> kFromNhwc = {0, 3, 1, 2};

// How an ONNX value is held in the TFLite graph.
struct Ref {
  int tensor = -1;
  bool nhwc = false;  // a 4-D value stored NHWC
  Shape shape;        // the ONNX (NCHW) shape
  bool nonnegative = false;
};

// The TFLite graph being written and the ONNX graph it comes from, shared by the op files.
class ExportContext {
 public:
  ExportContext(const onnx_io::Graph& g, std::string backend);

  const onnx_io::Graph& graph() const { return g_; }
  flatbuffers::FlatBufferBuilder& fbb() { return fbb_; }

  // ---- errors
  [[noreturn]] void fail(const onnx::NodeProto& node, const std::string& why) const;
  [[noreturn]] void fail_value(const std::string& value, const std::string& why) const;

  // ---- attributes
  static const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name);
  static int64_t attr_i(const onnx::NodeProto& n, const std::string& name, int64_t fallback);
  static float attr_f(const onnx::NodeProto& n, const std::string& name, float fallback);
  static std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> fallback);
  static std::string attr_s(const onnx::NodeProto& n, const std::string& name, const std::string& fallback);

  // ---- the ONNX graph
  const onnx_io::Value& value(const std::string& name) const { return g_.value(g_.value_index.at(name)); }
  bool is_const(const std::string& name) const { return !name.empty() && value(name).constant.has_value(); }
  std::vector<float> floats(const std::string& name) const { return value(name).constant->to_floats(); }
  // The single runtime consumer of `name`, or -1 (none, several, or `name` is a graph output).
  int sole_consumer(const std::string& name) const;
  // The node writing `name`, or -1.
  int producer(const std::string& name) const;
  const onnx::NodeProto& proto(int node) const { return *g_.nodes[static_cast<size_t>(node)].proto; }
  // A node another op's export has already written (a fused BatchNormalization, activation, HardSigmoid).
  void absorb(int node) { absorbed_.insert(node); }
  bool absorbed(int node) const { return absorbed_.count(node) != 0; }

  // The fused activation a Relu or Clip node is, or nullopt.
  std::optional<tfl::ActivationFunctionType> activation_of(const onnx::NodeProto& n) const;
  // Fuses a following Relu/Clip into the op producing `out` (TFLite's converter does the same); returns the
  // activation and moves `out` to the activation's output.
  tfl::ActivationFunctionType take_activation(std::string& out);

  // ---- tensors
  int add_tensor(const std::string& name, const Shape& onnx_shape, bool nhwc, tfl::TensorType type = tfl::TensorType_FLOAT32,
                 uint32_t buffer = 0);
  // The stored (TFLite-order) shape of tensor `t`.
  const std::vector<int32_t>& stored_shape(int t) const { return tensors_[static_cast<size_t>(t)].shape; }
  const std::string& tensor_name(int t) const { return tensors_[static_cast<size_t>(t)].name; }
  int const_f32(const std::string& name, const Shape& shape, const std::vector<float>& data);
  int const_i32(const std::string& name, const std::vector<int32_t>& data, Shape shape = {});
  // A fresh activation tensor for ONNX value `name` (4-D values NHWC), registered as its Ref.
  Ref& define(const std::string& name, bool nonnegative = false);
  // Holds ONNX value `name` as `r` (graph inputs, and ops that are the same tensor).
  const Ref& bind(const std::string& name, Ref r) { return refs_[name] = std::move(r); }
  const Ref& ref(const std::string& name);

  void add_op(tfl::BuiltinOperator op, std::vector<int> inputs, std::vector<int> outputs,
              tfl::BuiltinOptions type = tfl::BuiltinOptions_NONE, flatbuffers::Offset<void> options = 0);

  // The tensor of a 4-D NHWC value in ONNX's NCHW order (a TRANSPOSE), for ops that follow ONNX's layout.
  // With H = W = 1 both orders are the same bytes, so ops that only read the flat data (reshapes) skip it.
  int as_nchw(const Ref& r, bool bytes_only);
  // The stored dim of ONNX axis `axis` (negative counts from the end) of `r`.
  int stored_axis(const onnx::NodeProto& n, const Ref& r, int64_t axis) const;

  // The model's bytes, once every node is written.
  std::string finish(const std::vector<int>& inputs, const std::vector<int>& outputs);

 private:
  template <typename T>
  int add_constant(const std::string& name, const Shape& shape, const std::vector<T>& data, tfl::TensorType type);

  struct Operator {
    tfl::BuiltinOperator op;
    std::vector<int> inputs, outputs;
    tfl::BuiltinOptions options_type = tfl::BuiltinOptions_NONE;
    flatbuffers::Offset<void> options;
  };
  struct TensorDef {
    std::vector<int32_t> shape;
    tfl::TensorType type;
    uint32_t buffer;
    std::string name;
  };

  const onnx_io::Graph& g_;
  std::string backend_;
  flatbuffers::FlatBufferBuilder fbb_{1 << 16};
  std::vector<flatbuffers::Offset<tfl::Buffer>> buffers_;
  std::vector<TensorDef> tensors_;
  std::vector<Operator> ops_;
  std::map<std::string, Ref> refs_;
  std::map<std::string, int> producer_;
  std::map<std::string, std::vector<int>> consumers_;
  std::set<int> absorbed_;
};

// Writes node `n` (of the op the entry is registered for) as TFLite ops, or throws through cx.fail.
using ExportRule = void (*)(ExportContext& cx, const onnx::NodeProto& n);

struct ExportOp {
  std::string name;
  ExportRule rule = nullptr;
};

// Adds a family's ops to the table; each export_ops/*.cpp holds one static ExportRegistration.
struct ExportRegistration {
  explicit ExportRegistration(std::vector<ExportOp> ops);
};

const ExportOp* find_export_op(const std::string& name);

// -------------------------------------------------------------------------------------------------
// Shared by several op files

// data laid out as `shape`, rearranged so output dim j is input dim perm[j].
std::vector<float> permute(const Shape& shape, const std::vector<float>& data, const std::vector<int64_t>& perm);

// Explicit ONNX pads as TFLite's SAME or VALID when they are exactly that; otherwise a PAD op in front
// (zeros: right for convolutions, and for pooling when the caller allows it) and VALID.
tfl::Padding padding_for(ExportContext& cx, const onnx::NodeProto& n, int& input, const Ref& in, const Shape& kernel,
                         const Shape& strides, const Shape& dilations, const Shape& out_hw, bool zero_pad_ok,
                         const char* why_not);

// BatchNormalization as y = x * scale + shift per channel.
std::pair<std::vector<float>, std::vector<float>> bn_affine(const ExportContext& cx, const onnx::NodeProto& bn);

// The HardSigmoid node computing hardsigmoid(x) (alpha 1/6, beta 1/2) for Mul(x, that), or -1.
int hardswish_partner(const ExportContext& cx, const onnx::NodeProto& mul, int side);

}  // namespace nnmeter::tflite
