// A backend plugin that misbehaves on purpose, for the profiler's isolation tests: a model whose file name
// contains CRASH segfaults the process, HANG never returns, FAIL throws, HUGE measures 1e308 ms; every
// profile call is counted in the file named by COUNTER ("<model> <pid>" per line) so tests can tell
// whether a model was profiled again, and in which process; ENV_LOG names a file that gets the worker's
// GLIBC_TUNABLES per profile call. Every other model takes 2 ms, its runs spread by ±SPREAD ms, at a level
// set per call (a repeat is a fresh process) by LEVEL_NOISE: 2 ms × (1 + LEVEL_NOISE × u), u uniform in [-1, 1]
// and reproducible — drawn from the model's name and how often NOISE_STATE (a file) has seen it before; what a
// noisy machine does to a measurement, for the tests of the build's verdict on its own labels. Two more shapes
// of noise, also drawn reproducibly: DRIFT raises the level by DRIFT × (calls so far / 100) (a machine slowly
// heating up or filling with other work), HEAVY_TAIL makes that share of calls 3x slower (another process's
// burst), the noise a minimum of repeats should shrug off.
// NNMETER_CHAOS_CRASH=static|constructor|get_version segfaults while the library loads, in the
// constructor or in get_version: what registration, check-env and connect must survive.
// NNMETER_CHAOS_HANG=constructor never returns from the constructor: what a worker's start must survive.
#include <nnmeter/plugin.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string_view>

namespace {

using nnmeter::plugin::json;

void crash_if(const char* stage) {
  const char* when = std::getenv("NNMETER_CHAOS_CRASH");
  if (when != nullptr && std::strcmp(when, stage) == 0) ::raise(SIGSEGV);
}

void hang_if(const char* stage) {
  const char* when = std::getenv("NNMETER_CHAOS_HANG");
  if (when != nullptr && std::strcmp(when, stage) == 0)
    for (;;) ::pause();
}

const bool crashed_while_loading = [] {
  crash_if("static");
  return false;
}();

class chaosBackend : public nnmeter::plugin::Backend {
 public:
  explicit chaosBackend(const json& config) : Backend(config) {
    crash_if("constructor");
    hang_if("constructor");
  }
  std::string get_version() const override {
    crash_if("get_version");
    return "chaos 1";
  }
  json params() const override {
    return json::array({{{"name", "COUNTER"}, {"type", "string"}, {"default", ""}, {"help", "file counting profile calls"}},
                        {{"name", "SPREAD"}, {"type", "float"}, {"default", 0.2}, {"help", "run-to-run spread, ms"}},
                        {{"name", "ENV_LOG"}, {"type", "string"}, {"default", ""}, {"help", "file logging GLIBC_TUNABLES"}},
                        {{"name", "LEVEL_NOISE"}, {"type", "float"}, {"default", 0.0}, {"help", "per-call level spread"}},
                        {{"name", "NOISE_STATE"}, {"type", "string"}, {"default", ""}, {"help", "file of calls seen"}},
                        {{"name", "DRIFT"}, {"type", "float"}, {"default", 0.0}, {"help", "level rise per 100 calls"}},
                        {{"name", "HEAVY_TAIL"}, {"type", "float"}, {"default", 0.0}, {"help", "share of 3x slow calls"}}});
  }
  std::string test_connection() override { return "chaos ready"; }
  json profile(const std::vector<std::string>& files) override {
    const std::string& model = files.at(0);
    if (const std::string counter = config_.value("COUNTER", ""); !counter.empty())
      std::ofstream(counter, std::ios::app) << model << " " << ::getpid() << "\n";
    if (const std::string env_log = config_.value("ENV_LOG", ""); !env_log.empty()) {
      const char* tunables = std::getenv("GLIBC_TUNABLES");
      std::ofstream(env_log, std::ios::app) << "[" << (tunables != nullptr ? tunables : "") << "]\n";
    }
    if (model.find("CRASH") != std::string::npos) ::raise(SIGSEGV);
    if (model.find("HANG") != std::string::npos)
      for (;;) ::pause();
    if (model.find("FAIL") != std::string::npos) throw std::runtime_error("cannot run this model");
    if (model.find("HUGE") != std::string::npos) return {{"latency_ms", {1e308, 1e308, 1e308}}};
    const double spread = config_.value("SPREAD", 0.2);
    const Draw d = draw(model);
    double level = 2.0 * (1 + config_.value("LEVEL_NOISE", 0.0) * d.u);
    level *= 1 + config_.value("DRIFT", 0.0) * static_cast<double>(d.calls) / 100;
    if (d.tail < config_.value("HEAVY_TAIL", 0.0)) level *= 3;
    return {{"latency_ms", {level, level + spread, level - spread}}};
  }

 private:
  // For this call of `model`: u in [-1, 1] and tail in [0, 1), seeded by its name and its earlier calls in
  // NOISE_STATE, and the calls of every model before it.
  struct Draw {
    double u = 0, tail = 1;
    uint64_t calls = 0;
  };
  Draw draw(const std::string& model) const {
    const std::string state = config_.value("NOISE_STATE", "");
    if (state.empty()) return {};
    const std::string name = model.substr(model.find_last_of('/') + 1);
    Draw d;
    uint64_t seen = 0;
    {
      std::ifstream in(state);
      for (std::string line; std::getline(in, line); ++d.calls) seen += line == name;
    }
    std::ofstream(state, std::ios::app) << name << "\n";
    const uint64_t h = std::hash<std::string_view>()(name);
    std::seed_seq seed{static_cast<uint32_t>(h), static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(seen)};
    std::mt19937_64 rng(seed);
    d.u = std::uniform_real_distribution<double>(-1.0, 1.0)(rng);
    d.tail = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    return d;
  }
};

}  // namespace

NNMETER_PLUGIN("chaos_backend", "1", chaosBackend)
