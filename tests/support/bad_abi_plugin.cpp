// A plugin library whose description nn-meter must refuse, chosen by NNMETER_BAD_PLUGIN_INFO: by default
// it claims a future plugin ABI; "null" describes nothing; "no_classes" counts classes it does not give;
// "duplicate" names two classes alike.
#include <nnmeter/plugin.h>

#include <cstdlib>
#include <string>

namespace {

class futureBackend : public nnmeter::plugin::Backend {
 public:
  using Backend::Backend;
  std::string test_connection() override { return "unreachable"; }
  nnmeter::plugin::json profile(const std::vector<std::string>&) override { return {{"avg", 1.0}}; }
};

const char* future_error() { return ""; }

}  // namespace

extern "C" NNMETER_PLUGIN_EXPORT const nnmeter_plugin_library* nnmeter_plugin_info(void) {
  const char* mode_env = std::getenv("NNMETER_BAD_PLUGIN_INFO");
  const std::string mode = mode_env != nullptr ? mode_env : "";
  if (mode == "null") return nullptr;
  const nnmeter_plugin_functions* functions = &nnmeter::plugin::detail::ClassFunctions<futureBackend>::table;
  static const nnmeter_plugin_class classes[] = {{NNMETER_PLUGIN_KIND_BACKEND, "futureBackend", functions},
                                                 {NNMETER_PLUGIN_KIND_BACKEND, "futureBackend", functions}};
  static nnmeter_plugin_library library;
  library = {NNMETER_PLUGIN_ABI_VERSION + 1, "future", "3.0", 1, classes, &future_error};
  if (mode == "no_classes") library = {NNMETER_PLUGIN_ABI_VERSION, "hollow", "1", 2, nullptr, &future_error};
  if (mode == "duplicate") library = {NNMETER_PLUGIN_ABI_VERSION, "twins", "1", 2, classes, &future_error};
  return &library;
}
