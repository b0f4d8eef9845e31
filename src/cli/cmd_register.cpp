// nn-meter register / unregister: customized backends, kernels, operators, test cases and predictors.
#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/output.h"

namespace nnmeter::cli {

namespace {

struct RegisterArgs {
  std::string predictor, backend, op, testcase, kernel;
};

struct UnregisterArgs {
  std::string predictor, predictor_version, backend, kernel;
  std::vector<std::string> op, testcase;
};

void register_one(Context& ctx, const RegisterArgs& a) {
  try {
    if (!a.predictor.empty()) {
      const auto p = ctx.registry.register_predictor(a.predictor);
      report(ctx, fmt::format("Successfully register predictor: {} (version {})", p.name, p.version),
             {{"registered", "predictor"}, {"name", p.name}, {"version", p.version}});
      return;
    }
    const std::vector<std::pair<ModuleKind, std::string>> choices = {{ModuleKind::Backend, a.backend},
                                                                     {ModuleKind::Kernel, a.kernel},
                                                                     {ModuleKind::Operator, a.op},
                                                                     {ModuleKind::TestCase, a.testcase}};
    for (const auto& [kind, meta] : choices) {
      if (meta.empty()) continue;
      const ModuleEntry entry = ctx.registry.register_module(kind, meta);
      // Wording as in nn-Meter's transcripts: backends without a colon, the other kinds with one.
      report(ctx,
             kind == ModuleKind::Backend ? fmt::format("Successfully register backend {}", entry.name)
                                         : fmt::format("Successfully register {}: {}", singular_name(kind), entry.name),
             {{"registered", singular_name(kind)}, {"name", entry.name}, {"implement", entry.implement}});
      return;
    }
  } catch (const Error& e) {
    throw Error(std::string("Registration failed: ") + e.what());
  }
  throw UsageError("nothing to register: give one of --predictor, --backend, --operator, --testcase or --kernel "
              "(see nn-meter register --help)");
}

void unregister_one(Context& ctx, const UnregisterArgs& a) {
  auto done = [&](const char* kind, const std::string& name, const std::string& implement, size_t removed) {
    report(ctx,
           implement.empty() ? fmt::format("Successfully unregister {}.", name)
                             : fmt::format("Successfully unregister {} ({}).", name, implement),
           {{"unregistered", kind}, {"name", name}, {"implement", implement}, {"removed", removed}});
  };
  if (!a.predictor.empty()) {
    const std::optional<std::string> version =
        a.predictor_version.empty() ? std::nullopt : std::optional<std::string>(a.predictor_version);
    done("predictor", a.predictor, "", ctx.registry.unregister_predictor(a.predictor, version));
    return;
  }
  if (!a.predictor_version.empty()) throw UsageError("--predictor-version needs --predictor NAME");
  if (!a.backend.empty()) {
    ctx.registry.unregister_module(ModuleKind::Backend, a.backend);
    done("backend", a.backend, "", 1);
  } else if (!a.kernel.empty()) {
    ctx.registry.unregister_module(ModuleKind::Kernel, a.kernel);
    done("kernel", a.kernel, "", 1);
  } else if (!a.op.empty()) {
    ctx.registry.unregister_module(ModuleKind::Operator, a.op[0], a.op[1]);
    done("operator", a.op[0], a.op[1], 1);
  } else if (!a.testcase.empty()) {
    ctx.registry.unregister_module(ModuleKind::TestCase, a.testcase[0], a.testcase[1]);
    done("testcase", a.testcase[0], a.testcase[1], 1);
  } else {
    throw UsageError("nothing to unregister: give one of --predictor, --backend, --operator, --testcase or --kernel "
                "(see nn-meter unregister --help)");
  }
}

}  // namespace

void add_register_commands(CLI::App& app, Context& ctx) {
  auto reg_args = std::make_shared<RegisterArgs>();
  CLI::App* reg = app.add_subcommand("register", "register customized module to nn-Meter");
  std::vector<CLI::Option*> reg_opts = {
      reg->add_option("--predictor", reg_args->predictor, "path to the meta file to register a customized predictor"),
      reg->add_option("--backend", reg_args->backend, "path to the meta file to register a customized backend"),
      reg->add_option("--operator", reg_args->op, "path to the meta file to register a customized operator"),
      reg->add_option("--testcase", reg_args->testcase, "path to the meta file to register a customized testcase"),
      reg->add_option("--kernel", reg_args->kernel, "path to the meta file to register a customized kernel")};
  for (auto* a : reg_opts)
    for (auto* b : reg_opts)
      if (a != b) a->excludes(b);
  reg->callback([&ctx, reg_args] { register_one(ctx, *reg_args); });

  auto un_args = std::make_shared<UnregisterArgs>();
  CLI::App* un = app.add_subcommand("unregister", "unregister customized module from nn-Meter");
  std::vector<CLI::Option*> un_opts = {
      un->add_option("--predictor", un_args->predictor, "name of the registered predictor"),
      un->add_option("--backend", un_args->backend, "name of the registered backend"),
      un->add_option("--operator", un_args->op, "name and implement of the registered operator")
          ->expected(2)
          ->type_name("NAME IMPLEMENT"),
      un->add_option("--testcase", un_args->testcase, "name and implement of the registered testcase")
          ->expected(2)
          ->type_name("NAME IMPLEMENT"),
      un->add_option("--kernel", un_args->kernel, "name of the registered kernel")};
  for (auto* a : un_opts)
    for (auto* b : un_opts)
      if (a != b) a->excludes(b);
  un->add_option("--predictor-version", un_args->predictor_version,
                 "version of the predictor to unregister (default: every version)");
  un->callback([&ctx, un_args] { unregister_one(ctx, *un_args); });
}

}  // namespace nnmeter::cli
