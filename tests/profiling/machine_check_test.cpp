// The machine check (nnmeter/machine_check.h, nn-meter check-machine): each check read from a /sys and /proc
// tree a test writes, so what it reports does not depend on the machine the suite runs on; and the real
// command against a real busy process.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "nnmeter/machine_check.h"
#include "support/test_support.h"

namespace nnmeter::test {
namespace {

const MachineFinding& finding(const MachineCheck& c, const std::string& check) {
  for (const auto& f : c.findings)
    if (f.check == check) return f;
  throw std::runtime_error("no finding " + check);
}

MachineCheckOptions fake(const TempDir& root) {
  MachineCheckOptions o;
  o.root = root.path();
  o.cpus = {0, 1};
  o.window_s = 0;
  o.probe_runs = 0;
  return o;
}

void cpu_file(const TempDir& root, int cpu, const std::string& rel, const std::string& text) {
  const fs::path p = root / ("sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/" + rel);
  fs::create_directories(p.parent_path());
  write_text(p, text + "\n");
}

TEST(MachineCheck, NothingExposedIsUnknownNotAnError) {
  TempDir root;
  const MachineCheck c = check_machine(fake(root));
  EXPECT_EQ(c.cpus, (std::vector<int>{0, 1}));
  for (const char* check : {"governor", "boost", "other processes", "smt", "thermal"})
    EXPECT_EQ(finding(c, check).state, CheckState::unknown) << check << ": " << finding(c, check).detail;
  EXPECT_TRUE(c.fit());
  EXPECT_TRUE(contains(finding(c, "other processes").detail, "cannot read")) << finding(c, "other processes").detail;
  EXPECT_THROW(finding(c, "probe spread"), std::runtime_error) << "probe_runs 0 skips the probe";
}

TEST(MachineCheck, GovernorBoostSmtAndThermalSayWhatToDo) {
  TempDir root;
  cpu_file(root, 0, "cpufreq/scaling_governor", "powersave");
  cpu_file(root, 1, "cpufreq/scaling_governor", "performance");
  cpu_file(root, 0, "topology/thread_siblings_list", "0,2");
  cpu_file(root, 1, "topology/thread_siblings_list", "1,3");
  write_text(root / "sys/devices/system/cpu/cpufreq/boost", "1\n");
  const fs::path zone = root / "sys/class/thermal/thermal_zone0";
  fs::create_directories(zone);
  write_text(zone / "temp", "93000\n");
  write_text(zone / "trip_point_0_type", "passive\n");
  write_text(zone / "trip_point_0_temp", "95000\n");
  const MachineCheck c = check_machine(fake(root));
  const auto& g = finding(c, "governor");
  EXPECT_EQ(g.state, CheckState::warn);
  EXPECT_TRUE(contains(g.detail, "powersave on cpu 0")) << g.detail;
  EXPECT_TRUE(contains(g.advice, "performance")) << g.advice;
  EXPECT_EQ(finding(c, "boost").state, CheckState::warn);
  EXPECT_TRUE(contains(finding(c, "boost").advice, "boost")) << finding(c, "boost").advice;
  const auto& smt = finding(c, "smt");
  EXPECT_EQ(smt.state, CheckState::ok) << "siblings exist but were idle: " << smt.detail;
  EXPECT_TRUE(contains(smt.detail, "cpu 0 shares a core with cpu 2")) << smt.detail;
  const auto& t = finding(c, "thermal");
  EXPECT_EQ(t.state, CheckState::warn);
  EXPECT_TRUE(contains(t.detail, "throttles at 95")) << t.detail;
  EXPECT_FALSE(c.fit());
  const Json j = c.to_json();
  EXPECT_FALSE(j["fit"].get<bool>());
  EXPECT_EQ(j["findings"][0]["state"], "warn");
  EXPECT_TRUE(contains(c.to_table(), "NOT fit")) << c.to_table();

  cpu_file(root, 0, "cpufreq/scaling_governor", "performance");
  write_text(root / "sys/devices/system/cpu/cpufreq/boost", "0\n");
  write_text(zone / "temp", "45000\n");
  const MachineCheck quiet = check_machine(fake(root));
  EXPECT_TRUE(quiet.fit()) << quiet.to_table();
  EXPECT_EQ(finding(quiet, "governor").state, CheckState::ok);
  EXPECT_TRUE(finding(quiet, "governor").advice.empty());
}

TEST(MachineCheck, BadOptionsAreOneLine) {
  MachineCheckOptions o;
  o.window_s = -1;
  EXPECT_TRUE(contains(error_of([&] { check_machine(o); }), "window")) << "negative window";
  o.window_s = 0;
  o.probe_runs = -3;
  EXPECT_TRUE(contains(error_of([&] { check_machine(o); }), "probe runs"));
}

// A thread of this (test) process spinning is another process to the CLI: it must be named, and --strict refuses.
TEST(MachineCheckCli, NamesABusyProcessAndStrictRefuses) {
  TempDir home;
  std::atomic<bool> stop{false};
  std::thread spin([&] {
    volatile uint64_t x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  });
  const CliResult r = run_cli({"--json", "check-machine", "--seconds", "0.5", "--probe-runs", "5", "--strict"}, home.path());
  stop = true;
  spin.join();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_FALSE(j["fit"].get<bool>());
  bool named = false;
  for (const auto& f : j["findings"])
    if (f["check"] == "other processes") named = f["state"] == "warn" && contains(f["detail"].get<std::string>(), "nnmeter_tests");
  EXPECT_TRUE(named) << r.out;
  EXPECT_TRUE(contains(r.err, "(nn-Meter) --strict: the machine is not fit")) << r.err;

  const CliResult bad = run_cli({"check-machine", "--seconds", "-1"}, home.path());
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
}

// The check before measuring: --strict-machine refuses an unfit machine before anything is measured (even
// where NN_METER_MACHINE_CHECK=off, as in this suite, would skip the warning-only check).
TEST(MachineCheckCli, StrictMachineRefusesToBuildOnABusyMachine) {
  TempDir tmp;
  const fs::path ws = tmp / "ws";
  ASSERT_EQ(run_cli({"create", "--workspace", ws.string(), "--backend", "onednn_cpu"}, tmp / "home").exit_code, 0);
  std::atomic<bool> stop{false};
  std::thread spin([&] {
    volatile uint64_t x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  });
  const CliResult r = run_cli({"build", "--workspace", ws.string(), "--backend", "onednn_cpu", "--kernels", "relu",
                               "--no-ruletest", "--strict-machine"}, tmp / "home");
  stop = true;
  spin.join();
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "(nn-Meter) --strict-machine: the machine is not fit to measure on")) << r.err;
  EXPECT_TRUE(contains(r.out + r.err, "machine check, other processes: pid")) << r.out << r.err;
  EXPECT_FALSE(fs::exists(ws / "predictor_build" / "results" / "profile_journal_relu.jsonl"));
}

}  // namespace
}  // namespace nnmeter::test
