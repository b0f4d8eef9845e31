// Builtin feature parsers (nn-Meter's extract_feature.py): the kernel's needed configs in order, plus FLOPs/2e6 and
// params/1e6 for conv, dwconv and fc kernels, and a few extra features of our own (feature_parsers.cpp says which, and why).
#pragma once

#include <memory>

#include "kernels/builtin.h"

namespace nnmeter::kernels {

std::unique_ptr<FeatureParser> make_parser(const std::string& kernel_name, Family family);

}  // namespace nnmeter::kernels
