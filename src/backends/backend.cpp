// What every backend shares (nnmeter/backend.h).
#include "nnmeter/backend.h"

namespace nnmeter {

std::string converted_stem(const fs::path& onnx_path, const std::string& file_name) {
  if (file_name.empty()) return onnx_path.stem().string();
  std::string stem = fs::path(file_name).filename().string();
  if (stem.size() > 5 && stem.ends_with(".onnx")) stem.resize(stem.size() - 5);
  return stem;
}

}  // namespace nnmeter
