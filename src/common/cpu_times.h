// What the kernel says about the CPUs: which this process may run on, and how busy each has been. The
// measurement loop (backends/measure.cpp) and the machine check (profiling/machine_check.cpp) read both.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace nnmeter {

// Clock ticks per CPU since boot, from /proc/stat's per-CPU lines (index = CPU number; missing CPUs 0).
// Busy is user + nice + system + irq + softirq + steal: on a VM, steal is the hypervisor giving the vCPU to
// someone else. An unreadable file gives empty vectors.
struct CpuTimes {
  std::vector<uint64_t> busy, total;
};
CpuTimes read_cpu_times(const std::filesystem::path& proc_stat = "/proc/stat");

// The CPUs this process may run on (its affinity mask), ascending.
std::vector<int> allowed_cpus();

}  // namespace nnmeter
