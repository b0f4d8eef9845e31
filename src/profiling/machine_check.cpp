#include "nnmeter/machine_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "common/cpu_times.h"

namespace nnmeter {

const char* to_string(CheckState state) {
  switch (state) {
    case CheckState::ok: return "ok";
    case CheckState::warn: return "warn";
    case CheckState::unknown: return "unknown";
  }
  return "?";
}

namespace {

std::optional<std::string> read_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

std::optional<int64_t> read_int(const fs::path& file) {
  const auto line = read_line(file);
  if (!line) return std::nullopt;
  try {
    size_t used = 0;
    const int64_t v = std::stoll(*line, &used);
    return used == line->size() ? std::optional<int64_t>(v) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// "0-3,8,10-11" → {0, 1, 2, 3, 8, 10, 11}; nullopt when malformed.
std::optional<std::set<int>> parse_cpu_list(const std::string& text) {
  std::set<int> out;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');) {
    if (part.empty()) continue;
    try {
      const size_t dash = part.find('-');
      const int lo = std::stoi(part.substr(0, dash));
      const int hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      if (lo < 0 || hi < lo || hi - lo > 4096) return std::nullopt;
      for (int c = lo; c <= hi; ++c) out.insert(c);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return out;
}

fs::path cpu_dir(const fs::path& root, int cpu) { return root / "sys/devices/system/cpu" / ("cpu" + std::to_string(cpu)); }

MachineFinding governor(const fs::path& root, const std::vector<int>& cpus) {
  MachineFinding f{"governor", CheckState::unknown, "", ""};
  std::map<std::string, std::vector<int>> by_governor;
  for (int c : cpus)
    if (auto g = read_line(cpu_dir(root, c) / "cpufreq/scaling_governor")) by_governor[*g].push_back(c);
  if (by_governor.empty()) {
    f.detail = "no cpufreq governor exposed (a VM or a fixed clock): nothing to set here";
    return f;
  }
  std::vector<std::string> seen;
  for (const auto& [g, cs] : by_governor) seen.push_back(fmt::format("{} on cpu {}", g, fmt::join(cs, ",")));
  f.detail = fmt::format("{}", fmt::join(seen, "; "));
  f.state = by_governor.size() == 1 && by_governor.count("performance") ? CheckState::ok : CheckState::warn;
  if (f.state == CheckState::warn)
    f.advice = "the clock follows the load, so a measurement's level depends on what ran just before it: set the "
               "performance governor (as root: cpupower frequency-set -g performance)";
  return f;
}

MachineFinding boost(const fs::path& root) {
  MachineFinding f{"boost", CheckState::unknown, "", ""};
  const fs::path cpufreq_boost = root / "sys/devices/system/cpu/cpufreq/boost";
  const fs::path no_turbo = root / "sys/devices/system/cpu/intel_pstate/no_turbo";
  if (auto b = read_int(cpufreq_boost)) {
    f.state = *b == 0 ? CheckState::ok : CheckState::warn;
    f.detail = fmt::format("cpufreq boost {}", *b == 0 ? "off" : "on");
  } else if (auto t = read_int(no_turbo)) {
    f.state = *t != 0 ? CheckState::ok : CheckState::warn;
    f.detail = fmt::format("intel_pstate turbo {}", *t != 0 ? "off" : "on");
  } else {
    f.detail = "no boost control exposed (a VM, or none on this CPU)";
    return f;
  }
  if (f.state == CheckState::warn)
    f.advice = "boost clocks depend on temperature and on the other cores' load: turn boost off while measuring (as "
               "root: echo 0 > " + cpufreq_boost.string() + ", or echo 1 > " + no_turbo.string() + ")";
  return f;
}

struct ProcessTicks {
  std::string name;
  int64_t ticks = 0;
};

// utime + stime of every process but this one, from /proc/<pid>/stat (fields 14 and 15; the name, in
// parentheses, may itself hold spaces and parentheses).
std::map<int, ProcessTicks> process_ticks(const fs::path& root) {
  std::map<int, ProcessTicks> out;
  std::error_code ec;
  const int self = static_cast<int>(::getpid());
  for (fs::directory_iterator it(root / "proc", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string pid_text = it->path().filename().string();
    if (pid_text.empty() || pid_text.size() > 9 ||
        !std::all_of(pid_text.begin(), pid_text.end(), [](unsigned char ch) { return std::isdigit(ch); }))
      continue;
    const int pid = std::stoi(pid_text);
    if (pid == self) continue;
    const auto line = read_line(it->path() / "stat");
    if (!line) continue;
    const size_t open = line->find('('), close = line->rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream ss(line->substr(close + 1));
    std::vector<std::string> fields;
    for (std::string f; ss >> f;) fields.push_back(f);
    if (fields.size() < 13) continue;  // fields[0] is field 3 (state)
    try {
      out[pid] = {line->substr(open + 1, close - open - 1), std::stoll(fields[11]) + std::stoll(fields[12])};
    } catch (const std::exception&) {
    }
  }
  return out;
}

std::optional<std::set<int>> smt_siblings(const fs::path& root, int cpu) {
  const auto list = read_line(cpu_dir(root, cpu) / "topology/thread_siblings_list");
  if (!list) return std::nullopt;
  auto s = parse_cpu_list(*list);
  if (s) s->erase(cpu);
  return s;
}

// Other processes' CPU use and the SMT siblings' load, over one window.
void load_findings(const MachineCheckOptions& o, const std::vector<int>& cpus, std::vector<MachineFinding>& out) {
  const double ticks_per_s = static_cast<double>(std::max(1L, ::sysconf(_SC_CLK_TCK)));
  const CpuTimes busy0 = read_cpu_times(o.root / "proc/stat");
  const auto procs0 = process_ticks(o.root);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.window_s));
  const CpuTimes busy1 = read_cpu_times(o.root / "proc/stat");
  const auto procs1 = process_ticks(o.root);
  const double window_ticks = std::max(1e-9, o.window_s * ticks_per_s);

  MachineFinding procs{"other processes", CheckState::unknown, "", ""};
  if (!procs0.empty() && !procs1.empty()) {
    std::vector<std::pair<double, std::string>> busy;
    for (const auto& [pid, t1] : procs1) {
      const auto t0 = procs0.find(pid);
      const double share = static_cast<double>(t1.ticks - (t0 == procs0.end() ? 0 : t0->second.ticks)) / window_ticks;
      if (share > o.busy_share) busy.emplace_back(share, fmt::format("pid {} ({}) used {:.0f}% of a CPU", pid, t1.name, 100 * share));
    }
    std::sort(busy.rbegin(), busy.rend());
    procs.state = busy.empty() ? CheckState::ok : CheckState::warn;
    if (busy.empty()) {
      procs.detail = fmt::format("none used more than {:.0f}% of a CPU over {:.1f} s", 100 * o.busy_share, o.window_s);
    } else {
      std::vector<std::string> top;
      for (size_t i = 0; i < busy.size() && i < 3; ++i) top.push_back(busy[i].second);
      procs.detail = fmt::format("{}{} over {:.1f} s", fmt::join(top, "; "), busy.size() > 3 ? fmt::format(" (+{} more)", busy.size() - 3) : "",
                                 o.window_s);
      procs.advice = "they share the CPUs the measurements run on and move their level: stop them, or measure elsewhere";
    }
  } else {
    procs.detail = "cannot read " + (o.root / "proc").string();
  }
  out.push_back(std::move(procs));

  MachineFinding smt{"smt", CheckState::unknown, "", ""};
  std::vector<std::string> shared, busy_siblings;
  bool readable = false;
  for (int c : cpus) {
    const auto sib = smt_siblings(o.root, c);
    if (!sib) continue;
    readable = true;
    for (int s : *sib) {
      shared.push_back(fmt::format("cpu {} shares a core with cpu {}", c, s));
      const auto cpu = static_cast<size_t>(s);
      if (cpu >= busy0.busy.size() || cpu >= busy1.busy.size()) continue;
      const double share = (static_cast<double>(busy1.busy[cpu]) - static_cast<double>(busy0.busy[cpu])) / window_ticks;
      if (share > o.busy_share && std::find(cpus.begin(), cpus.end(), s) == cpus.end())
        busy_siblings.push_back(fmt::format("cpu {} (sibling of cpu {}) was {:.0f}% busy", s, c, 100 * share));
    }
  }
  if (readable) {
    smt.state = busy_siblings.empty() ? CheckState::ok : CheckState::warn;
    smt.detail = !busy_siblings.empty() ? fmt::format("{}", fmt::join(busy_siblings, "; "))
                 : shared.empty()       ? std::string("no SMT siblings")
                                        : fmt::format("{}; idle", fmt::join(shared, "; "));
    if (smt.state == CheckState::warn)
      smt.advice = "an SMT sibling shares the core's execution units and caches: keep it idle, or take it offline (as "
                   "root: echo 0 > /sys/devices/system/cpu/cpuN/online)";
  } else {
    smt.detail = "no CPU topology exposed";
  }
  out.push_back(std::move(smt));
}

MachineFinding thermal(const fs::path& root) {
  MachineFinding f{"thermal", CheckState::unknown, "", ""};
  std::error_code ec;
  std::vector<std::string> hot, seen;
  for (fs::directory_iterator it(root / "sys/class/thermal", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string zone = it->path().filename().string();
    if (zone.rfind("thermal_zone", 0) != 0) continue;
    const auto temp = read_int(it->path() / "temp");
    if (!temp) continue;
    std::optional<int64_t> passive;
    for (int i = 0; i < 16; ++i) {
      const auto type = read_line(it->path() / fmt::format("trip_point_{}_type", i));
      if (!type) break;
      if (*type == "passive" || *type == "hot")
        if (auto t = read_int(it->path() / fmt::format("trip_point_{}_temp", i)); t && (!passive || *t < *passive)) passive = t;
    }
    const double c = static_cast<double>(*temp) / 1000;
    seen.push_back(fmt::format("{} {:.0f} °C", zone, c));
    // Within 5 °C of where the kernel starts throttling, or hot with no trip point to go by.
    if ((passive && *temp + 5000 >= *passive) || (!passive && c >= 90))
      hot.push_back(passive ? fmt::format("{} {:.0f} °C (throttles at {:.0f} °C)", zone, c, static_cast<double>(*passive) / 1000)
                            : fmt::format("{} {:.0f} °C", zone, c));
  }
  if (seen.empty()) {
    f.detail = "no thermal zones exposed (a VM or a container)";
    return f;
  }
  f.state = hot.empty() ? CheckState::ok : CheckState::warn;
  f.detail = fmt::format("{}", fmt::join(hot.empty() ? seen : hot, "; "));
  if (f.state == CheckState::warn)
    f.advice = "a throttling package clocks down mid-run: let it cool, improve its cooling, or lower the load around it";
  return f;
}

// One fixed computation (~2 ms) timed again and again in this process: what a measurement's repeats can agree
// to here, before any backend is involved.
MachineFinding probe_spread(const MachineCheckOptions& o) {
  MachineFinding f{"probe spread", CheckState::unknown, "", ""};
  std::vector<double> buffer(8192, 1.0), times;
  volatile double sink = 0;
  for (int run = 0; run < o.probe_runs + 2; ++run) {  // two warm-up runs
    const auto start = std::chrono::steady_clock::now();
    double acc = 0;
    for (int r = 0; r < 320; ++r)
      for (double& v : buffer) {
        v = v * 0.999999 + 1e-6;
        acc += v;
      }
    sink = sink + acc;
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (run >= 2) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  const double low = times.front(), p90 = times[std::min(times.size() - 1, times.size() * 9 / 10)];
  const double spread = low > 0 ? (p90 - low) / low : 0;
  f.state = spread > o.spread_limit ? CheckState::warn : CheckState::ok;
  f.detail = fmt::format("{} runs of {:.2f} ms: 90th percentile {:.1f}% above the fastest", times.size(), low, 100 * spread);
  if (f.state == CheckState::warn)
    f.advice = fmt::format("repeats of one computation in one process disagree by more than {:.0f}%: labels measured now "
                           "will disagree at least as much; find what else runs (the checks above) or measure later",
                           100 * o.spread_limit);
  return f;
}

}  // namespace

bool MachineCheck::fit() const {
  return std::none_of(findings.begin(), findings.end(), [](const auto& f) { return f.state == CheckState::warn; });
}

Json MachineCheck::to_json() const {
  Json list = Json::array();
  for (const auto& f : findings)
    list.push_back({{"check", f.check}, {"state", to_string(f.state)}, {"detail", f.detail}, {"advice", f.advice}});
  return {{"fit", fit()}, {"cpus", cpus}, {"findings", list}};
}

std::string MachineCheck::to_table() const {
  std::string out;
  for (const auto& f : findings) {
    out += fmt::format("{:<16} {:<8} {}\n", f.check, to_string(f.state), f.detail);
    if (!f.advice.empty()) out += fmt::format("{:<16} {:<8} -> {}\n", "", "", f.advice);
  }
  out += fit() ? "the machine is fit to measure on (checks it cannot see are 'unknown')\n"
               : "the machine is NOT fit to measure on: labels measured now repeat worse than they could (see 'warn')\n";
  return out;
}

MachineCheck check_machine(const MachineCheckOptions& options) {
  if (!(options.window_s >= 0) || options.window_s > 60) throw Error("the machine check's window must be 0 to 60 seconds");
  if (options.probe_runs < 0 || options.probe_runs > 10000) throw Error("the machine check's probe runs must be 0 to 10000");
  MachineCheck out;
  out.cpus = options.cpus.empty() ? allowed_cpus() : options.cpus;
  out.findings.push_back(governor(options.root, out.cpus));
  out.findings.push_back(boost(options.root));
  load_findings(options, out.cpus, out.findings);
  out.findings.push_back(thermal(options.root));
  if (options.probe_runs > 0) out.findings.push_back(probe_spread(options));
  return out;
}

}  // namespace nnmeter
