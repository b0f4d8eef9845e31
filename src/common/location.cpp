#include "common/location.h"

#include <dlfcn.h>

namespace nnmeter {

fs::path library_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&library_dir), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  return fs::weakly_canonical(fs::path(info.dli_fname), ec).parent_path();
}

}  // namespace nnmeter
