// A phase of measurements sharded over several "devices" through the real profiler and worker processes, on the
// chaos backend (fixed 2 ms latencies, a call counter): the plan, each shard's own journal, the merge's checks and
// the shards' levels.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "common/io.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "profiling/journal.h"
#include "profiling/sharding.h"
#include "support/plugin_fixtures.h"
#include "support/test_support.h"

namespace nnmeter::test {
namespace {

struct Phase {
  TempDir tmp;
  std::vector<ProfileJob> jobs;
  Json config;

  explicit Phase(int models = 12, Json more = Json::object()) {
    Registry(tmp / "home").register_module(ModuleKind::Backend, make_chaos_package(tmp / "chaos"));
    config = {{"COUNTER", (tmp / "calls").string()}, {"SPREAD", 0.0}, {"REPEATS", 3}};
    config.update(more);
    for (int i = 0; i < models; ++i) jobs.push_back(job(fmt::format("model{:02d}", i)));
  }
  ProfileJob job(const std::string& id) const {
    const fs::path model = tmp / "models" / (id + ".onnx");
    if (!fs::exists(model)) write_text(model, "model " + id);
    return {id, model, {}};
  }
  fs::path root() const { return tmp / "shards"; }
  fs::path journal() const { return tmp / "journal.jsonl"; }
  ProfilerOptions options(Sharding::Mode mode, int shards = 0) const {
    ProfilerOptions o;
    o.backend = "chaos";
    o.backend_config = config;
    o.registry_home = tmp / "home";
    o.work_dir = tmp / "work";
    o.timeout_s = 30;
    o.worker_executable = NNMETER_WORKER_PATH;
    o.label = "prior samples";
    o.progress = false;
    o.sharding.mode = mode;
    o.sharding.shards = shards;
    o.sharding.root = root();
    o.sharding.probes = {job("probe_a"), job("probe_b")};
    return o;
  }
  std::map<std::string, ProfileOutcome> run(Sharding::Mode mode, int shards = 0) const {
    return profile_models(jobs, options(mode, shards), journal(), tmp / "errors.log");
  }
  Json shard(int k, int n) const {
    return measure_shard(root(), k, n, ShardRun{"chaos", tmp / "home", NNMETER_WORKER_PATH, false, std::nullopt});
  }
  Json plan() const { return io::load_json_file(root() / "plan.json"); }
  fs::path shard_journal(int k, int n) const {
    return root() / plan()["id"].get<std::string>() / fmt::format("{}-of-{}", k, n) / "0-journal.jsonl";
  }
  size_t calls() const { return count_lines(tmp / "calls"); }
};

Json planned(const Phase& p, Sharding::Mode mode, int shards = 0) {
  try {
    p.run(mode, shards);
  } catch (const MeasurementPlanned& e) {
    return e.summary;
  }
  ADD_FAILURE() << "no plan was written";
  return Json();
}

TEST(Sharding, ShardsMeasureEachRepeatOnceAndTheMergeGivesEveryLabel) {
  Phase p;
  const Json summary = planned(p, Sharding::Mode::plan);
  EXPECT_EQ(summary["measurements"], 36);
  EXPECT_EQ(summary["models"], 12);
  EXPECT_EQ(p.calls(), 0u) << "planning measures nothing";

  std::set<std::string> models_seen;
  for (int k = 1; k <= 3; ++k) {
    const Json done = p.shard(k, 3);
    EXPECT_EQ(done["shard"], fmt::format("{}/3", k));
    EXPECT_EQ(done["plan"], summary["plan"]);
    const Journal journal(p.shard_journal(k, 3));
    for (const auto& [key, record] : journal.records()) {
      EXPECT_EQ(record["plan"], summary["plan"]);
      models_seen.insert(record["id"].get<std::string>());
    }
  }
  EXPECT_EQ(models_seen.size(), 12u);
  // 36 measurements and the two probes at the start and the end of each shard.
  EXPECT_EQ(p.calls(), 36u + 3 * 2 * 2);
  EXPECT_FALSE(fs::exists(p.journal()) && count_lines(p.journal()) > 0) << "shards never write the build's journal";

  const auto outcomes = p.run(Sharding::Mode::merge, 3);
  ASSERT_EQ(outcomes.size(), 12u);
  for (const auto& [id, o] : outcomes) {
    EXPECT_TRUE(o.ok) << id;
    EXPECT_EQ(o.repeats_ms.size(), 3u) << id;
    EXPECT_NEAR(o.latency.value_ms, 2.0, 1e-9) << id;
  }
  EXPECT_EQ(count_lines(p.journal()), 36u);
  // A merged phase is measured: a later run (the next build step) plans and measures nothing more.
  const size_t calls = p.calls();
  EXPECT_EQ(p.run(Sharding::Mode::merge, 3).size(), 12u);
  EXPECT_EQ(p.run(Sharding::Mode::off).size(), 12u);
  EXPECT_EQ(p.calls(), calls);
  EXPECT_EQ(count_lines(p.journal()), 36u);
}

// A shard runs on its own device, which may be slower than the planning one: its own --timeout wins over the plan's.
TEST(Sharding, AShardsOwnTimeoutReplacesThePlans) {
  Phase p(2);
  p.jobs.push_back(p.job("modelHANG"));
  planned(p, Sharding::Mode::plan);  // the plan records the build's timeout, 30 s
  measure_shard(p.root(), 1, 1, ShardRun{"chaos", p.tmp / "home", NNMETER_WORKER_PATH, false, 1.0});
  const Journal journal(p.shard_journal(1, 1));
  std::string hang_error;
  for (const auto& [key, record] : journal.records())
    if (record["id"] == "modelHANG") hang_error = record.value("error", "");
  EXPECT_TRUE(contains(hang_error, "timed out after 1 s")) << hang_error;
}

TEST(Sharding, TheMergeNamesTheShardThatIsMissingOrIncomplete) {
  Phase p;
  planned(p, Sharding::Mode::plan);
  p.shard(1, 2);
  const std::string missing = error_of([&] { p.run(Sharding::Mode::merge, 2); });
  EXPECT_TRUE(contains(missing, "shard 2/2")) << missing;
  EXPECT_TRUE(contains(missing, "--shard 2/2")) << missing;

  // A shard killed mid-way: its journal holds some of its measurements and a torn last line.
  p.shard(2, 2);
  const fs::path journal = p.shard_journal(2, 2);
  const std::string text = read_text(journal);
  size_t cut = 0;
  for (int line = 0; line < 4; ++line) cut = text.find('\n', cut) + 1;
  write_text(journal, text.substr(0, cut) + "{\"id\": \"mod");
  const std::string incomplete = error_of([&] { p.run(Sharding::Mode::merge, 2); });
  EXPECT_TRUE(contains(incomplete, "shard 2/2")) << incomplete;
  EXPECT_TRUE(contains(incomplete, "lacks")) << incomplete;
  EXPECT_FALSE(fs::exists(p.journal()) && count_lines(p.journal()) > 0) << "a refused merge writes nothing";

  // Started again, the shard measures only what its journal lacks; then the merge succeeds.
  const size_t before = p.calls();
  p.shard(2, 2);
  {
    const Journal resumed(journal);
    EXPECT_EQ(p.calls() - before, resumed.records().size() - 4 + 2 * 2) << "the missing repeats and the probes only";
    EXPECT_TRUE(resumed.rewritten().empty());
  }
  EXPECT_EQ(p.run(Sharding::Mode::merge, 2).size(), 12u);
  EXPECT_EQ(count_lines(p.journal()), 36u);
}

TEST(Sharding, AnotherPlansJournalAndASecondProcessOnOneShardAreRefused) {
  Phase p;
  const Json first = planned(p, Sharding::Mode::plan);
  p.shard(1, 2);
  p.shard(2, 2);
  const fs::path journal = p.shard_journal(1, 2);
  const std::string mine = read_text(journal);

  // Another build's shard journal put in this one's place.
  Phase other(12, {{"REPEATS", 2}});
  planned(other, Sharding::Mode::plan);
  other.shard(1, 2);
  write_text(journal, read_text(other.shard_journal(1, 2)));
  const std::string mixed = error_of([&] { p.run(Sharding::Mode::merge, 2); });
  EXPECT_TRUE(contains(mixed, "another build's journal")) << mixed;
  EXPECT_TRUE(contains(mixed, "shard 1/2")) << mixed;

  // A repeat written twice (a journal appended to by two runs).
  const std::string first_line = mine.substr(0, mine.find('\n') + 1);
  write_text(journal, mine + first_line);
  const std::string twice = error_of([&] { p.run(Sharding::Mode::merge, 2); });
  EXPECT_TRUE(contains(twice, "twice")) << twice;
  write_text(journal, mine);

  // Two processes given the same shard: the second cannot open the journal the first holds.
  {
    const Journal held(journal);
    const std::string busy = error_of([&] { p.shard(1, 2); });
    EXPECT_TRUE(contains(busy, "in use by another nn-meter run")) << busy;
    const std::string merging = error_of([&] { p.run(Sharding::Mode::merge, 2); });
    EXPECT_TRUE(contains(merging, "shard 1/2")) << merging;
  }
  EXPECT_EQ(p.run(Sharding::Mode::merge, 2).size(), 12u);

  // Shard numbers that do not exist.
  for (const auto& [k, n] : std::vector<std::pair<int, int>>{{5, 4}, {0, 0}, {0, 3}})
    EXPECT_TRUE(contains(error_of([&, k = k, n = n] { p.shard(k, n); }), "does not exist")) << k << "/" << n;
}

TEST(Sharding, ShardLevelsAreReportedAndNormalizedOnRequest) {
  for (const bool normalize : {false, true}) {
    Phase p(8, {{"SHARD_LEVELS", normalize ? "normalize" : "off"}});
    planned(p, Sharding::Mode::plan);
    p.shard(1, 2);
    p.shard(2, 2);
    // Shard 2 ran on a device 25 % slower: every latency it measured, probes included.
    const fs::path dir = p.shard_journal(2, 2).parent_path();
    for (const fs::path& file : {p.shard_journal(2, 2), dir / "drift_probes.jsonl"}) {
      std::string out;
      std::istringstream lines(read_text(file));
      for (std::string line; std::getline(lines, line);) {
        Json r = Json::parse(line);
        for (const char* key : {"median", "mean", "min", "max"}) r[key] = r[key].get<double>() * 1.25;
        for (auto& v : r["samples_ms"]) v = v.get<double>() * 1.25;
        out += r.dump() + "\n";
      }
      write_text(file, out);
    }
    const auto outcomes = p.run(Sharding::Mode::merge, 2);
    std::set<std::string> on_2;
    {
      const Journal journal(p.shard_journal(2, 2));
      for (const auto& [key, record] : journal.records()) on_2.insert(record["id"].get<std::string>());
    }
    ASSERT_FALSE(on_2.empty());
    // Levels are against the median of the shards, halfway between 2 and 2.5 ms: normalized, both land on 2.25.
    for (const auto& [id, o] : outcomes)
      EXPECT_NEAR(o.latency.value_ms, normalize ? 2.25 : on_2.count(id) ? 2.5 : 2.0, 1e-9) << id;
  }
}

TEST(Sharding, JobsAreDealtByExpectedTimeNotByCount) {
  // One long job and ten short ones: the long one has a shard to itself.
  std::vector<double> costs(11, 1.0);
  costs[3] = 10;
  const std::vector<int> shards = sharding::deal(costs, 2);
  for (size_t i = 0; i < costs.size(); ++i) EXPECT_EQ(shards[i], i == 3 ? 1 : 2) << i;
  // Largest first to the least loaded shard: 5 4 3 3 3 over two shards ends 8 / 10.
  const std::vector<int> five = sharding::deal({5, 4, 3, 3, 3}, 2);
  EXPECT_EQ(five, (std::vector<int>{1, 2, 2, 1, 2}));
  // More shards than jobs: every job alone, the rest idle.
  EXPECT_EQ(sharding::deal({1, 2}, 4), (std::vector<int>{2, 1}));
}

}  // namespace
}  // namespace nnmeter::test
