// A progress line for long work: "(nn-Meter) <label>: done/total, rate/s, ETA", redrawn in place on a
// terminal, silent when stderr is not a terminal (pipes, CI, --json).
#pragma once

#include <chrono>
#include <string>

namespace nnmeter {

class Progress {
 public:
  Progress(std::string label, size_t total, bool enabled);
  ~Progress();
  void advance(size_t done_now = 1);

 private:
  void draw(bool final);
  std::string label_;
  size_t total_;
  size_t done_ = 0;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace nnmeter
