// The fusion-rule tester (nn-Meter's fusion_rule_tester): for every test case, generate small ONNX
// models, profile them on a backend, and decide from their latencies whether the backend fuses the
// operators involved. The resulting rules drive kernel detection at prediction time.
//
// Files (under <ws>/fusion_rule_test/):
//   testcases/<testcase>_<model>.onnx        the test models (customized test cases: testcases/<testcase>/)
//   results/origin_testcases.json            {testcase: {model: {model: path, shapes: [[...]]}}}
//   results/profiled_results.json            the same plus "latency": "avg +- std" (or "error")
//   results/detected_fusion_rule.json        {testcase: {"obey": true|false|null, ...}}
//   results/profile_journal.jsonl            durable record of every profiled model (resume)
//   results/profile_error.log                one line per model that failed to profile
//
// Test cases: `BF_<op1>_<op2>` for every `op1_op2` of BASIC_TESTCASES (builtin or registered
// operators), then OTHER_TESTCASES (builtin MON or registered test cases). Dependencies are run too and
// decided first; a case whose dependency did not obey is `obey: false` without evaluation, one whose
// dependency (or own model) could not be profiled is `obey: null` with an "error". The result files
// describe the last run: a run limited to some test cases (RuleTestSettings::testcases) writes only those.
#pragma once

#include <map>
#include <memory>
#include <optional>

#include "nnmeter/common.h"
#include "nnmeter/fusion.h"
#include "nnmeter/latency.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "nnmeter/workspace.h"

namespace nnmeter {

// nn-Meter's criterion: a pair op1→op2 is fused when (T1 + T2) − T12 > alpha · min(T1, T2).
bool basic_fusion_obeys(double t1_ms, double t2_ms, double t12_ms, double alpha);
// The same for a chain op1→…→opN, each op measured alone: fused when ΣTi − T(block) > alpha · min Ti.
bool basic_fusion_obeys(const std::vector<double>& ops_ms, double block_ms, double alpha);

// The MON decision (multiple out nodes): a producer P whose output feeds both a fusible consumer C and
// another branch B. `block` is the latency of P → {C, B}; the backend fuses C into P despite the second
// consumer when the block is closer to T(P∘C fused) + T(B) than to T(P) + T(C) + T(B).
bool mon_obeys(double producer_ms, double consumer_ms, double fused_pair_ms, double branch_ms, double block_ms);

struct RuleTestSettings {
  std::string backend;               // builtin or registered backend name
  std::vector<std::string> testcases;  // names to run (BF_a_b, a_b, MON, registered); empty: the config's lists
  double timeout_s = 300;            // per profiled model
  fs::path worker_executable;        // nn-meter-worker; empty: find_worker_executable()
  bool progress = true;              // progress line on a terminal
  Sharding sharding;                 // measured in a sharded build's shards
};

// A test case's profiled models: latency per model, or the reason profiling (or generation) failed.
struct ProfiledCase {
  std::map<std::string, Latency> latencies;  // model name → latency
  std::map<std::string, int> kernels;        // model name → kernels its run executes, where the backend tells
  std::string error;                         // non-empty: the case cannot be decided
};

struct RuleTestResult {
  Json rules;         // the content of detected_fusion_rule.json
  fs::path rules_file;
  int obeyed = 0, not_obeyed = 0, undecided = 0;
  int models = 0;        // measurements of test models (every repeat, every re-measuring pass)
  int profiled_now = 0;  // of them, measured by this run (the rest came from the journal)
  int remeasured = 0;    // test cases measured again because the noise left them undecided (per pass)
};

class RuleTester {
 public:
  // Validates everything that can be checked without profiling: the backend name, EMP_ALPHA, shapes,
  // every operator named in BASIC_TESTCASES and every test case (and dependency) named. Throws Error
  // with one actionable line; nothing is written.
  RuleTester(Workspace workspace, Registry registry, RuleTestSettings settings);
  ~RuleTester();
  RuleTester(RuleTester&&) noexcept;
  RuleTester& operator=(RuleTester&&) noexcept;

  // Test case names in decision order (dependencies first).
  std::vector<std::string> testcases() const;
  std::vector<std::string> depends_on(const std::string& testcase) const;

  // generate → profile → detect; writes the files listed above. Resumable: models already in the
  // journal are not profiled again.
  RuleTestResult run();

  // The decision step alone, from profiled latencies (cases absent from `profiled` count as failed).
  // DETAIL in the ruletest config adds per-model latencies to each rule.
  Json detect(const std::map<std::string, ProfiledCase>& profiled) const;

  const Workspace& workspace() const;
  fs::path rules_file() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Orders test cases so that every dependency comes before the cases depending on it (ties keep the
// input order). A cycle or a dependency missing from `deps` throws Error.
std::vector<std::string> order_by_dependencies(const std::vector<std::string>& names,
                                               const std::map<std::string, std::vector<std::string>>& deps);

}  // namespace nnmeter
