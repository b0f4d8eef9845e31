// nn-meter backend NAME convert|run|profile, check-env and benchmark: MMDeploy's backend manager as a
// console tool. The flags of `backend NAME ...` are generated from the parameters the backend declares,
// so a registered plugin gets the same tool as a builtin.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/utsname.h>

#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include "cli/cli.h"
#include "common/text.h"
#include "cli/output.h"
#include "common/io.h"
#include "onnx_io/tensor_file.h"
#include "nnmeter/backend.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "registry/plugin_probe.h"
#include "workspace/config_files.h"

namespace nnmeter::cli {

namespace {

// Raw values of the generated parameter flags, converted to the declared types once parsing is done.
struct ParamFlags {
  std::vector<BackendParam> params;
  std::map<std::string, std::string> raw;  // param name -> text given on the command line
  std::string config_file;
};

std::string flag_name(const std::string& param) {
  std::string out = "--";
  for (char c : param) out += c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Json typed_value(const BackendParam& p, const std::string& text) {
  const std::string flag = flag_name(p.name);
  try {
    size_t used = 0;
    switch (p.type) {
      case BackendParam::Type::Int: {
        const long long v = std::stoll(text, &used);
        if (used == text.size()) return v;
        break;
      }
      case BackendParam::Type::Float: {
        const double v = std::stod(text, &used);
        if (used == text.size()) return v;
        break;
      }
      case BackendParam::Type::Bool:
        if (text.empty() || text == "true" || text == "TRUE" || text == "True" || text == "1" || text == "yes") return true;
        if (text == "false" || text == "FALSE" || text == "False" || text == "0" || text == "no") return false;
        break;
      case BackendParam::Type::String:
        return text;
    }
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("{} expects {} but got '{}'", flag, to_string(p.type), text));
}

void add_param_flags(CLI::App* cmd, const std::shared_ptr<ParamFlags>& flags) {
  cmd->add_option("--config", flags->config_file, "backend_config.yaml to start from (flags override its keys)");
  for (const auto& p : flags->params) {
    const std::string def = p.default_value.is_string() ? p.default_value.get<std::string>() : p.default_value.dump();
    CLI::Option* opt = cmd->add_option_function<std::string>(
                               flag_name(p.name), [flags, name = p.name](const std::string& v) { flags->raw[name] = v; },
                               fmt::format("{} ({}, default: {})", p.help, to_string(p.type), def.empty() ? "''" : def))
                           ->type_name(to_string(p.type));
    if (p.type == BackendParam::Type::Bool) opt->expected(0, 1);  // `--dry-run` alone means true
  }
}

Json config_of(const ParamFlags& flags) {
  Json config = flags.config_file.empty() ? Json::object() : load_config_file(flags.config_file);
  if (config.is_null()) config = Json::object();
  for (const auto& p : flags.params) {
    const auto it = flags.raw.find(p.name);
    if (it != flags.raw.end()) config[p.name] = typed_value(p, it->second);
  }
  return config;
}

// The backend's config from a config file and flags, validated. A value that fails validation and came
// from the command line alone is a usage error (exit 2), as a mistyped flag is; a config file's is not.
Json resolve_flags(const std::vector<BackendParam>& params, const Json& given, const std::string& config_file,
                   const std::string& flags_origin = "command-line flags") {
  if (!config_file.empty()) return resolve_backend_config(params, given, config_file);
  try {
    return resolve_backend_config(params, given, flags_origin);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

std::unique_ptr<Backend> connect(Context& ctx, const std::string& name, const ParamFlags& flags) {
  const Json resolved = resolve_flags(find_backend(ctx.registry, name).params, config_of(flags), flags.config_file);
  return connect_backend(ctx.registry, name, resolved, flags.config_file.empty() ? "command-line flags" : flags.config_file);
}

// A work dir given by the user, or a temporary one removed when done.
class WorkDir {
 public:
  explicit WorkDir(const std::string& given) {
    if (!given.empty()) {
      path_ = given;
      return;
    }
    path_ = fs::temp_directory_path() / fmt::format("nn-meter-{}-{}", ::getpid(),
                                                    std::chrono::steady_clock::now().time_since_epoch().count());
    fs::create_directories(path_);
    owned_ = true;
  }
  ~WorkDir() {
    std::error_code ec;
    if (owned_) fs::remove_all(path_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  bool owned_ = false;
};

void require_file(const std::string& path, const char* what) {
  if (!fs::is_regular_file(path)) throw Error(fmt::format("{} '{}' does not exist or is not a file", what, path));
}

Json stats_json(const LatencyStats& s) {
  return {{"latency", s.latency().str()}, {"mean_ms", s.mean}, {"std_ms", s.std}, {"median_ms", s.median},
          {"min_ms", s.min}, {"max_ms", s.max}, {"count", s.count}, {"cv", s.cv()}, {"samples_ms", s.samples_ms}};
}

struct BackendArgs {
  std::string onnx, work_dir, file_name, output_dir;
  std::vector<std::string> inputs;
};

void do_convert(Context& ctx, const std::string& name, const ParamFlags& flags, const BackendArgs& a) {
  require_file(a.onnx, "--onnx-path");
  auto backend = connect(ctx, name, flags);
  const auto files = backend->to_backend(a.onnx, a.work_dir, a.file_name);
  if (ctx.json) {
    Json out = Json::array();
    for (const auto& f : files) out.push_back(f.string());
    std::cout << json_text(Json{{"backend", name}, {"files", out}}) << std::endl;
    return;
  }
  print_line(fmt::format("{} converted {} into:", name, a.onnx));
  for (const auto& f : files) print_line("  " + f.string());
}

// Inputs are matched by tensor name, else by position among the model's runtime inputs (the node-test
// convention: input_0.pb is the first graph input).
std::vector<Tensor> read_inputs(const std::vector<std::string>& files, const std::vector<std::string>& names) {
  if (files.size() > names.size())
    throw Error(fmt::format("{} inputs given but the model reads {} ({})", files.size(), names.size(), fmt::join(names, ", ")));
  std::vector<Tensor> out;
  std::map<std::string, std::string> given;  // input name -> the file that gave it
  for (size_t i = 0; i < files.size(); ++i) {
    require_file(files[i], "--input");
    Tensor t = onnx_io::read_tensor_pb(files[i]);
    if (std::find(names.begin(), names.end(), t.name) == names.end()) t.name = names[i];
    if (const auto [it, fresh] = given.emplace(t.name, files[i]); !fresh)
      throw Error(fmt::format("input '{}' is given twice ({} and {}); the model reads {}", t.name, it->second, files[i],
                              fmt::join(names, ", ")));
    out.push_back(std::move(t));
  }
  return out;
}

void do_run(Context& ctx, const std::string& name, const ParamFlags& flags, const BackendArgs& a) {
  require_file(a.onnx, "--onnx-path");
  auto backend = connect(ctx, name, flags);
  const WorkDir work(a.work_dir);
  const auto files = backend->to_backend(a.onnx, work.path(), a.file_name);
  auto wrapper = backend->build_wrapper(files);
  const auto outputs = wrapper->forward(read_inputs(a.inputs, onnx_io::onnx_runtime_input_names(a.onnx)));
  Json listing = Json::array();
  for (size_t i = 0; i < outputs.size(); ++i) {
    const fs::path file = fs::path(a.output_dir) / fmt::format("output_{}.pb", i);
    onnx_io::write_tensor_pb(file, outputs[i]);
    listing.push_back({{"name", outputs[i].name}, {"shape", outputs[i].shape}, {"file", file.string()}});
    if (!ctx.json)
      print_line(fmt::format("output {} [{}] -> {}", quoted(outputs[i].name), fmt::join(outputs[i].shape, ","), file.string()));
  }
  if (ctx.json) std::cout << json_text(Json{{"backend", name}, {"outputs", listing}}) << std::endl;
}

// One model measured by the protocol: REPEATS repeats, each in a fresh worker process (plugins never run
// in the CLI's own process). The journal lives in a temporary folder: a single model is cheap to redo.
ProfileOutcome measure_with_protocol(Context& ctx, const std::string& backend, const Json& resolved, const std::string& onnx,
                                     const fs::path& work_dir, const std::string& file_name) {
  const WorkDir state("");
  ProfilerOptions options =
      ProfilerOptions::of(backend, resolved, ctx.registry, work_dir, fs::path(onnx).filename().string());
  options.progress = !ctx.json;
  const std::string id = file_name.empty() ? fs::path(onnx).stem().string() : file_name;
  auto outcomes = profile_models({ProfileJob{id, onnx, {}}}, options, state.path() / "journal.jsonl",
                                 state.path() / "profile_error.log");
  ProfileOutcome o = std::move(outcomes.at(id));
  if (!o.ok) throw Error(fmt::format("{} could not measure {}: {}", backend, onnx, o.error));
  if (o.failed_repeats > 0)
    spdlog::warn("{} of {} repeats failed (first reason: {})", o.failed_repeats, o.failed_repeats + o.repeats.size(), o.error);
  return o;
}

Json outcome_json(const ProfileOutcome& o, const MeasurementProtocol& protocol) {
  Json repeats = Json::array();
  for (const auto& s : o.repeats) repeats.push_back(stats_json(s));
  return {{"latency", o.latency.str()},           {"latency_ms", o.latency.value_ms},
          {"statistic", to_string(protocol.statistic)}, {"repeats_ms", o.repeats_ms},
          {"failed_repeats", o.failed_repeats},   {"repeats", repeats}};
}

// How far apart the repeats landed: the spread the protocol's statistic works against.
std::string repeat_summary(const ProfileOutcome& o, const MeasurementProtocol& protocol) {
  const LatencyStats r = LatencyStats::from_samples(o.repeats_ms);
  return fmt::format("{} of {} repeats in fresh processes, {:.4f}..{:.4f} ms ({:+.1f}% max over min)",
                     to_string(protocol.statistic), o.repeats.size(), r.min, r.max, r.min > 0 ? 100 * (r.max / r.min - 1) : 0.0);
}

void do_profile(Context& ctx, const std::string& name, const ParamFlags& flags, const BackendArgs& a) {
  require_file(a.onnx, "--onnx-path");
  const BackendInfo info = find_backend(ctx.registry, name);
  const Json resolved = resolve_flags(info.params, config_of(flags), flags.config_file);
  const MeasurementProtocol protocol = MeasurementProtocol::from_config(resolved);
  const WorkDir work(a.work_dir);
  // A dry run prints the device commands of one measurement; they are the same for every repeat, and a
  // worker's output goes to its log, so it runs here, once. Plugins stay out of the CLI's process.
  if (resolved.value("DRY_RUN", false) && !info.customized) {
    auto backend = info.create(resolved);
    const auto files = backend->to_backend(a.onnx, work.path(), a.file_name);
    const LatencyStats none = backend->profile(files);
    if (none.count > 0) throw Error(name + " measured during a dry run");
    print_line(fmt::format("dry run: {} was converted, the commands above were not run, nothing was measured", a.onnx));
    return;
  }
  const ProfileOutcome o = measure_with_protocol(ctx, name, resolved, a.onnx, work.path(), a.file_name);
  if (ctx.json) {
    std::cout << json_text(Json{{"backend", name}, {"model", a.onnx}, {"result", outcome_json(o, protocol)}}) << std::endl;
    return;
  }
  for (size_t i = 0; i < o.repeats.size(); ++i) {
    const LatencyStats& s = o.repeats[i];
    print_line(fmt::format("repeat {}: median {:.4f} ms (mean {:.4f}, min {:.4f}, max {:.4f}, {} samples, CV {:.2f}%)",
                           i + 1, s.median, s.mean, s.min, s.max, s.count, 100 * s.cv()));
  }
  print_line(fmt::format("{} latency of {}: {} ms ({})", name, a.onnx, o.latency.str(), repeat_summary(o, protocol)));
}

void add_backend_tool(CLI::App* parent, Context& ctx, const BackendInfo& info) {
  CLI::App* tool = parent->add_subcommand(info.name, fmt::format("console tool of the {} backend", info.name));
  tool->require_subcommand(1);
  const std::string name = info.name;
  auto make = [&](const char* verb, const char* help, bool inputs) {
    auto flags = std::make_shared<ParamFlags>();
    flags->params = info.params;
    flags->params.insert(flags->params.end(), protocol_params().begin(), protocol_params().end());
    auto args = std::make_shared<BackendArgs>();
    CLI::App* cmd = tool->add_subcommand(verb, help);
    cmd->add_option("--onnx-path", args->onnx, "ONNX model path.")->required();
    cmd->add_option("--work-dir", args->work_dir, std::string("The working directory.") +
                                                      (std::string(verb) == "convert" ? "" : " Default: a temporary one."));
    cmd->add_option("--file-name", args->file_name, "File name of the converted model, without extension. Default: the "
                                                    "ONNX file's stem.");
    if (inputs) {
      cmd->add_option("--input", args->inputs, "An input TensorProto .pb file; repeat for several inputs.")->required();
      cmd->add_option("--output-dir", args->output_dir, "Where output_<i>.pb files are written.")->required();
    }
    add_param_flags(cmd, flags);
    return std::tuple{cmd, flags, args};
  };
  {
    auto [cmd, flags, args] = make("convert", "convert an ONNX model into the backend's files", false);
    cmd->get_option("--work-dir")->required();
    cmd->callback([&ctx, name, flags, args] { do_convert(ctx, name, *flags, *args); });
  }
  {
    auto [cmd, flags, args] = make("run", "run an ONNX model on TensorProto .pb inputs and write .pb outputs", true);
    cmd->callback([&ctx, name, flags, args] { do_run(ctx, name, *flags, *args); });
  }
  {
    auto [cmd, flags, args] = make("profile", "measure the latency of an ONNX model", false);
    cmd->callback([&ctx, name, flags, args] { do_profile(ctx, name, *flags, *args); });
  }
}

std::vector<BackendInfo> all_backends(const Context& ctx) {
  try {
    return list_backends(ctx.registry);
  } catch (const std::exception&) {
    // A broken registry must not take the builtin tools down; check-env reports it.
    return builtin_backends();
  }
}

void check_env(Context& ctx) {
  utsname u{};
  uname(&u);
  const std::string platform = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  std::vector<BackendInfo> infos;
  std::string registry_failure;
  try {
    infos = list_backends(ctx.registry);
  } catch (const std::exception& e) {
    infos = builtin_backends();
    registry_failure = e.what();
  }
  std::vector<std::string> lines;
  for (const auto& info : infos) lines.push_back(check_env_line_isolated(ctx.registry, info));
  if (ctx.json) {
    // Each backend line is "name:\tversion" (or "name:\tNone" / "name:\tCheckFailed (why)").
    Json backends = Json::array();
    for (size_t i = 0; i < infos.size(); ++i) {
      const std::string& line = lines[i];
      const size_t tab = line.find(":\t");
      backends.push_back({{"name", infos[i].name},
                          {"customized", infos[i].customized},
                          {"version", tab == std::string::npos ? line : line.substr(tab + 2)}});
    }
    Json out = {{"platform", platform},
                {"cpus", std::thread::hardware_concurrency()},
                {"nn_meter", nnmeter::version()},
                {"backends", backends}};
    if (!registry_failure.empty()) out["registry_failure"] = registry_failure;
    std::cout << json_text(out) << std::endl;
    return;
  }
  std::cout << "**********Environmental information**********\n";
  std::cout << "sys.platform: " << platform << "\n";
  std::cout << "CPUs: " << std::thread::hardware_concurrency() << "\n";
  std::cout << "nn-Meter: " << nnmeter::version() << "\n";
  std::cout << "**********Backend information**********\n";
  if (!registry_failure.empty()) std::cout << "registry:\tCheckFailed (" << registry_failure << ")\n";
  for (const auto& line : lines) std::cout << line << "\n";
  std::cout.flush();
}

struct BenchArgs {
  std::string backend = "onednn_cpu", onnx;
  int threads = 0, runs = 0, warmup = -1, rounds = 0, repeats = 0;
};

void set_param(Json& config, const BackendInfo& info, const char* key, const Json& value, const char* flag) {
  const bool declared = std::any_of(info.params.begin(), info.params.end(), [&](const BackendParam& p) { return p.name == key; });
  if (!declared) throw UsageError(fmt::format("{} needs a backend with a {} parameter; {} has none", flag, key, info.name));
  config[key] = value;
}

// Output in the spirit of TFLite's benchmark_model / onnxruntime_perf_test.
void benchmark(Context& ctx, const BenchArgs& a) {
  require_file(a.onnx, "--onnx");
  const BackendInfo info = find_backend(ctx.registry, a.backend);
  Json config = Json::object();
  if (a.threads > 0) set_param(config, info, "NUM_THREADS", a.threads, "--threads");
  if (a.runs > 0) set_param(config, info, "NUM_RUNS", a.runs, "--runs");
  if (a.rounds > 0) set_param(config, info, "NUM_ROUNDS", a.rounds, "--rounds");
  if (a.warmup >= 0) set_param(config, info, "WARMUP_RUNS", a.warmup, "--warmup");
  if (a.repeats > 0) config["REPEATS"] = a.repeats;
  const Json resolved = resolve_flags(info.params, config, "", "benchmark flags");
  const MeasurementProtocol protocol = MeasurementProtocol::from_config(resolved);
  const WorkDir work("");
  const ProfileOutcome o = measure_with_protocol(ctx, a.backend, resolved, a.onnx, work.path(), "");
  if (ctx.json) {
    std::cout << json_text({{"backend", a.backend}, {"model", a.onnx}, {"config", resolved}, {"result", outcome_json(o, protocol)}})
              << std::endl;
    return;
  }
  print_line(fmt::format("Model: {}  Backend: {}", a.onnx, a.backend));
  print_line(fmt::format("Config: {}", resolved.dump()));
  for (size_t i = 0; i < o.repeats.size(); ++i) {
    const LatencyStats& s = o.repeats[i];
    print_line(fmt::format("repeat {}: count={} min={:.4f} max={:.4f} avg={:.4f} std={:.4f} median={:.4f} (ms; one sample "
                           "per round)", i + 1, s.count, s.min, s.max, s.mean, s.std, s.median));
  }
  print_line(fmt::format("Latency: {} ms  ({:.2f} inferences/s; {})", o.latency.str(),
                         o.latency.value_ms > 0 ? 1000.0 / o.latency.value_ms : 0.0, repeat_summary(o, protocol)));
}

}  // namespace

void add_backend_commands(CLI::App& app, Context& ctx) {
  CLI::App* backend = app.add_subcommand("backend", "console tools of the backends: convert, run, profile");
  backend->require_subcommand(1);
  for (const auto& info : all_backends(ctx)) add_backend_tool(backend, ctx, info);

  app.add_subcommand("check-env", "print the version of every backend, builtin and registered (None if unavailable)")
      ->callback([&ctx] { check_env(ctx); });

  auto args = std::make_shared<BenchArgs>();
  CLI::App* bench = app.add_subcommand("benchmark", "measure a whole model's latency on a backend");
  bench->add_option("--backend", args->backend, "backend name")->capture_default_str();
  bench->add_option("--onnx", args->onnx, "ONNX model path")->required();
  bench->add_option("--threads", args->threads, "threads (the backend's NUM_THREADS)");
  bench->add_option("--runs", args->runs, "timed runs per round (the backend's NUM_RUNS)");
  bench->add_option("--rounds", args->rounds, "rounds (the backend's NUM_ROUNDS)");
  bench->add_option("--warmup", args->warmup, "warm-up runs (the backend's WARMUP_RUNS)");
  bench->add_option("--repeats", args->repeats, "independent repeats in fresh processes (REPEATS)");
  bench->callback([&ctx, args] { benchmark(ctx, *args); });
}

}  // namespace nnmeter::cli
