// A backend plugin that misbehaves on purpose, for the profiler's isolation tests: a model whose file name
// contains CRASH segfaults the process, HANG never returns, FAIL throws; every profile call is
// counted in the file named by COUNTER so tests can tell whether a model was profiled again.
#include <nnmeter/plugin.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>

namespace {

using nnmeter::plugin::json;

class chaosBackend : public nnmeter::plugin::Backend {
 public:
  using Backend::Backend;
  json params() const override {
    return json::array({{{"name", "COUNTER"}, {"type", "string"}, {"default", ""}, {"help", "file counting profile calls"}}});
  }
  std::string test_connection() override { return "chaos ready"; }
  json profile(const std::vector<std::string>& files) override {
    const std::string& model = files.at(0);
    if (const std::string counter = config_.value("COUNTER", ""); !counter.empty())
      std::ofstream(counter, std::ios::app) << model << "\n";
    if (model.find("CRASH") != std::string::npos) ::raise(SIGSEGV);
    if (model.find("HANG") != std::string::npos)
      for (;;) ::pause();
    if (model.find("FAIL") != std::string::npos) throw std::runtime_error("cannot run this model");
    return {{"latency_ms", {2.0, 2.2, 1.8}}};
  }
};

}  // namespace

NNMETER_PLUGIN_CLASSES(chaosBackend)
