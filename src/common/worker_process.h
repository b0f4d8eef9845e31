// The parent's handle on one profiling worker: an `nn-meter-worker profile-worker` child in its own process
// group, fed JSON requests on its stdin and answering JSON lines on fd 3 (its stdout and stderr go to a
// log file, so a chatty backend cannot corrupt the protocol).
#pragma once

#include <sys/types.h>

#include <variant>

#include "nnmeter/common.h"

namespace nnmeter {

class WorkerProcess {
 public:
  // Starts the worker and sends `hello`; throws Error if it cannot start or rejects the hello. `env` adds
  // to (or replaces in) this process's environment for the worker, as NAME=value strings.
  WorkerProcess(const fs::path& executable, const Json& hello, const fs::path& log_file, double startup_timeout_s,
                const std::vector<std::string>& env = {});
  // Starts `<executable> <subcommand>` with the same pipes and no hello (e.g. `plugin-probe`).
  WorkerProcess(const fs::path& executable, const std::string& subcommand, const fs::path& log_file);
  // Starts `argv` (argv[0] the program's path) with the same pipes, e.g. a Python plugin host; an empty
  // `log_file` leaves its output on this process's stderr.
  WorkerProcess(const std::vector<std::string>& argv, const fs::path& log_file);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // The worker's answer, or why there is none (it crashed or timed out; it is then killed and unusable).
  std::variant<Json, std::string> request(const Json& message, double timeout_s);
  bool alive() const { return pid_ > 0; }

 private:
  void spawn(std::vector<std::string> argv, const fs::path& log_file, const std::vector<std::string>& env = {});
  std::variant<Json, std::string> read_line(double timeout_s);
  std::string reap(const std::string& why);  // kills the process group, waits, describes the end

  pid_t pid_ = -1;
  int to_worker_ = -1;
  int from_worker_ = -1;
  std::string buffer_;
};

// The arguments every worker gets after its program and subcommand: the answers' fd and this process.
std::vector<std::string> worker_protocol_args();

// Writes all of `text` to `fd`, retrying short writes; false on an error.
bool write_all(int fd, const std::string& text);

// Worker side, first thing in `profile-worker`: the kernel kills this process when the parent dies, so a
// worker stuck in a hung plugin does not outlive a SIGKILLed run. Exits at once if the parent is already
// gone (reparented before the request took effect); `parent` 0 skips that check.
void die_with_parent(pid_t parent);

}  // namespace nnmeter
