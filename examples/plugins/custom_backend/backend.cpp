// An example customized backend: it measures a model by timing an external program that runs it (for
// example a vendor's benchmark tool on a device), the way nn-Meter's TFLite backend wraps benchmark_model.
// The program is started by argv with posix_spawn, never through a shell.
#include <nnmeter/plugin.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace {

using nnmeter::plugin::json;

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// Runs argv to completion with its output discarded; returns the wall time in milliseconds.
double run_once(std::vector<std::string> argv) {
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, c_argv[0], &actions, nullptr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("cannot start '" + argv[0] + "'");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  const auto stop = std::chrono::steady_clock::now();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("'" + argv[0] + "' failed on the model");
  return std::chrono::duration<double, std::milli>(stop - start).count();
}

class myBackend : public nnmeter::plugin::Backend {
 public:
  using Backend::Backend;

  json params() const override {
    return json::array({
        {{"name", "COMMAND"}, {"type", "string"}, {"default", "cat {model}"},
         {"help", "program that runs one inference; {model} is replaced by the model path"}},
        {{"name", "WARMUP_RUNS"}, {"type", "int"}, {"default", 1}, {"help", "untimed runs before measuring"}},
        {{"name", "NUM_RUNS"}, {"type", "int"}, {"default", 5}, {"help", "timed runs"}},
    });
  }

  std::string get_version() const override { return "1.0"; }

  std::string test_connection() override { return "Registration Success!"; }

  std::vector<std::string> to_backend(const std::string& onnx_path, const std::string& work_dir,
                                      const std::string& file_name) override {
    namespace fs = std::filesystem;
    fs::create_directories(work_dir);
    const fs::path out = fs::path(work_dir) / (file_name.empty() ? fs::path(onnx_path).filename().string() : file_name);
    fs::copy_file(onnx_path, out, fs::copy_options::overwrite_existing);
    return {out.string()};
  }

  json profile(const std::vector<std::string>& backend_files) override {
    if (backend_files.empty()) throw std::runtime_error("no model to profile");
    std::vector<std::string> argv = split_words(config_.value("COMMAND", std::string("cat {model}")));
    if (argv.empty()) throw std::runtime_error("COMMAND is empty");
    for (auto& word : argv)
      if (word == "{model}") word = backend_files.front();
    for (int i = 0; i < config_.value("WARMUP_RUNS", 1); ++i) run_once(argv);
    json samples = json::array();
    for (int i = 0; i < config_.value("NUM_RUNS", 5); ++i) samples.push_back(run_once(argv));
    return {{"latency_ms", samples}};
  }
};

}  // namespace

NNMETER_PLUGIN("custom_backend", "1.0", myBackend)
