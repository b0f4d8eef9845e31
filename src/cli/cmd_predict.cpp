// nn-meter predict (lat_pred) / get_ir: model-level latency prediction and nn-Meter's IR json.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>

#include "cli/cli.h"
#include "cli/output.h"
#include "common/io.h"
#include "nnmeter/prediction.h"

namespace nnmeter::cli {

namespace {

const char* const kOnnxOnly =
    "this build reads ONNX models and nn-Meter IR json only: export the model to ONNX first (torch.onnx.export, "
    "tf2onnx) and pass --onnx";

struct PredictArgs {
  std::string predictor, version, onnx, ir, tensorflow;
  std::vector<std::string> torchvision, input_shapes;
};

struct GetIrArgs {
  std::string onnx, output, tensorflow;
  std::vector<std::string> input_shapes;
};

InputShapes parse_shapes(const std::vector<std::string>& flags) {
  InputShapes shapes;
  for (const auto& f : flags) {
    auto [name, dims] = parse_input_shape(f);
    if (!shapes.emplace(name, dims).second) throw Error("--input-shape given twice for '" + name + "'");
  }
  return shapes;
}

// A file, or the files of a folder ending in `suffix` (not recursive), sorted — nn-Meter's glob.
std::vector<fs::path> model_files(const fs::path& path, const std::string& suffix, const std::string& flag) {
  if (fs::is_regular_file(path)) return {path};
  if (!fs::is_directory(path)) throw Error(fmt::format("{} {}: no such file or folder", flag, path.string()));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(path))
    if (e.is_regular_file() && e.path().extension() == suffix) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw Error(fmt::format("{} {}: the folder has no *{} files", flag, path.string(), suffix));
  return files;
}

void log_breakdown(const ModelPrediction& p) {
  for (const auto& k : p.kernels) {
    const std::string features = fmt::format("[{}]", fmt::join(k.features, ", "));
    spdlog::debug("  {:<28} {:<18} {:>10.4f} ms  features {}{}", k.name,
                  k.predictor_kernel.empty() ? "-" : k.predictor_kernel, k.latency_ms, features,
                  k.note.empty() ? "" : "  (" + k.note + ")");
  }
  for (const auto& u : p.uncovered) spdlog::debug("  uncovered {} ({}): {}", u.node, u.type, u.reason);
  if (p.composition_factor != 1 || p.neighbour_factor != 1 || p.level != 1)
    spdlog::debug("  kernels {:.4f} ms ({:.4f} ms unscaled, {:g} scaled kernels) x composition {:.4f} (footprint {:.1f} MB) "
                  "x neighbours {:.4f} x level {:.4f}",
                  p.kernels_ms, p.unscaled_ms, p.scaled_kernels, p.composition_factor, p.footprint_mb, p.neighbour_factor,
                  p.level);
}

void predict(Context& ctx, const PredictArgs& a) {
  if (!a.tensorflow.empty() || !a.torchvision.empty()) throw Error(kOnnxOnly);
  if (a.predictor.empty()) throw UsageError("predict needs --predictor NAME (see nn-meter --list-predictors)");
  if (a.onnx.empty() == a.ir.empty()) throw UsageError("give exactly one of --onnx FILE_OR_DIR or --nn-meter-ir FILE_OR_DIR");
  const bool is_onnx = !a.onnx.empty();
  const auto files = is_onnx ? model_files(a.onnx, ".onnx", "--onnx") : model_files(a.ir, ".json", "--nn-meter-ir");
  const InputShapes shapes = parse_shapes(a.input_shapes);
  if (!is_onnx && !shapes.empty()) throw Error("--input-shape applies to --onnx models; an IR json already has static shapes");
  const LatencyPredictor predictor = LatencyPredictor::load(ctx.registry, a.predictor, a.version);

  // Never a made-up width: without held-out errors there is no interval, and the user is told why.
  if (!predictor.interval() && !ctx.json)
    print_line(fmt::format("no 90 % interval on these predictions: predictor {} has no errors on held-out families ({} "
                           "in its folder; a build with CALIBRATION_NETWORKS of two or more families writes it, or "
                           "nn-meter evaluate --leave-family-out --workspace WS)", predictor.name(), kGeneralizationFile));
  Json results = Json::object();
  size_t failed = 0;
  for (const auto& file : files) {
    const std::string name = file.filename().string();
    try {
      const ModelPrediction p = is_onnx ? predictor.predict_file(file, shapes)
                                        : predictor.predict_ir(ir_from_nnmeter_json(io::load_json_file(file), file.string()));
      if (ctx.json) {
        results[name] = p.to_json();
      } else {
        print_line(fmt::format("[RESULT] predict latency for {}: {} ms", name, p.latency_ms));
        if (p.interval)
          print_line(fmt::format("  90 % interval: {:.4g} to {:.4g} ms (the predictor's errors on {} networks of families "
                                 "held out)", p.latency_ms * p.interval->low, p.latency_ms * p.interval->high,
                                 p.interval->networks));
        log_breakdown(p);
      }
    } catch (const Error& e) {
      if (files.size() == 1) throw;
      ++failed;
      fmt::print(stderr, "(nn-Meter) {}\n", e.what());
    }
  }
  if (ctx.json) std::cout << json_text(results) << std::endl;
  if (failed > 0) throw Error(fmt::format("{} of {} models could not be predicted (see above)", failed, files.size()));
}

fs::path ir_output_path(const GetIrArgs& a) {
  if (a.output.empty()) {
    const fs::path model(a.onnx);
    return model.parent_path() / (model.stem().string() + "_onnx_ir.json");
  }
  fs::path out(a.output);
  if (out.extension() != ".json") out += ".json";
  return out;
}

void get_ir(Context& ctx, const GetIrArgs& a) {
  if (!a.tensorflow.empty()) throw Error(kOnnxOnly);
  if (a.onnx.empty()) throw UsageError("get_ir needs --onnx MODEL");
  const ModelIr ir = load_onnx_ir(a.onnx, parse_shapes(a.input_shapes));
  const fs::path out = fs::absolute(ir_output_path(a)).lexically_normal();
  io::save_json_file(out, ir_to_nnmeter_json(ir));
  if (ctx.json) {
    std::cout << json_text(Json{{"ir", out.string()}}) << std::endl;
  } else {
    print_line(fmt::format("The IR is saved in {}", out.string()));
  }
}

}  // namespace

void add_predict_commands(CLI::App& app, Context& ctx) {
  auto pa = std::make_shared<PredictArgs>();
  CLI::App* pred = app.add_subcommand("predict", "predict the latency of models on a device with a latency predictor");
  pred->alias("lat_pred");
  pred->add_option("--predictor", pa->predictor, "name of a registered predictor (nn-meter --list-predictors)");
  pred->add_option("--predictor-version", pa->version, "predictor version; default: the latest registered");
  pred->add_option("--onnx", pa->onnx, "an ONNX model, or a folder of *.onnx models");
  pred->add_option("--nn-meter-ir", pa->ir, "an nn-Meter IR json (nn-meter get_ir), or a folder of *.json");
  pred->add_option("--input-shape", pa->input_shapes, "NAME:1x3x224x224 for an input with dynamic dims; repeatable");
  pred->add_option("--tensorflow", pa->tensorflow, "not supported: export to ONNX first");
  pred->add_option("--torchvision", pa->torchvision, "not supported: export to ONNX first");
  pred->callback([&ctx, pa] { predict(ctx, *pa); });

  auto ga = std::make_shared<GetIrArgs>();
  CLI::App* ir = app.add_subcommand("get_ir", "convert an ONNX model into nn-Meter's IR json");
  ir->add_option("--onnx", ga->onnx, "the ONNX model");
  ir->add_option("-o,--output", ga->output, "output file; default <model stem>_onnx_ir.json next to the model");
  ir->add_option("--input-shape", ga->input_shapes, "NAME:1x3x224x224 for an input with dynamic dims; repeatable");
  ir->add_option("--tensorflow", ga->tensorflow, "not supported: export to ONNX first");
  ir->callback([&ctx, ga] { get_ir(ctx, *ga); });
}

}  // namespace nnmeter::cli
