#include "common/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

namespace nnmeter {

Progress::Progress(std::string label, size_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled && total > 0 && ::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (enabled_) draw(false);
}

Progress::~Progress() {
  if (enabled_) draw(true);
}

void Progress::advance(size_t done_now) {
  done_ += done_now;
  const auto now = std::chrono::steady_clock::now();
  if (enabled_ && (now - last_draw_ > std::chrono::milliseconds(200) || done_ == total_)) {
    last_draw_ = now;
    draw(false);
  }
}

void Progress::draw(bool final) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? done_ / elapsed : 0.0;
  std::string eta = "--";
  if (rate > 0 && done_ < total_) {
    const auto left = static_cast<long>((total_ - done_) / rate);
    eta = left >= 3600 ? fmt::format("{}h{:02}m", left / 3600, left % 3600 / 60) : fmt::format("{}m{:02}s", left / 60, left % 60);
  }
  fmt::print(stderr, "\r(nn-Meter) {}: {}/{} ({:.2f}/s, ETA {})\033[K{}", label_, done_, total_, rate, eta,
             final ? "\n" : "");
  std::fflush(stderr);
}

}  // namespace nnmeter
