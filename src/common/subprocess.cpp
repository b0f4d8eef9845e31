#include "common/subprocess.h"

#include "common/text.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

extern char** environ;

namespace nnmeter {

namespace {

// A chatty tool must not exhaust memory; what matters for parsing is far smaller.
constexpr size_t kMaxOutputBytes = size_t{32} << 20;

void append(std::string& out, const char* data, ssize_t n) {
  if (n > 0 && out.size() < kMaxOutputBytes) out.append(data, std::min<size_t>(static_cast<size_t>(n), kMaxOutputBytes - out.size()));
}

void describe_status(CommandResult& r, int status) {
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
}

}  // namespace

std::optional<fs::path> find_executable(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos)
    return ::access(program.c_str(), X_OK) == 0 && !fs::is_directory(program) ? std::optional<fs::path>(program) : std::nullopt;
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const fs::path candidate = fs::path(end == start ? "." : dirs.substr(start, end - start)) / program;
    std::error_code ec;
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate, ec)) return candidate;
    start = end + 1;
  }
  return std::nullopt;
}

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty() || argv[0].empty()) throw Error("no program to run");
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // a timeout kills what the program started too
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> args = argv;
  std::vector<char*> c_argv;
  for (auto& a : args) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, c_argv[0], &actions, &attr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    throw Error("cannot start '" + argv[0] + "': " + std::strerror(rc));
  }

  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
  CommandResult result;
  bool reaped = false;
  int status = 0;
  char chunk[8192];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd pfd{pipe_fds[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 100)));
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0) {
      const ssize_t n = ::read(pipe_fds[0], chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // EOF: every writer is gone
      append(result.output, chunk, n);
      continue;
    }
    // A daemon the program left behind (adb starts its server so) may hold the pipe open forever: once the
    // program itself has exited, take what is buffered and stop.
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      ::fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
      ssize_t n;
      while ((n = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0) append(result.output, chunk, n);
      break;
    }
  }
  ::close(pipe_fds[0]);
  while (!reaped && !result.timed_out) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) reaped = true;
    else if (clock::now() >= deadline) result.timed_out = true;
    else ::usleep(10000);
  }
  if (result.timed_out) {
    ::kill(-pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return result;
  }
  describe_status(result, status);
  return result;
}

CommandResult run_tool(const std::vector<std::string>& argv, const ToolRun& how) {
  if (how.dry_run) {
    spdlog::info("[dry-run] {}", command_line(argv));
    return CommandResult{0, 0, false, ""};
  }
  if (argv.empty() || !find_executable(argv[0]))
    throw Error(fmt::format("{}: '{}' is not installed or not on PATH: {}", how.who, argv.empty() ? "" : argv[0],
                            how.missing_hint));
  spdlog::debug("{}: {}", how.who, command_line(argv));
  CommandResult r = run_command(argv, how.timeout_s);
  if (r.timed_out)
    throw Error(fmt::format("{}: `{}` did not finish within {} s (TIMEOUT_S); the device may be hung or the model too slow",
                            how.who, command_line(argv), how.timeout_s));
  return r;
}

std::string shell_quote(const std::string& word) {
  const bool safe = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                           "0123456789_-./=:,+@%") == std::string::npos;
  if (safe) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + shell_quote(a);
  return out;
}

std::string last_output_line(const std::string& output) {
  size_t end = output.size();
  while (end > 0) {
    const size_t start = output.rfind('\n', end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    const std::string line = trim(output.substr(from, end - from));
    if (!line.empty()) return line;
    if (start == std::string::npos) break;
    end = start;
  }
  return "(no output)";
}

}  // namespace nnmeter
