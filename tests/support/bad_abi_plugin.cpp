// A backend plugin claiming a future plugin ABI: registration must refuse it.
#include <nnmeter/plugin.h>

namespace {

class futureBackend : public nnmeter::plugin::Backend {
 public:
  using Backend::Backend;
  std::string test_connection() override { return "unreachable"; }
  nnmeter::plugin::json profile(const std::vector<std::string>&) override { return {{"avg", 1.0}}; }
};

}  // namespace

extern "C" NNMETER_PLUGIN_EXPORT const nnmeter_plugin_class* nnmeter_plugin_find_class(const char* name) {
  static nnmeter_plugin_class table = *nnmeter::plugin::detail::describe<futureBackend>("futureBackend");
  table.abi_version = NNMETER_PLUGIN_ABI_VERSION + 1;
  return std::strcmp(name, "futureBackend") == 0 ? &table : nullptr;
}
