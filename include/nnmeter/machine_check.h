// Is this machine fit to measure on? A measurement repeats only as well as the machine lets it: a governor
// that scales the clock with load, boost clocks, a busy SMT sibling or another process on the measuring CPU,
// a hot package — each moves a measurement's level between processes, and labels built on that are noise.
// `nn-meter check-machine` reports every check with what it means and what to do; build, ruletest and
// evaluate run a short one before measuring on this machine and say what they found.
#pragma once

#include <string>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter {

enum class CheckState { ok, warn, unknown };  // unknown: the machine does not expose it (a VM, a container)
const char* to_string(CheckState state);

struct MachineFinding {
  std::string check;   // governor, boost, smt, other processes, thermal, probe spread
  CheckState state = CheckState::unknown;
  std::string detail;  // what was seen
  std::string advice;  // what it means and what to do; empty when ok
};

struct MachineCheckOptions {
  fs::path root = "/";           // /sys and /proc are read below it (tests point it at a tree of their own)
  std::vector<int> cpus;         // the measuring CPUs; empty: the ones this process may run on
  double window_s = 1.0;         // other processes' CPU use is sampled over this long
  int probe_runs = 30;           // a short series of one fixed in-process computation; 0 skips it
  double busy_share = 0.10;      // another process (or an SMT sibling) busier than this share of a CPU warns
  double spread_limit = 0.05;    // the probe series' (90th percentile - minimum) / minimum above this warns
};

struct MachineCheck {
  std::vector<int> cpus;  // the CPUs checked: the ones measurements run on
  std::vector<MachineFinding> findings;
  bool fit() const;       // no warning
  Json to_json() const;
  std::string to_table() const;
};

// Never throws for an unreadable file: that check is `unknown`, with the path it could not read.
MachineCheck check_machine(const MachineCheckOptions& options = {});

}  // namespace nnmeter
