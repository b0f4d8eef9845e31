#include "common/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace nnmeter {

namespace {

constexpr int kResultFd = 3;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// This process's environment with `overrides` (NAME=value) added or replacing the variables of that name.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  const auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const bool replaced = std::any_of(overrides.begin(), overrides.end(),
                                      [&](const std::string& o) { return name_of(o) == name_of(entry); });
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), overrides.begin(), overrides.end());
  return out;
}

std::vector<std::string> worker_argv(const fs::path& executable, const std::string& subcommand) {
  std::vector<std::string> argv = {executable.string(), subcommand};
  for (auto& a : worker_protocol_args()) argv.push_back(std::move(a));
  return argv;
}

}  // namespace

bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

WorkerProcess::WorkerProcess(const fs::path& executable, const Json& hello, const fs::path& log_file,
                             double startup_timeout_s, const std::vector<std::string>& env) {
  spawn(worker_argv(executable, "profile-worker"), log_file, env);
  auto reply = request(hello, startup_timeout_s);
  if (auto* why = std::get_if<std::string>(&reply))
    throw Error("the profiling worker did not start: " + *why + " (see " + log_file.string() + ")");
  const Json& answer = std::get<Json>(reply);
  if (answer.contains("fatal")) {
    reap("rejected its configuration");
    throw Error(answer["fatal"].get<std::string>());
  }
}

WorkerProcess::WorkerProcess(const fs::path& executable, const std::string& subcommand, const fs::path& log_file) {
  spawn(worker_argv(executable, subcommand), log_file);
}

WorkerProcess::WorkerProcess(const std::vector<std::string>& argv, const fs::path& log_file) { spawn(argv, log_file); }

std::vector<std::string> worker_protocol_args() {
  return {"--result-fd", std::to_string(kResultFd), "--parent-pid", std::to_string(::getpid())};
}

void WorkerProcess::spawn(std::vector<std::string> args, const fs::path& log_file, const std::vector<std::string>& env) {
  const std::string executable = args.at(0);
  int in_pipe[2], out_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  }
  std::error_code ec;
  if (!log_file.empty()) fs::create_directories(log_file.parent_path(), ec);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], kResultFd);
  if (log_file.empty()) {  // the child writes to this process's stderr
    posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // own group: a timeout kills the backend's children too
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_strings = env.empty() ? std::vector<std::string>{} : environment_with(env);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, executable.c_str(), &actions, &attr, argv.data(), env.empty() ? environ : envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  to_worker_ = in_pipe[1];
  from_worker_ = out_pipe[0];
  if (rc != 0) {
    pid_ = -1;
    close_fd(to_worker_);
    close_fd(from_worker_);
    throw Error("cannot start the worker process " + executable + ": " + std::strerror(rc));
  }
}

WorkerProcess::~WorkerProcess() {
  close_fd(to_worker_);  // EOF on stdin: the worker exits after its current model
  if (pid_ > 0) {
    // Give it a moment to exit cleanly, then make sure.
    for (int i = 0; i < 50 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) ::usleep(20000);
    if (::waitpid(pid_, nullptr, WNOHANG) == 0) reap("shut down");
  }
  close_fd(from_worker_);
}

std::variant<Json, std::string> WorkerProcess::request(const Json& message, double timeout_s) {
  if (pid_ <= 0) return std::string("worker is not running");
  if (!write_all(to_worker_, message.dump() + "\n")) return reap("stopped reading requests");
  return read_line(timeout_s);
}

std::variant<Json, std::string> WorkerProcess::read_line(double timeout_s) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
  while (true) {
    const auto newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      const std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      try {
        return Json::parse(line);
      } catch (const Json::exception&) {
        return reap("sent a malformed answer");
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) return reap("timed out after " + std::to_string(static_cast<int>(timeout_s)) + " s");
    pollfd pfd{from_worker_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) return reap("could not be watched");
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = ::read(from_worker_, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return reap("ended without answering");
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

void die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (parent > 0 && ::getppid() != parent) ::_exit(1);
}

std::string WorkerProcess::reap(const std::string& why) {
  if (pid_ <= 0) return why;
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  close_fd(to_worker_);
  close_fd(from_worker_);
  buffer_.clear();
  if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
    return why + " (crashed with signal " + std::to_string(WTERMSIG(status)) + ": " + ::strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return why + " (exit code " + std::to_string(WEXITSTATUS(status)) + ")";
  return why;
}

}  // namespace nnmeter
