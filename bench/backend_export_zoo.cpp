// Writes the model zoo (or the named models) as ONNX files plus zoo.json (name, file, FLOPs) for the
// benchmark scripts and the main job.
#include <fmt/format.h>

#include <iostream>

#include "networks/architectures.h"
#include "common/io.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: backend_export_zoo OUT_DIR [RESOLUTION [NAME...]]\n";
    return 2;
  }
  try {
    const nnmeter::fs::path dir = argv[1];
    const int64_t res = argc > 2 ? std::stoll(argv[2]) : 224;
    nnmeter::Json index = nnmeter::Json::array();
    const std::vector<std::string> names =
        argc > 3 ? std::vector<std::string>(argv + 3, argv + argc) : nnmeter::networks::architectures();
    for (const auto& name : names) {
      const auto m = nnmeter::networks::build(name, res);
      const auto file = dir / (name + ".onnx");
      nnmeter::io::write_file_atomic(file, m.model.SerializeAsString());
      index.push_back({{"name", name}, {"file", file.string()}, {"flops", m.flops}});
    }
    nnmeter::io::save_json_file(dir / "zoo.json", index);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
