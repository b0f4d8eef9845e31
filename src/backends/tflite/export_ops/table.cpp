// The registry the op files fill at load time of the library, and the list derived from it.
#include "backends/tflite/export_ops/op.h"
#include "backends/tflite/tflite_export.h"
#include "common/op_table.h"

namespace nnmeter::tflite {

namespace {

using Table = OpTable<ExportOp, &ExportOp::name>;

}  // namespace

ExportRegistration::ExportRegistration(std::vector<ExportOp> ops) { Table::add(std::move(ops)); }

const ExportOp* find_export_op(const std::string& name) { return Table::find(name); }

const std::vector<std::string>& exportable_ops() {
  static const std::vector<std::string> ops = Table::sorted_keys([](const ExportOp&) { return true; });
  return ops;
}

}  // namespace nnmeter::tflite
