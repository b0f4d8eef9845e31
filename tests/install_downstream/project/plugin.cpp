// A plugin built with the installed helper sees plugin.h and compiles its entry point as C++17; this one
// only has to compile and link.
#include "nnmeter/plugin.h"

namespace {

class downstreamBackend : public nnmeter::plugin::Backend {
 public:
  using Backend::Backend;
  std::string test_connection() override { return "downstream"; }
  nnmeter::plugin::json profile(const std::vector<std::string>&) override { return {{"avg", 1.0}}; }
};

}  // namespace

NNMETER_PLUGIN("downstream_plugin", "0.1", downstreamBackend)
