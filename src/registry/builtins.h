// Where the builtin modules come from: each folder that implements a kind (backends/, sampling/, fusion/)
// registers its list here when the library loads, so that the registry's lookups (nnmeter/registry.h)
// reach them without depending on any folder above registry/. Registration stores the function, not the
// list: the lists are built on first use, after every static object of the library exists.
#pragma once

#include "nnmeter/registry.h"

namespace nnmeter {

struct BuiltinRegistration {
  explicit BuiltinRegistration(std::vector<BackendInfo> (*backends)());
  explicit BuiltinRegistration(std::vector<KernelInfo> (*kernels)());
  BuiltinRegistration(std::vector<OperatorInfo> (*operators)(), std::vector<TestCaseInfo> (*testcases)());
};

}  // namespace nnmeter
