#include "backends/measure.h"

#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>
#include <thread>

#include "common/cpu_times.h"
#include "common/rng.h"
#include "nnmeter/common.h"

namespace nnmeter::backends {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double own_cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) + 1e-6 * static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

// Share of all the machine's CPUs that other processes used between two snapshots. Every CPU counts, not
// only the measuring ones: load on another core (shared caches and memory bandwidth) moves the latency too.
double foreign_load(const CpuTimes& a, const CpuTimes& b, double own_seconds, double wall_seconds) {
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  const size_t cpus = std::min(a.busy.size(), b.busy.size());
  double busy = 0;
  for (size_t i = 0; i < cpus; ++i) busy += static_cast<double>(b.busy[i] - a.busy[i]) / hz;
  if (wall_seconds <= 0 || cpus == 0) return 0;
  return std::max(0.0, (busy - own_seconds) / (wall_seconds * static_cast<double>(cpus)));
}

// The `n` allowed CPUs that were least busy over a short window. Two clock ticks are enough to tell a busy
// CPU from an idle one; finer choices matter little, as every round is checked for load on all CPUs anyway,
// and the window is paid by every measurement (a longer one had cost a noticeable share of a build's profiling
// time; docs/profiling.md).
std::vector<int> quietest_cpus(int n) {
  auto cpus = allowed_cpus();
  if (cpus.empty()) return cpus;
  if (static_cast<size_t>(n) >= cpus.size()) return cpus;  // all of them: nothing to choose
  const auto a = read_cpu_times();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const auto b = read_cpu_times();
  auto load = [&](int c) {
    const auto i = static_cast<size_t>(c);
    if (i >= a.busy.size() || i >= b.busy.size()) return 0.0;
    const double total = static_cast<double>(b.total[i] - a.total[i]);
    return total > 0 ? static_cast<double>(b.busy[i] - a.busy[i]) / total : 0.0;
  };
  std::stable_sort(cpus.begin(), cpus.end(), [&](int x, int y) { return load(x) < load(y); });
  cpus.resize(std::min(cpus.size(), static_cast<size_t>(std::max(1, n))));
  return cpus;
}

// Pins each OpenMP thread (the caller is thread 0) to one CPU, and restores the old mask afterwards.
class Pinning {
 public:
  Pinning(const std::vector<int>& cpus, int threads) : threads_(threads) {
    sched_getaffinity(0, sizeof(old_), &old_);
    if (cpus.empty()) return;
#pragma omp parallel num_threads(threads_)
    {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpus[static_cast<size_t>(omp_get_thread_num()) % cpus.size()], &set);
      sched_setaffinity(0, sizeof(set), &set);
    }
  }
  ~Pinning() {
#pragma omp parallel num_threads(threads_)
    sched_setaffinity(0, sizeof(old_), &old_);
  }
  Pinning(const Pinning&) = delete;
  Pinning& operator=(const Pinning&) = delete;

 private:
  int threads_;
  cpu_set_t old_{};
};

double median(std::vector<double> v) { return percentile(std::move(v), 50); }

constexpr size_t kLine = 64;

bool has_clflushopt() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) != 0 && (b & (1u << 23)) != 0;
}

__attribute__((target("clflushopt"))) void clflushopt_lines(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i += kLine) _mm_clflushopt(const_cast<uint8_t*>(p + i));
}

void clflush_lines(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i += kLine) _mm_clflush(p + i);
}

}  // namespace

void evict_from_caches(const std::vector<ByteRange>& ranges) {
  static const bool optimized = has_clflushopt();
  for (const auto& r : ranges) (optimized ? clflushopt_lines : clflush_lines)(r.data, r.size);
  _mm_mfence();  // the flushes complete before the timed run starts
}

void fill_caches_with_scratch(size_t bytes, int threads) {
  if (bytes == 0) return;
  // One buffer per process, grown on demand: its pages are faulted in by the first fill (an untimed run),
  // and a new value each time keeps every store a real modification.
  static std::vector<uint8_t> scratch;
  static uint8_t value = 0;
  if (scratch.size() < bytes) scratch.resize(bytes);
  ++value;
  auto* lines = const_cast<volatile uint8_t*>(scratch.data());
  const auto count = static_cast<std::ptrdiff_t>(bytes / kLine);
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
  for (std::ptrdiff_t i = 0; i < count; ++i) lines[i * kLine] = value;
}

void write_back_into_cache(const std::vector<ByteRange>& ranges, int threads) {
  for (const auto& r : ranges) {
    auto* bytes = const_cast<volatile uint8_t*>(r.data);
    const auto lines = static_cast<std::ptrdiff_t>((r.size + kLine - 1) / kLine);
#pragma omp parallel for num_threads(std::max(1, threads)) schedule(static)
    for (std::ptrdiff_t i = 0; i < lines; ++i) bytes[i * kLine] = bytes[i * kLine];
  }
}

std::vector<Tensor> random_inputs(const std::vector<std::pair<std::string, Shape>>& specs, uint32_t seed) {
  SplitMix64 rng(seed);
  std::vector<Tensor> out;
  for (const auto& [name, shape] : specs) {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    Tensor t{name, shape, std::vector<float>(static_cast<size_t>(n))};
    for (auto& v : t.data) v = rng.uniform(-1.f, 1.f);
    out.push_back(std::move(t));
  }
  return out;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

std::vector<BackendParam> measurement_params() {
  using T = BackendParam::Type;
  return {
      backend_param("WARMUP_RUNS", T::Int, 10, "Untimed runs before measuring", 0, 1e6),
      backend_param("NUM_RUNS", T::Int, 20, "Timed runs per round (at least)", 1, 1e6),
      backend_param("NUM_ROUNDS", T::Int, 5, "Rounds; the latency is the median across rounds of each round's median run", 1,
                    1e4),
      backend_param("MIN_TIME_MS", T::Float, 20.0, "Each round runs until it has NUM_RUNS runs and lasted this many ms", 0,
                    3.6e6),
      backend_param("MAX_TIME_MS", T::Float, 1000.0,
                    "A round stops once it lasted this many ms and has 3 runs, the warm-up once it lasted this long, "
                    "whatever NUM_RUNS, MIN_TIME_MS and WARMUP_RUNS ask: a kernel of seconds needs no 20 runs; 0: never",
                    0, 3.6e6),
      backend_param("COLD_CACHE", T::Bool, true,
                    "Before every timed run, evict the model's weights and buffers from all cache levels and write its "
                    "input, so a kernel finds its data where a layer inside a network does; false: back-to-back warm runs"),
      backend_param("COLD_CACHE_FILL_MB", T::Int, 0,
                    "With COLD_CACHE: MB of scratch memory written after the eviction and before the input, so caches, "
                    "TLBs and page-walk caches hold other modified data, as many layers before a kernel leave them in a "
                    "large network (about twice the last-level cache); 0: eviction only",
                    0, 65536),
      backend_param("PIN_CPU", T::Bool, true, "Pin the measuring threads to the least busy CPUs"),
      backend_param("MAX_BUSY", T::Float, 0.10,
                    "A round during which other processes used more than this share of the machine's CPUs (all of them: "
                    "load on any core moves the latency) is measured again",
                    0, 1),
      backend_param("MAX_RETRIES", T::Int, 10, "Rounds re-measured at most because of interference, per profile", 0, 1e4)};
}

Json warm_caches(Json config) {
  config["COLD_CACHE"] = false;
  return config;
}

MeasureSettings measure_settings(const Json& config, int threads) {
  MeasureSettings s;
  s.threads = threads;
  s.warmup_runs = config.value("WARMUP_RUNS", s.warmup_runs);
  s.runs = config.value("NUM_RUNS", s.runs);
  s.rounds = config.value("NUM_ROUNDS", s.rounds);
  s.min_time_ms = config.value("MIN_TIME_MS", s.min_time_ms);
  s.max_time_ms = config.value("MAX_TIME_MS", s.max_time_ms);
  s.pin = config.value("PIN_CPU", s.pin);
  s.max_busy = config.value("MAX_BUSY", s.max_busy);
  s.max_retries = config.value("MAX_RETRIES", s.max_retries);
  s.cold_fill_bytes = static_cast<size_t>(config.value("COLD_CACHE_FILL_MB", int64_t{0})) << 20;
  return s;
}

Measurement measure(const std::function<void()>& run, const MeasureSettings& s,
                    const std::function<void()>& before_each_timed_run) {
  if (s.runs < 1 || s.rounds < 1 || s.warmup_runs < 0 || s.min_time_ms < 0 || s.max_time_ms < 0)
    throw Error("measurement settings need NUM_RUNS >= 1, NUM_ROUNDS >= 1, WARMUP_RUNS >= 0, MIN_TIME_MS >= 0 and "
                "MAX_TIME_MS >= 0");
  Measurement m;
  omp_set_num_threads(std::max(1, s.threads));
  m.cpus = s.pin ? quietest_cpus(s.threads) : allowed_cpus();
  std::optional<Pinning> pin;
  if (s.pin) pin.emplace(m.cpus, std::max(1, s.threads));

  // MAX_TIME_MS: the runs of one process agree closely (docs/measurement.md), and a run of a second has no timer
  // noise to average out, so the large kernels prior sampling draws (up to seconds a run) spent a good share of a
  // build's profiling time on runs that added nothing (bench/RESULTS-accuracy.md); 3 runs a round still give a
  // median.
  const auto past_max = [&s](Clock::time_point since) { return s.max_time_ms > 0 && ms_since(since) >= s.max_time_ms; };
  auto t0 = Clock::now();
  run();
  m.first_run_ms = ms_since(t0);
  const auto warmup_start = Clock::now();
  for (int i = 0; i < s.warmup_runs && !past_max(warmup_start); ++i) run();

  std::vector<double> round_medians;
  while (static_cast<int>(round_medians.size()) < s.rounds) {
    std::vector<double> samples;
    const auto before = read_cpu_times();
    const double own_before = own_cpu_seconds();
    const auto round_start = Clock::now();
    while ((static_cast<int>(samples.size()) < s.runs || ms_since(round_start) < s.min_time_ms) &&
           !(samples.size() >= 3 && past_max(round_start))) {
      if (before_each_timed_run) before_each_timed_run();
      t0 = Clock::now();
      run();
      samples.push_back(ms_since(t0));
    }
    const double wall = ms_since(round_start) / 1000.0;
    const double foreign = foreign_load(before, read_cpu_times(), own_cpu_seconds() - own_before, wall);
    if (foreign > s.max_busy && m.discarded_rounds < s.max_retries) {
      ++m.discarded_rounds;
      spdlog::debug("round discarded: other processes used {:.0f}% of the machine's CPUs", 100 * foreign);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    round_medians.push_back(median(samples));
    m.run_samples_ms.insert(m.run_samples_ms.end(), samples.begin(), samples.end());
  }
  m.stats = LatencyStats::from_samples(round_medians);
  const auto all = LatencyStats::from_samples(m.run_samples_ms);
  m.run_cv = all.cv();
  if (m.discarded_rounds >= s.max_retries)
    spdlog::warn("the machine stayed busy: {} rounds were re-measured and later rounds were kept anyway; the latency "
                 "may be inflated", m.discarded_rounds);
  if (m.stats.cv() > 0.05)
    spdlog::warn("noisy measurement: the round medians vary by {:.1f}% (CV); close other programs or raise NUM_ROUNDS",
                 100 * m.stats.cv());
  return m;
}

}  // namespace nnmeter::backends
