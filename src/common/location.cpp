#include "common/location.h"

#include <dlfcn.h>

#include <cstdlib>

namespace nnmeter {

fs::path library_dir() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&library_dir), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code ec;
  return fs::weakly_canonical(fs::path(info.dli_fname), ec).parent_path();
}

fs::path find_worker_executable() {
  if (const char* env = std::getenv("NN_METER_WORKER"); env != nullptr && *env != '\0') {
    if (!fs::is_regular_file(env)) throw Error(std::string("NN_METER_WORKER=") + env + " is not a file");
    return env;
  }
  // The worker built or installed with this very library: beside it in a build tree, in the library's
  // libexec folder when installed. Any process that loads the library finds the same one.
  std::error_code ec;
  if (const fs::path lib_dir = library_dir(); !lib_dir.empty())
    for (const fs::path& candidate : {lib_dir / "nn-meter-worker", lib_dir / NNMETER_WORKER_FROM_LIBDIR / "nn-meter-worker"})
      if (fs::is_regular_file(candidate, ec)) return candidate.lexically_normal();
  throw Error("cannot find nn-meter-worker, the program that runs profiling and plugin checks (it is built and "
              "installed with libnnmeter): reinstall nn-meter or set NN_METER_WORKER to its path");
}

}  // namespace nnmeter
