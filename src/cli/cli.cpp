#include "cli/cli.h"

#include <fmt/format.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "cli/output.h"
#include "nnmeter/backend.h"
#include "nnmeter/fusion.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"

namespace nnmeter::cli {

namespace {

// nn-Meter's logger: every line "(nn-Meter) <message>"; its KEYINFO level is spdlog's info, its INFO
// level (shown with -v) is debug. In --json mode stdout carries only JSON, so logs go to stderr.
void setup_logging(bool verbose, bool json) {
  std::shared_ptr<spdlog::logger> logger;
  if (json) {
    logger = std::make_shared<spdlog::logger>("nn-Meter", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  } else {
    logger = std::make_shared<spdlog::logger>("nn-Meter", std::make_shared<spdlog::sinks::stdout_sink_mt>());
  }
  logger->set_pattern("(nn-Meter) %v");
  logger->set_level(verbose ? spdlog::level::debug : (json ? spdlog::level::warn : spdlog::level::info));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
}

template <class Info>
void print_list(const std::vector<Info>& infos, const std::string& plural, const std::string& tag, bool with_implement) {
  print_line(fmt::format("Supported {}: ('*' indicates customized {})", plural, plural));
  for (const auto& info : infos) {
    if (!info.customized) {
      print_line(fmt::format("[{}] {}", tag, info.name));
    } else if constexpr (requires { info.implement; }) {
      if (with_implement) {
        print_line(fmt::format("[{}] * {} ({})", tag, info.name, info.implement));
      } else {
        print_line(fmt::format("[{}] * {}", tag, info.name));
      }
    } else {
      print_line(fmt::format("[{}] * {}", tag, info.name));
    }
  }
}

struct InfoFlags {
  bool predictors = false, backends = false, kernels = false, operators = false, testcases = false;
  bool any() const { return predictors || backends || kernels || operators || testcases; }
};

template <class Info>
Json list_json(const std::vector<Info>& infos) {
  Json out = Json::array();
  for (const auto& info : infos) {
    Json j = {{"name", info.name}, {"customized", info.customized}};
    if constexpr (requires { info.implement; }) j["implement"] = info.implement;
    out.push_back(std::move(j));
  }
  return out;
}

// --json: one object with a key per list asked for, on stdout.
void print_info_json(const InfoFlags& flags, const Context& ctx) {
  Json out = Json::object();
  if (flags.predictors) {
    out["predictors"] = Json::array();
    for (const auto& p : ctx.registry.list_predictors())
      out["predictors"].push_back({{"name", p.name},
                                   {"version", p.version},
                                   {"category", p.category},
                                   {"package_location", p.package_location.string()},
                                   {"kernel_predictors", p.kernel_predictors}});
  }
  if (flags.backends) out["backends"] = list_json(list_backends(ctx.registry));
  if (flags.kernels) out["kernels"] = list_json(list_kernels(ctx.registry));
  if (flags.operators) out["operators"] = list_json(list_operators(ctx.registry));
  if (flags.testcases) out["testcases"] = list_json(list_testcases(ctx.registry));
  fmt::print("{}\n", json_text(out));
}

void print_info(const InfoFlags& flags, const Context& ctx) {
  if (ctx.json) return print_info_json(flags, ctx);
  if (flags.predictors) {
    print_line("Supported latency predictors:");
    for (const auto& p : ctx.registry.list_predictors())
      print_line(fmt::format("[Predictor] {}: version={}", p.name, p.version));
  }
  if (flags.backends) print_list(list_backends(ctx.registry), "backends", "Backend", false);
  if (flags.kernels) print_list(list_kernels(ctx.registry), "kernels", "Kernel", false);
  if (flags.operators) print_list(list_operators(ctx.registry), "operators", "Operator", true);
  if (flags.testcases) print_list(list_testcases(ctx.registry), "testcases", "TestCase", true);
}

// nn-Meter's argparse accepted `--h` as an abbreviation of --help; keep accepting it.
std::vector<std::string> normalize_args(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    args.push_back(a == "--h" ? "--help" : a);
  }
  return args;
}

// "nn-meter register": the command whose line failed to parse, for the pointer to its --help.
std::string parsed_command(const CLI::App& app) {
  std::string path = "nn-meter";
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += " " + at->get_name();
  }
  return path;
}

}  // namespace

std::string json_text(const Json& json) { return json.dump(2, ' ', false, Json::error_handler_t::replace); }

std::string one_line(const std::string& message) {
  const std::string valid = Json::parse(Json(message).dump(-1, ' ', false, Json::error_handler_t::replace)).get<std::string>();
  std::string out;
  for (const char c : valid) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out;
}

void report(const Context& ctx, const std::string& line, const Json& json) {
  if (ctx.json) {
    std::cout << json_text(json) << std::endl;
  } else {
    print_line(line);
  }
}

int run(int argc, char** argv) {
  CLI::App app{"nn-Meter: build and use latency predictors for DNN inference on any hardware backend", "nn-meter"};
  app.set_version_flag("--version", std::string("nn-meter ") + nnmeter::version());
  app.require_subcommand(0, 1);
  app.fallthrough();

  bool verbose = false;
  bool json = false;
  InfoFlags flags;
  app.add_flag("-v,--verbose", verbose, "show more detail (nn-Meter's INFO level)");
  app.add_flag("--json", json, "machine-readable JSON on stdout where a command supports it; no progress output");
  app.add_flag("--list-predictors", flags.predictors, "list all supported predictors");
  app.add_flag("--list-backends", flags.backends, "list all supported backends");
  app.add_flag("--list-kernels", flags.kernels, "list all supported kernels when building kernel predictors");
  app.add_flag("--list-operators", flags.operators, "list all supported operators when building fusion rule test cases");
  app.add_flag("--list-testcases", flags.testcases, "list all supported special test cases when testing fusion rules");

  // Until the line is parsed, only warnings (a bad registry entry met while building the subcommands) are
  // shown, on stderr so that --json output stays clean.
  setup_logging(false, true);
  std::unique_ptr<Context> ctx;
  try {
    ctx = std::make_unique<Context>(Context{false, false, Registry(Registry::default_home())});
  } catch (const Error& e) {
    fmt::print(stderr, "(nn-Meter) {}\n", one_line(e.what()));
    return 1;
  }

  add_register_commands(app, *ctx);
  add_workspace_commands(app, *ctx);
  add_backend_commands(app, *ctx);
  add_sample_commands(app, *ctx);
  add_builder_commands(app, *ctx);
  add_ruletest_commands(app, *ctx);
  add_predict_commands(app, *ctx);
  add_evaluate_commands(app, *ctx);
  add_machine_commands(app, *ctx);
  add_networks_commands(app, *ctx);

  // Subcommand callbacks run after the whole line is parsed, so logging is set up before they start.
  app.parse_complete_callback([&] {
    ctx->verbose = verbose;
    ctx->json = json;
    setup_logging(verbose, json);
  });

  std::vector<std::string> args = normalize_args(argc, argv);
  std::reverse(args.begin(), args.end());  // CLI11 takes the reversed vector form
  try {
    app.parse(args);
    if (app.get_subcommands().empty()) {
      if (flags.any()) {
        print_info(flags, *ctx);
      } else {
        print_line("please run \"nn-meter {positional argument} --help\" to see nn-meter guidance");
      }
    }
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0 with CLI11's own output; every other mistake in the command line is a
    // usage error: one line like the other usage errors, exit 2 as argparse (nn-Meter's parser) does.
    // Runtime errors exit 1.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    fmt::print(stderr, "(nn-Meter) {} (see {} --help)\n", what, parsed_command(app));
    return 2;
  } catch (const EarlyExit& e) {
    return e.code;
  } catch (const UsageError& e) {
    fmt::print(stderr, "(nn-Meter) {}\n", one_line(e.what()));
    return 2;
  } catch (const Error& e) {
    fmt::print(stderr, "(nn-Meter) {}\n", one_line(e.what()));
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "(nn-Meter) unexpected error: {}\n", one_line(e.what()));
    return 1;
  }
  return 0;
}

}  // namespace nnmeter::cli
