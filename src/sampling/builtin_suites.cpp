// The builtin kernels, each with its family's config sampler and feature parser, registered as the builtins of
// registry/builtins.h. It lives here, above both kernels/ and the samplers, so that kernels/ never depends on
// sampling/.
#include "kernels/builtin.h"
#include "kernels/feature_parsers.h"
#include "registry/builtins.h"
#include "sampling/builtin_samplers.h"

namespace nnmeter {

namespace {

std::vector<KernelInfo> builtins() {
  std::vector<KernelInfo> out;
  for (auto& spec : kernels::builtin_kernel_specs()) {
    KernelInfo info;
    info.name = spec.name;
    info.customized = false;
    info.implement = "onnx";
    info.create = [spec](const Json& predictorbuild_config) {
      KernelSuite suite;
      suite.name = spec.name;
      suite.kernel = kernels::make_kernel(spec);
      suite.sampler = sampling::make_sampler(spec.family, spec.name, predictorbuild_config);
      suite.parser = kernels::make_parser(spec.name, spec.family);
      return suite;
    };
    out.push_back(std::move(info));
  }
  return out;
}

const BuiltinRegistration registration(&builtins);

}  // namespace

}  // namespace nnmeter
