#include "common/cpu_times.h"

#include <sched.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

namespace nnmeter {

CpuTimes read_cpu_times(const std::filesystem::path& proc_stat) {
  CpuTimes t;
  std::ifstream in(proc_stat);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;
    std::istringstream ss(line.substr(3));
    size_t cpu = 0;
    uint64_t user = 0, nice = 0, sys = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(ss >> cpu >> user >> nice >> sys >> idle >> iowait) || cpu > 4096) continue;
    ss >> irq >> softirq >> steal;  // absent on old kernels
    if (t.busy.size() <= cpu) {
      t.busy.resize(cpu + 1);
      t.total.resize(cpu + 1);
    }
    t.busy[cpu] = user + nice + sys + irq + softirq + steal;
    t.total[cpu] = t.busy[cpu] + idle + iowait;
  }
  return t;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

}  // namespace nnmeter
