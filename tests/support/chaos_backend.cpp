// A backend plugin that misbehaves on purpose, for the profiler's isolation tests: a model whose file name
// contains CRASH segfaults the process, HANG never returns, FAIL throws; every profile call is
// counted in the file named by COUNTER ("<model> <pid>" per line) so tests can tell whether a model was
// profiled again, and in which process. Every other model takes 2 ms, its runs spread by ±SPREAD ms.
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
    return json::array({{{"name", "COUNTER"}, {"type", "string"}, {"default", ""}, {"help", "file counting profile calls"}},
                        {{"name", "SPREAD"}, {"type", "float"}, {"default", 0.2}, {"help", "run-to-run spread, ms"}}});
  }
  std::string test_connection() override { return "chaos ready"; }
  json profile(const std::vector<std::string>& files) override {
    const std::string& model = files.at(0);
    if (const std::string counter = config_.value("COUNTER", ""); !counter.empty())
      std::ofstream(counter, std::ios::app) << model << " " << ::getpid() << "\n";
    if (model.find("CRASH") != std::string::npos) ::raise(SIGSEGV);
    if (model.find("HANG") != std::string::npos)
      for (;;) ::pause();
    if (model.find("FAIL") != std::string::npos) throw std::runtime_error("cannot run this model");
    const double spread = config_.value("SPREAD", 0.2);
    return {{"latency_ms", {2.0, 2.0 + spread, 2.0 - spread}}};
  }
};

}  // namespace

NNMETER_PLUGIN_CLASSES(chaosBackend)
