// The xnnpack_cpu op table. Each TFLite op the engine runs is one OpDef in one file of this folder, the
// file of its family; the engine dispatches through the table, so adding an op touches only that file (a
// new family is a new file; the build picks it up).
#pragma once

#include <xnnpack.h>

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nnmeter/backend.h"
#include "tflite_schema_generated.h"

namespace nnmeter::xnnpack {

namespace tfl = nnmeter::tflite_schema;

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// Saturates: a damaged file's dimensions must not overflow (the bounds checked against it are far lower).
int64_t numel_of(const Shape& s);

struct Slot {
  std::string name;
  Shape shape;               // as stored (NHWC for 4-D activations)
  std::vector<float> data;   // activations, and constants read at run time; XNNPACK may read 16 bytes past the end
  bool constant = false;
  int producer = -1;         // op index
  int consumers = 0;         // op inputs reading it, plus one if it is a graph output
};

struct OperatorDeleter {
  void operator()(xnn_operator_t op) const { xnn_delete_operator(op); }
};
using OperatorPtr = std::unique_ptr<xnn_operator, OperatorDeleter>;

struct Step {
  std::string kind;  // the XNNPACK operator (or "transpose" for the one step XNNPACK has no operator for)
  std::string from;  // the TFLite op
  std::vector<std::string> fused;
  std::string activation;
  int output = -1;
  OperatorPtr op;
  std::function<void()> run;  // steps without an XNNPACK operator
};

// One operator of the file, as its lowering sees it.
struct OpNode {
  size_t index = 0;
  const tfl::Operator* op = nullptr;
  tfl::BuiltinOperator code{};
  std::string name = {};
  std::vector<int> in = {}, out = {};  // tensor indices; -1 for an absent optional input
};

// The engine while it compiles a file: its tensors, the steps so far and the file's operators (valid
// during compilation only; the bytes are the caller's).
struct Lowering {
  std::string origin;
  pthreadpool_t pool = nullptr;
  std::vector<Slot> slots;
  std::vector<Step> steps;
  const tfl::Model* model = nullptr;
  const tfl::SubGraph* graph = nullptr;
  std::map<int, std::pair<int, std::array<uint32_t, 4>>> pending_pads;  // pad output -> (pad input, t/r/b/l)
  std::set<size_t> absorbed;  // ops merged into an earlier step

  [[noreturn]] void fail(const std::string& why) const;
  [[noreturn]] void fail_op(const std::string& op, int out, const std::string& why) const;
  void check(xnn_status s, const std::string& op, int out, const char* call) const;
  void need(bool ok, const std::string& op, int out, const std::string& why) const {
    if (!ok) fail_op(op, out, why);
  }

  Slot& slot(int i) { return slots[static_cast<size_t>(i)]; }
  float* ptr(int i) { return slot(i).data.data(); }
  // The operand an op reads at position k, which must be there.
  int arg(const OpNode& n, size_t k) const;
  std::vector<int32_t> ints(int i, const std::string& op, int out);
  Step& add(std::string kind, std::string from, int out, xnn_operator_t op,
            tfl::ActivationFunctionType act = tfl::ActivationFunctionType_NONE);

  const tfl::Operator* op_at(size_t o) const { return graph->operators()->Get(static_cast<flatbuffers::uoffset_t>(o)); }
  tfl::BuiltinOperator code_at(size_t o) const { return model->operator_codes()->Get(op_at(o)->opcode_index())->builtin_code(); }
};

using LowerRule = void (*)(Lowering&, const OpNode&);

struct OpDef {
  tfl::BuiltinOperator code;
  LowerRule lower;
};

// Adds a family's ops to the table; each ops/*.cpp holds one static OpRegistration.
struct OpRegistration {
  explicit OpRegistration(std::vector<OpDef> ops);
};

const OpDef* find_op(tfl::BuiltinOperator code);
// The names of the ops in the table, comma-separated, for the message naming an op without a lowering.
std::string supported_ops();

// -------------------------------------------------------------------------------------------------
// Shared by several op files

std::pair<float, float> clamp_of(tfl::ActivationFunctionType a);
// A clamp step computing the activation `act` from x into out.
void clamp(Lowering& cx, const std::string& name, int x, int out, tfl::ActivationFunctionType act);
// XNNPACK computes a window op's output size from its parameters and writes that many pixels: the
// file's output shape must be exactly that, or the operator would write past the buffer.
void expect_window_output(const Lowering& cx, const std::string& name, int out, const Shape& xs, const Shape& ys,
                          std::array<int64_t, 2> kernel, std::array<int64_t, 2> stride, std::array<int64_t, 2> dilation,
                          const std::array<uint32_t, 4>& pads, bool same);

}  // namespace nnmeter::xnnpack
