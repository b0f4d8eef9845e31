#include "support/test_support.h"

#include <algorithm>

#include "common/io.h"
#include "nnmeter/common.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace nnmeter::test {

TempDir::TempDir() {
  std::random_device rd;
  const fs::path base = fs::temp_directory_path();
  for (int attempt = 0; attempt < 100; ++attempt) {
    fs::path candidate = base / ("nnmeter-test-" + std::to_string(rd()));
    if (fs::create_directory(candidate)) {
      path_ = candidate;
      return;
    }
  }
  throw std::runtime_error("cannot create a temporary folder");
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

size_t count_lines(const fs::path& path) {
  if (!fs::exists(path)) return 0;
  const std::string text = read_text(path);
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

CliResult run_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  TempDir io;
  const fs::path out_path = io / "stdout";
  const fs::path err_path = io / "stderr";

  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& [k, v] : env) merged[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  std::vector<std::string> args = argv;
  std::vector<char*> c_args;
  for (auto& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, c_args[0], &actions, nullptr, c_args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start " + args[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  CliResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_text(out_path);
  result.err = read_text(err_path);
  return result;
}

CliResult run_cli(const std::vector<std::string>& args, const fs::path& home,
                  const std::map<std::string, std::string>& env) {
  std::vector<std::string> argv = {NNMETER_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> full_env = env;
  full_env["NN_METER_HOME"] = home.string();
  // The suite measures in parallel on a shared machine: the check before measuring would warn at random.
  full_env.try_emplace("NN_METER_MACHINE_CHECK", "off");
  return run_program(argv, full_env);
}

fs::path kill_mid_write(const fs::path& file) {
  const std::string content(8 << 20, 'x');  // large enough to be caught between open and rename
  const std::string prefix = "." + file.filename().string() + ".tmp.";
  for (int attempt = 0; attempt < 200; ++attempt) {
    const pid_t child = ::fork();
    if (child < 0) throw std::runtime_error("fork failed");
    if (child == 0) {
      for (;;) io::write_file_atomic(file, content);
    }
    const std::string mine = prefix + std::to_string(child) + ".";
    auto temp = [&]() -> fs::path {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(file.parent_path(), ec))
        if (e.path().filename().string().rfind(mine, 0) == 0) return e.path();
      return {};
    };
    fs::path seen;
    for (int poll = 0; poll < 100000 && seen.empty(); ++poll) seen = temp();
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    if (const fs::path left = temp(); !left.empty()) return left;  // killed before its rename
  }
  throw std::runtime_error("no write of " + file.string() + " was caught mid-way");
}

}  // namespace nnmeter::test
