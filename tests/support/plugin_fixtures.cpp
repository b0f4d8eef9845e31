#include "support/plugin_fixtures.h"

namespace nnmeter::test {

fs::path install_library(const fs::path& built, const fs::path& dir, const std::string& file_name) {
  fs::create_directories(dir);
  fs::copy_file(built, dir / file_name, fs::copy_options::overwrite_existing);
  return dir / file_name;
}

fs::path make_backend_package(const fs::path& dir, const std::string& name) {
  fs::create_directories(dir);
  fs::copy_file(NNMETER_EXAMPLE_BACKEND_PLUGIN, dir / "backend.so", fs::copy_options::overwrite_existing);
  write_text(dir / "config.yaml", "COMMAND: cat {model}\nWARMUP_RUNS: 1\nNUM_RUNS: 3\n");
  const fs::path meta = dir / "meta_backend.yaml";
  write_text(meta, "builtinName: " + name + "\npackageLocation: " + dir.string() +
                       "\nclassModule: backend\nclassName: myBackend\ndefaultConfigFile: " +
                       (dir / "config.yaml").string() + "\n");
  return meta;
}

fs::path make_chaos_package(const fs::path& dir) {
  fs::create_directories(dir);
  fs::copy_file(NNMETER_CHAOS_PLUGIN, dir / "backend.so", fs::copy_options::overwrite_existing);
  write_text(dir / "meta.yaml", "builtinName: chaos\npackageLocation: " + dir.string() +
                                    "\nclassModule: backend\nclassName: chaosBackend\n");
  return dir / "meta.yaml";
}

fs::path make_kernel_package(const fs::path& dir, const std::string& name) {
  fs::create_directories(dir);
  const fs::path built = fs::path(NNMETER_EXAMPLE_KERNEL_PLUGIN).parent_path();
  for (const char* module : {"kernel_script.so", "config_sampler.so", "feature_parser.so"})
    fs::copy_file(built / module, dir / module, fs::copy_options::overwrite_existing);
  const fs::path meta = dir / "meta_kernel.yaml";
  write_text(meta, "builtin_name: " + name + "\nimplement: onnx\npackage_location: " + dir.string() +
                       "\nclass_module: kernel_script\nclass_name: MyKernel\nsampler_module: config_sampler\n"
                       "sampler_name: MySampler\nparser_module: feature_parser\nparser_name: MyParser\n");
  return meta;
}

}  // namespace nnmeter::test
