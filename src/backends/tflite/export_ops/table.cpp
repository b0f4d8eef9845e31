// The registry the op files fill at load time of the library, and the list derived from it.
#include <algorithm>

#include "backends/tflite/export_ops/op.h"
#include "backends/tflite/tflite_export.h"

namespace nnmeter::tflite {

namespace {

std::vector<ExportOp>& registry() {
  static std::vector<ExportOp> ops;
  return ops;
}

}  // namespace

ExportRegistration::ExportRegistration(std::vector<ExportOp> ops) {
  for (auto& op : ops) registry().push_back(std::move(op));
}

const ExportOp* find_export_op(const std::string& name) {
  for (const auto& op : registry())
    if (op.name == name) return &op;
  return nullptr;
}

const std::vector<std::string>& exportable_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> names;
    for (const auto& op : registry()) names.push_back(op.name);
    std::sort(names.begin(), names.end());
    return names;
  }();
  return ops;
}

}  // namespace nnmeter::tflite
