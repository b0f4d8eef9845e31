#include "registry/builtins.h"

namespace nnmeter {

namespace {

// One provider per kind: a second would make the listing order depend on the link order.
template <class Info>
struct Provider {
  std::vector<Info> (*list)() = nullptr;
  void set(std::vector<Info> (*fn)(), const char* kind) {
    if (list != nullptr) throw Error(std::string("two providers of builtin ") + kind);
    list = fn;
  }
  std::vector<Info> get() const { return list != nullptr ? list() : std::vector<Info>{}; }
};

Provider<BackendInfo>& backends() {
  static Provider<BackendInfo> p;
  return p;
}
Provider<KernelInfo>& kernels() {
  static Provider<KernelInfo> p;
  return p;
}
Provider<OperatorInfo>& operators() {
  static Provider<OperatorInfo> p;
  return p;
}
Provider<TestCaseInfo>& testcases() {
  static Provider<TestCaseInfo> p;
  return p;
}

}  // namespace

BuiltinRegistration::BuiltinRegistration(std::vector<BackendInfo> (*list)()) { backends().set(list, "backends"); }
BuiltinRegistration::BuiltinRegistration(std::vector<KernelInfo> (*list)()) { kernels().set(list, "kernels"); }
BuiltinRegistration::BuiltinRegistration(std::vector<OperatorInfo> (*ops)(), std::vector<TestCaseInfo> (*cases)()) {
  operators().set(ops, "operators");
  testcases().set(cases, "testcases");
}

std::vector<BackendInfo> builtin_backends() { return backends().get(); }
std::vector<KernelInfo> builtin_kernels() { return kernels().get(); }
std::vector<OperatorInfo> builtin_operators() { return operators().get(); }
std::vector<TestCaseInfo> builtin_testcases() { return testcases().get(); }

}  // namespace nnmeter
