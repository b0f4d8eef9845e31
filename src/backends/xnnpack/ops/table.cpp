// The registry the op files fill at load time of the library.
#include <algorithm>

#include "backends/xnnpack/ops/op.h"
#include "common/op_table.h"

namespace nnmeter::xnnpack {

namespace {

using Table = OpTable<OpDef, &OpDef::code>;

// The order the unsupported-op message has always listed the ops in, family by family; the order the
// files register in is the linker's. An op missing here is listed after these.
constexpr std::array kListed = {
    tfl::BuiltinOperator_CONV_2D,       tfl::BuiltinOperator_DEPTHWISE_CONV_2D, tfl::BuiltinOperator_FULLY_CONNECTED,
    tfl::BuiltinOperator_ADD,           tfl::BuiltinOperator_SUB,               tfl::BuiltinOperator_MUL,
    tfl::BuiltinOperator_LOGISTIC,      tfl::BuiltinOperator_HARD_SWISH,        tfl::BuiltinOperator_RELU,
    tfl::BuiltinOperator_RELU6,         tfl::BuiltinOperator_SOFTMAX,           tfl::BuiltinOperator_MAX_POOL_2D,
    tfl::BuiltinOperator_AVERAGE_POOL_2D, tfl::BuiltinOperator_MEAN,            tfl::BuiltinOperator_PAD,
    tfl::BuiltinOperator_CONCATENATION, tfl::BuiltinOperator_SPLIT,             tfl::BuiltinOperator_SPLIT_V,
    tfl::BuiltinOperator_SLICE,         tfl::BuiltinOperator_RESHAPE,           tfl::BuiltinOperator_TRANSPOSE,
};

size_t listed_at(tfl::BuiltinOperator code) {
  return static_cast<size_t>(std::find(kListed.begin(), kListed.end(), code) - kListed.begin());
}

}  // namespace

OpRegistration::OpRegistration(std::vector<OpDef> ops) { Table::add(std::move(ops)); }

const OpDef* find_op(tfl::BuiltinOperator code) { return Table::find(code); }

std::string supported_ops() {
  std::vector<tfl::BuiltinOperator> codes;
  for (const auto& op : Table::entries()) codes.push_back(op.code);
  std::stable_sort(codes.begin(), codes.end(), [](auto a, auto b) { return listed_at(a) < listed_at(b); });
  std::string names;
  for (auto code : codes) names += (names.empty() ? "" : ", ") + std::string(tfl::EnumNameBuiltinOperator(code));
  return names;
}

}  // namespace nnmeter::xnnpack
