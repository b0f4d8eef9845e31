// The parent's handle on one profiling worker: an `nn-meter profile-worker` child in its own process
// group, fed JSON requests on its stdin and answering JSON lines on fd 3 (its stdout and stderr go to a
// log file, so a chatty backend cannot corrupt the protocol).
#pragma once

#include <sys/types.h>

#include <variant>

#include "nnmeter/common.h"

namespace nnmeter {

class WorkerProcess {
 public:
  // Starts the worker and sends `hello`; throws Error if it cannot start or rejects the hello.
  WorkerProcess(const fs::path& executable, const Json& hello, const fs::path& log_file, double startup_timeout_s);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // The worker's answer, or why there is none (it crashed or timed out; it is then killed and unusable).
  std::variant<Json, std::string> request(const Json& message, double timeout_s);
  bool alive() const { return pid_ > 0; }

 private:
  std::variant<Json, std::string> read_line(double timeout_s);
  std::string reap(const std::string& why);  // kills the process group, waits, describes the end

  pid_t pid_ = -1;
  int to_worker_ = -1;
  int from_worker_ = -1;
  std::string buffer_;
};

}  // namespace nnmeter
