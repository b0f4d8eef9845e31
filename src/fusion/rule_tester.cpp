// The fusion-rule tester: resolve test cases (with their dependencies), generate their models, profile
// them in isolated workers through the durable journal, decide the rules.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "common/hash.h"
#include "common/io.h"
#include "fusion/testcases.h"
#include "nnmeter/backend.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "nnmeter/ruletest.h"
#include "profiling/journal.h"

namespace nnmeter {

namespace {

constexpr int kBatch = 1;  // nn-Meter's fusion test models have batch 1

struct CaseEntry {
  std::string name;
  std::unique_ptr<TestCase> testcase;
  bool customized = false;
  std::vector<std::string> deps;
  std::optional<std::vector<std::string>> ops;  // BF: the models of the ops alone, in chain order
  std::optional<fusion::Hypotheses> hypotheses;  // builtin MON: the two predictions of its block
};

std::string join_names(const std::vector<std::string>& names) { return fmt::format("{}", fmt::join(names, ", ")); }

}  // namespace

std::vector<std::string> order_by_dependencies(const std::vector<std::string>& names,
                                               const std::map<std::string, std::vector<std::string>>& deps) {
  std::vector<std::string> out;
  std::set<std::string> done, visiting;
  std::function<void(const std::string&)> visit = [&](const std::string& name) {
    if (done.count(name)) return;
    if (!visiting.insert(name).second) throw Error("test case dependencies form a cycle through '" + name + "'");
    const auto it = deps.find(name);
    if (it == deps.end()) throw Error("test case '" + name + "' is a dependency but was not resolved");
    for (const auto& d : it->second) visit(d);
    visiting.erase(name);
    done.insert(name);
    out.push_back(name);
  };
  for (const auto& n : names) visit(n);
  return out;
}

struct RuleTester::Impl {
  Workspace ws;
  Registry registry;
  RuleTestSettings settings;
  Json backend_config;  // the workspace's, as the rule test profiles with it
  std::unique_ptr<Backend> planner;  // a builtin backend's instance, asked for kernel counts only
  RuleTestConfig config;
  std::map<std::string, OperatorInfo> operators;
  std::map<std::string, TestCaseInfo> specials;
  std::map<std::string, CaseEntry> cases;
  std::vector<std::string> order;

  std::vector<std::string> operator_names() const {
    std::vector<std::string> out;
    for (const auto& [name, _] : operators) out.push_back(name);
    return out;
  }

  std::unique_ptr<Operator> make_operator(const std::string& testcase, const std::string& op) const {
    const auto it = operators.find(op);
    if (it == operators.end())
      throw Error(fmt::format("test case {}: unknown operator '{}' (known: {}); fix the pair (BASIC_TESTCASES of "
                              "ruletest_config.yaml or --testcases) or register the operator with `nn-meter register --operator`",
                              testcase, op, join_names(operator_names())));
    return it->second.create(ws.ruletest_config);
  }

  // "conv_relu" → "BF_conv_relu"; special and already prefixed names stay.
  std::string canonical(const std::string& name) const {
    if (specials.count(name) || name.rfind("BF_", 0) == 0 || name.find('_') == std::string::npos) return name;
    return "BF_" + name;
  }

  void resolve(const std::string& name) {
    if (cases.count(name)) return;
    CaseEntry entry;
    entry.name = name;
    if (const auto sp = specials.find(name); sp != specials.end()) {
      entry.customized = sp->second.customized;
      entry.testcase = sp->second.create(ws.ruletest_config);
      if (name == "MON" && !entry.customized) entry.hypotheses = fusion::kMonHypotheses;
    } else if (const auto ops = fusion::split_basic_name(name)) {
      fusion::BasicFusionCase::Ops chain;
      for (const auto& op : *ops) chain.emplace_back(op, make_operator(name, op));
      auto bf = std::make_unique<fusion::BasicFusionCase>(name, std::move(chain), fusion::basic_input_shape(config, *ops),
                                                          config.alpha);
      entry.ops = bf->op_models();
      entry.testcase = std::move(bf);
    } else {
      std::vector<std::string> known;
      for (const auto& [n, _] : specials) known.push_back(n);
      throw Error(fmt::format("unknown test case '{}': name a pair as BF_<op1>_<op2> (or op1_op2), a chain of up to {} "
                              "operators as BF_<op1>_<op2>_<op3>, or one of: {}",
                              name, fusion::kMaxChainOps, join_names(known)));
    }
    for (const auto& d : entry.testcase->depends_on()) entry.deps.push_back(canonical(d));
    std::vector<std::string> deps = entry.deps;
    cases.emplace(name, std::move(entry));
    for (const auto& d : deps) resolve(d);
  }

  std::vector<std::string> requested() const {
    std::vector<std::string> out;
    if (!settings.testcases.empty()) {
      for (const auto& n : settings.testcases) out.push_back(canonical(n));
      return out;
    }
    for (const auto& pair : config.basic) {
      const std::string name = "BF_" + pair;
      if (!fusion::split_basic_name(name))
        throw Error(fmt::format("ruletest_config.yaml: BASIC_TESTCASES entry '{}' must be a pair op1_op2 or a chain "
                                "op1_op2_op3 of up to {} operators",
                                pair, fusion::kMaxChainOps));
      out.push_back(name);
    }
    for (const auto& other : config.other) out.push_back(other);
    return out;
  }

  fs::path root() const { return ws.fusion_rule_test_dir(); }
  fs::path results() const { return root() / "results"; }
};

RuleTester::RuleTester(Workspace workspace, Registry registry, RuleTestSettings settings)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.ws = std::move(workspace);
  m.registry = std::move(registry);
  m.settings = std::move(settings);
  if (m.settings.backend.empty()) throw Error("the rule tester needs a backend name (--backend)");
  if (!(m.settings.timeout_s > 0)) throw Error("the profiling timeout must be positive");
  const BackendInfo backend = find_backend(m.registry, m.settings.backend);  // unknown backends fail before any work
  m.backend_config = m.ws.backend_config;
  // The criterion compares ops profiled alone with the block, inside which the second op reads data the
  // first just wrote. Profiled with cold caches, the lone second op would pay for a cold input the block
  // never pays, and every pair would look fused: fusion is judged on warm back-to-back runs.
  if (backend.warm_profiling) m.backend_config = backend.warm_profiling(m.backend_config);
  // Plugins are only ever loaded in profiling workers, where a crash costs one model.
  // A backend that cannot be constructed here still profiles (or reports why) in its workers.
  if (!backend.customized) {
    try {
      m.planner = backend.create(backend_only(resolve_backend_config(backend.params, m.backend_config, "backend_config.yaml")));
    } catch (const Error& e) {
      spdlog::debug("ruletest: {} gives no kernel counts: {}", backend.name, e.what());
    }
  }
  m.config = m.ws.ruletest();
  for (auto& info : list_operators(m.registry))
    if (info.implement == "onnx") m.operators.emplace(info.name, std::move(info));
  for (auto& info : list_testcases(m.registry))
    if (info.implement == "onnx") m.specials.emplace(info.name, std::move(info));
  std::vector<std::string> names;
  for (const auto& n : m.requested())
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  if (names.empty())
    throw Error("no test cases to run: BASIC_TESTCASES and OTHER_TESTCASES of ruletest_config.yaml are empty");
  for (const auto& n : names) m.resolve(n);
  std::map<std::string, std::vector<std::string>> deps;
  for (const auto& [name, entry] : m.cases) deps[name] = entry.deps;
  m.order = order_by_dependencies(names, deps);
}

RuleTester::~RuleTester() = default;
RuleTester::RuleTester(RuleTester&&) noexcept = default;
RuleTester& RuleTester::operator=(RuleTester&&) noexcept = default;

std::vector<std::string> RuleTester::testcases() const { return impl_->order; }
std::vector<std::string> RuleTester::depends_on(const std::string& testcase) const {
  return impl_->cases.at(testcase).deps;
}
const Workspace& RuleTester::workspace() const { return impl_->ws; }
fs::path RuleTester::rules_file() const { return impl_->results() / "detected_fusion_rule.json"; }

// nn-Meter's criterion compares (T1 + T2) − T12 with α·min(T1, T2), each an average of noisy runs. When
// one op dwarfs the other (a conv of milliseconds and an activation of tens of µs at nn-Meter's default sizes) the
// margin is smaller than the run-to-run spread and the verdict would be a coin flip; such a case is reported
// undecided with what to change, never guessed.
namespace {

constexpr const char* kUndecidable = "undecidable";
// How many times a case the noise left undecided is measured again before it stays undecided.
constexpr int kRemeasurePasses = 3;

// Independent measurements of one model: their mean, with the deviation of that mean (the spread of one
// measurement over sqrt(n)), so that re-measuring narrows the noise band of within_noise.
Latency pooled(const std::vector<Latency>& passes) {
  double avg = 0, var = 0;
  for (const auto& l : passes) avg += l.value_ms, var += l.std * l.std;
  const auto n = static_cast<double>(passes.size());
  return Latency{avg / n, std::sqrt(var / n) / std::sqrt(n)};
}

std::optional<std::string> within_noise(const std::map<std::string, Latency>& latencies,
                                        const std::vector<std::string>& ops, double alpha) {
  const Latency& block = latencies.at("block");
  double sum = 0, least = std::numeric_limits<double>::infinity(), variance = block.std * block.std;
  for (const auto& op : ops) {
    const Latency& t = latencies.at(op);
    sum += t.value_ms;
    least = std::min(least, t.value_ms);
    variance += t.std * t.std;
  }
  const double margin = (sum - block.value_ms) - alpha * least;
  const double spread = 2 * std::sqrt(variance);
  if (std::fabs(margin) > spread) return std::nullopt;
  return fmt::format("{}: the margin {:.4f} ms is within the measurement noise (±{:.4f} ms); use smaller HW, CIN "
                     "or COUT in ruletest_config.yaml so both ops take comparable time, or more NUM_RUNS",
                     kUndecidable, margin, spread);
}

// The block against the midpoint of its two predictions, next to the noise of every latency involved: a burst
// of the device moves one model's latency by more than the two predictions differ, and MON would then flip
// from run to run.
std::optional<std::string> within_noise(const std::map<std::string, Latency>& latencies, const fusion::Hypotheses& h) {
  const Latency& block = latencies.at("block");
  double fused = 0, apart = 0, variance = block.std * block.std;
  std::set<std::string> models;
  for (const auto& name : h.fused) fused += latencies.at(name).value_ms, models.insert(name);
  for (const auto& name : h.apart) apart += latencies.at(name).value_ms, models.insert(name);
  for (const auto& name : models) variance += latencies.at(name).std * latencies.at(name).std;
  const double margin = block.value_ms - (fused + apart) / 2;
  const double spread = 2 * std::sqrt(variance);
  if (std::fabs(margin) > spread) return std::nullopt;
  return fmt::format("{}: the block is {:+.4f} ms from the midpoint of its fused ({:.4f} ms) and separate ({:.4f} ms) "
                     "predictions, within the measurement noise (±{:.4f} ms); measure with more REPEATS or NUM_RUNS",
                     kUndecidable, margin, fused, apart, spread);
}

// The kernels the backend's plan runs for these models together (nullopt when it did not report one of them).
std::optional<int> kernel_count(const std::map<std::string, int>& kernels, const std::vector<std::string>& models) {
  int n = 0;
  for (const auto& model : models) {
    const auto it = kernels.find(model);
    if (it == kernels.end()) return std::nullopt;
    n += it->second;
  }
  return n;
}

// Timing inside the noise, but the backend reports the kernels each model runs: the ops are fused when the
// block runs fewer kernels than the ops apart.
std::optional<Json> settled_by_kernel_counts(const std::map<std::string, int>& kernels, const std::vector<std::string>& ops) {
  const auto block = kernel_count(kernels, {"block"}), apart = kernel_count(kernels, ops);
  if (!block || !apart) return std::nullopt;
  return Json{{"obey", *block < *apart},
              {"reason", fmt::format("timing inside the noise; the backend's plan runs {} kernel(s) for the block, {} for "
                                     "the {} ops apart",
                                     *block, *apart, ops.size() == 2 ? "two" : std::to_string(ops.size()))}};
}

// The same for two predictions: fused when the block runs no more kernels than the fused prediction's models
// (nullopt when the counts cannot tell the two apart).
std::optional<Json> settled_by_kernel_counts(const std::map<std::string, int>& kernels, const fusion::Hypotheses& h) {
  const auto block = kernel_count(kernels, {"block"}), fused = kernel_count(kernels, h.fused),
             apart = kernel_count(kernels, h.apart);
  if (!block || !fused || !apart || *fused >= *apart) return std::nullopt;
  return Json{{"obey", *block <= *fused},
              {"reason", fmt::format("timing inside the noise; the backend's plan runs {} kernel(s) for the block, {} "
                                     "if fused, {} if not",
                                     *block, *fused, *apart)}};
}

}  // namespace

Json RuleTester::detect(const std::map<std::string, ProfiledCase>& profiled) const {
  const Impl& m = *impl_;
  Json rules = Json::object();
  for (const auto& name : m.order) {
    const CaseEntry& entry = m.cases.at(name);
    Json rule = Json::object();
    // nn-Meter: a dependency whose obey differs from the expected (true) makes the case false without
    // evaluation. A dependency that could not be decided leaves this case undecided too.
    for (const auto& d : entry.deps) {
      const Json& dep = rules.at(d).at("obey");
      if (dep.is_null()) {
        rule = {{"obey", nullptr}, {"error", fmt::format("depends on {}, which could not be decided", d)}};
        break;
      }
      if (!dep.get<bool>()) {
        rule = {{"obey", false}, {"reason", fmt::format("not evaluated: depends on {}, which does not obey", d)}};
        break;
      }
    }
    const auto it = profiled.find(name);
    if (rule.empty() && (it == profiled.end() || !it->second.error.empty()))
      rule = {{"obey", nullptr}, {"error", it == profiled.end() ? "not profiled" : it->second.error}};
    if (rule.empty()) {
      std::map<std::string, double> ms;
      for (const auto& [model, latency] : it->second.latencies) ms[model] = latency.value_ms;
      try {
        rule = entry.testcase->run_test(ms);
        if (!rule.is_object() || !rule.contains("obey") || !rule["obey"].is_boolean())
          rule = {{"obey", nullptr}, {"error", "the test case returned no boolean \"obey\": " + rule.dump()}};
      } catch (const std::exception& e) {
        rule = {{"obey", nullptr}, {"error", std::string("the test case failed to decide: ") + e.what()}};
      }
      if (entry.ops && rule["obey"].is_boolean()) {
        if (auto noise = within_noise(it->second.latencies, *entry.ops, m.config.alpha))
          rule = settled_by_kernel_counts(it->second.kernels, *entry.ops).value_or(Json{{"obey", nullptr}, {"error", *noise}});
      }
      if (entry.hypotheses && rule["obey"].is_boolean()) {
        if (auto noise = within_noise(it->second.latencies, *entry.hypotheses))
          rule = settled_by_kernel_counts(it->second.kernels, *entry.hypotheses)
                     .value_or(Json{{"obey", nullptr}, {"error", *noise}});
      }
      if (m.config.detail) {
        Json latency = Json::object();
        for (const auto& [model, l] : it->second.latencies) latency[model] = l.str();
        if (entry.ops) {
          Latency ops = it->second.latencies.at(entry.ops->front());
          for (size_t i = 1; i < entry.ops->size(); ++i) ops = ops + it->second.latencies.at((*entry.ops)[i]);
          latency["ops"] = ops.str();
        }
        rule["latency"] = latency;
      }
    }
    rules[name] = rule;
  }
  return rules;
}

RuleTestResult RuleTester::run() {
  Impl& m = *impl_;
  const fs::path testcases_dir = m.root() / "testcases";
  std::map<std::string, ProfiledCase> profiled;
  Json origin = Json::object();
  std::map<std::string, std::map<std::string, TestCaseModel>> models;

  for (const auto& name : m.order) {
    CaseEntry& entry = m.cases.at(name);
    // Customized cases name their files themselves: a folder each keeps them from colliding.
    const fs::path dir = entry.customized ? testcases_dir / name : testcases_dir;
    try {
      fs::create_directories(dir);
      models[name] = entry.testcase->generate_testcase(dir, kBatch);
      if (models[name].empty()) throw Error("it generated no model");
      for (const auto& [model, tm] : models[name])
        if (!fs::is_regular_file(tm.model)) throw Error("model '" + model + "' is missing: " + tm.model.string());
    } catch (const std::exception& e) {
      models.erase(name);
      profiled[name].error = fmt::format("generating the test models failed: {}", e.what());
      spdlog::debug("{}: {}", name, profiled[name].error);
      continue;
    }
    for (const auto& [model, tm] : models[name]) origin[name][model] = {{"model", tm.model.string()}, {"shapes", tm.shapes}};
  }
  io::save_json_file(m.results() / "origin_testcases.json", origin);

  // A job's ID carries a hash of the model bytes and the backend settings: a rerun reuses a measurement
  // only for the very same model on the same backend configuration. Pass k > 0 re-measures a case the noise
  // left undecided; its IDs end in "#k".
  const uint64_t backend_hash = fnv1a(backend_only(m.backend_config).dump(), fnv1a(m.settings.backend));
  const int repeats = MeasurementProtocol::from_config(m.backend_config).repeats;
  const fs::path journal = m.results() / "profile_journal.jsonl";
  std::map<std::string, std::map<std::string, std::vector<Latency>>> measured;  // case → model → one per pass
  std::map<std::string, std::map<std::string, std::string>> failures;            // case → model → error
  RuleTestResult result;
  auto profile_pass = [&](const std::vector<std::string>& names, int pass) {
    std::vector<ProfileJob> jobs;
    std::map<std::string, std::pair<std::string, std::string>> job_of;  // id → (case, model)
    for (const auto& name : names)
      for (const auto& [model, tm] : models.at(name)) {
        std::string id = fmt::format("{}:{}@{:016x}", name, model, fnv1a(io::read_file(tm.model), backend_hash));
        if (pass > 0) id += fmt::format("#{}", pass);
        jobs.push_back(ProfileJob{id, tm.model, {}});
        job_of[id] = {name, model};
      }
    {
      const Journal existing(journal);
      for (const auto& job : jobs)
        for (int r = 0; r < repeats; ++r) result.profiled_now += existing.records().count(Journal::key(job.id, r)) == 0;
    }
    result.models += static_cast<int>(jobs.size()) * repeats;
    const ProfilerOptions options =
        ProfilerOptions::of(m.settings.backend, m.backend_config, m.registry, m.root() / "converted",
                            pass == 0 ? "ruletest" : fmt::format("ruletest: re-measuring {} undecided", names.size()))
            .run_as(m.settings);
    for (const auto& [id, outcome] : profile_models(jobs, options, journal, m.results() / "profile_error.log")) {
      const auto& [name, model] = job_of.at(id);
      if (outcome.ok) {
        measured[name][model].push_back(outcome.latency);
        if (m.planner)
          if (const auto n = m.planner->kernel_count(outcome.converted_files)) profiled[name].kernels[model] = *n;
      } else {
        failures[name][model] = outcome.error;
        if (profiled[name].error.empty())
          profiled[name].error = fmt::format("model {} failed to profile: {}", model, outcome.error);
      }
    }
    for (const auto& name : names)
      for (const auto& [model, passes] : measured[name]) profiled[name].latencies[model] = pooled(passes);
  };

  std::vector<std::string> all;
  for (const auto& [name, _] : models) all.push_back(name);
  profile_pass(all, 0);
  result.rules = detect(profiled);
  for (int pass = 1; pass <= kRemeasurePasses; ++pass) {
    std::vector<std::string> noisy;
    for (const auto& name : all)
      if (result.rules[name]["obey"].is_null() && result.rules[name].value("error", "").rfind(kUndecidable, 0) == 0)
        noisy.push_back(name);
    if (noisy.empty()) break;
    spdlog::info("ruletest: {} test cases within the measurement noise; measuring them again ({} of {})", noisy.size(),
                 pass, kRemeasurePasses);
    result.remeasured += static_cast<int>(noisy.size());
    profile_pass(noisy, pass);
    result.rules = detect(profiled);
  }

  Json profiled_doc = origin;
  for (const auto& [name, by_model] : measured)
    for (const auto& [model, passes] : by_model) profiled_doc[name][model]["latency"] = pooled(passes).str();
  for (const auto& [name, by_model] : failures)
    for (const auto& [model, error] : by_model) profiled_doc[name][model]["error"] = error;
  io::save_json_file(m.results() / "profiled_results.json", profiled_doc);

  result.rules_file = rules_file();
  io::save_json_file(result.rules_file, result.rules);
  for (const auto& [name, rule] : result.rules.items()) {
    const Json& obey = rule.at("obey");
    if (obey.is_null()) {
      ++result.undecided;
      spdlog::debug("{}: undecided: {}", name, rule.value("error", std::string("unknown reason")));
    } else {
      ++(obey.get<bool>() ? result.obeyed : result.not_obeyed);
    }
  }
  return result;
}

}  // namespace nnmeter
