#include "common/warn_once.h"

#include <spdlog/spdlog.h>

#include <mutex>
#include <unordered_map>

namespace nnmeter {

namespace {

std::mutex mutex;
std::unordered_map<std::string, uint64_t>& counts() {
  static std::unordered_map<std::string, uint64_t> table;
  return table;
}

bool power_of_ten(uint64_t n) {
  while (n >= 10 && n % 10 == 0) n /= 10;
  return n == 1;
}

}  // namespace

void warn_once(const std::string& key, const std::string& message) {
  uint64_t n = 0;
  {
    const std::lock_guard lock(mutex);
    n = ++counts()[key];
  }
  if (n == 1)
    spdlog::warn("{}", message);
  else if (power_of_ten(n))
    spdlog::warn("{} (the same warning {} times in this process; said once, then at each power of ten)", message, n);
}

uint64_t warning_count(const std::string& key) {
  const std::lock_guard lock(mutex);
  const auto it = counts().find(key);
  return it == counts().end() ? 0 : it->second;
}

}  // namespace nnmeter
