// The native half of the Python package: a thin binding of libnnmeter's public API. Structured data
// (kernel data, configs, results) crosses as JSON text and becomes Python objects in the pure-Python layer
// (nn_meter/), so this file holds no logic of its own; the hot path (predicting models and kernel rows)
// returns numbers directly and runs without the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "nnmeter/backend.h"
#include "nnmeter/builder.h"
#include "nnmeter/evaluate.h"
#include "nnmeter/kernel_data.h"
#include "nnmeter/networks.h"
#include "nnmeter/prediction.h"
#include "nnmeter/registry.h"
#include "nnmeter/sampling.h"
#include "nnmeter/workspace.h"

namespace py = pybind11;
using namespace nnmeter;

namespace {

Registry registry_at(const std::string& home) { return home.empty() ? Registry() : Registry(home); }

EvaluateSettings evaluate_settings(const std::string& predictor, const std::string& version, const std::string& backend,
                                   const std::string& config_json, const std::vector<fs::path>& onnx,
                                   const fs::path& work_dir, double timeout_s, uint64_t seed, bool progress) {
  EvaluateSettings s;
  s.predictor = predictor;
  s.predictor_version = version;
  s.backend = backend;
  s.backend_config = Json::parse(config_json);
  s.onnx = onnx;
  s.work_dir = work_dir;
  s.timeout_s = timeout_s;
  s.seed = seed;
  s.progress = progress;
  return s;
}

// One model handed to the predictor: a file path, serialized ONNX bytes, or nn-Meter IR json text. It keeps
// the Python bytes object alive and reads it in place (bytes are immutable, so no GIL is needed to read
// them): a model's weights are megabytes, and copying them cost as much as the prediction.
struct ModelSource {
  std::string kind;  // "file" | "bytes" | "ir"
  py::bytes payload;
  std::string origin;
  std::string_view view;  // payload's buffer
};

ModelIr ir_of(const ModelSource& m, const InputShapes& shapes) {
  if (m.kind == "file") return load_onnx_ir(fs::path(std::string(m.view)), shapes);
  if (m.kind == "bytes") return load_onnx_ir_bytes(m.view, m.origin, shapes);
  if (m.kind == "ir") {
    Json j;
    try {
      j = Json::parse(m.view);
    } catch (const Json::exception& e) {
      throw Error(m.origin + " is not nn-Meter IR json: " + e.what());
    }
    return ir_from_nnmeter_json(j, m.origin);
  }
  throw Error("unknown model source kind '" + m.kind + "'");
}

ModelPrediction predict_source(const LatencyPredictor& p, const ModelSource& m, const InputShapes& shapes) {
  return p.predict_ir(ir_of(m, shapes));
}

// Predicts every model on `threads` threads (the predictor is immutable and safe to share); the first
// failure, in model order, is rethrown once all threads are done.
std::vector<double> predict_all(const LatencyPredictor& p, const std::vector<ModelSource>& models, const InputShapes& shapes,
                                unsigned threads) {
  std::vector<double> out(models.size(), 0.0);
  std::vector<std::exception_ptr> errors(models.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < models.size(); i = next++) {
      try {
        out[i] = predict_source(p, models[i], shapes).latency_ms;
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(models.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  return out;
}

FeatureMatrix rows_from_array(const py::array_t<double, py::array::c_style | py::array::forcecast>& a) {
  if (a.ndim() != 2) throw Error("kernel features must be a 2-D array (one row per kernel config)");
  FeatureMatrix rows(static_cast<size_t>(a.shape(0)), std::vector<double>(static_cast<size_t>(a.shape(1))));
  auto r = a.unchecked<2>();
  for (py::ssize_t i = 0; i < a.shape(0); ++i)
    for (py::ssize_t j = 0; j < a.shape(1); ++j) rows[i][j] = r(i, j);
  return rows;
}

py::array_t<double> to_array(const std::vector<double>& v) {
  py::array_t<double> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

ModuleKind module_kind(const std::string& kind) {
  for (ModuleKind k : {ModuleKind::Backend, ModuleKind::Kernel, ModuleKind::Operator, ModuleKind::TestCase})
    if (kind == section_name(k) || kind == singular_name(k)) return k;
  throw Error("unknown module kind '" + kind + "': backends, kernels, operators or testcases");
}

Builder make_builder(const std::string& workspace, const std::string& backend, const std::string& home, uint64_t seed,
                     bool progress) {
  BuilderSettings settings;
  settings.backend = backend;
  settings.seed = seed;
  settings.progress = progress;
  return Builder(Workspace::load(workspace), registry_at(home), settings);
}

std::vector<KernelConfig> configs_from(const std::string& json_text) {
  std::vector<KernelConfig> out;
  if (json_text.empty()) return out;
  const Json j = Json::parse(json_text);
  if (!j.is_array()) throw Error("configs must be a list of config dicts");
  for (const auto& c : j) out.push_back(c);
  return out;
}

Json build_result_json(const PredictorBuildResult& r) {
  Json j = {{"model_file", r.model_file.string()},
            {"acc10", r.acc10},
            {"error_configs", r.error_configs},
            {"samples", r.train.sample_count},
            {"dropped", r.train.dropped_count}};
  if (r.train.metrics) j["metrics"] = r.train.metrics->to_json();
  return j;
}

}  // namespace

PYBIND11_MODULE(_nnmeter, m) {
  m.doc() = "nn-meter's C++ core (libnnmeter); use the nn_meter package, not this module directly";
  static py::exception<Error> error_type(m, "NNMeterError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      error_type(e.what());
    } catch (const Json::exception& e) {
      PyErr_SetString(PyExc_ValueError, (std::string("malformed JSON: ") + e.what()).c_str());
    }
  });
  m.def("version", [] { return std::string(nnmeter::version()); });

  // The core logs as the CLI does, "(nn-Meter) " lines, on stderr so that a program's own stdout stays its own.
  auto logger = std::make_shared<spdlog::logger>("nn-Meter", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("(nn-Meter) %v");
  logger->set_level(spdlog::level::info);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  m.def(
      "set_log_level",
      [](const std::string& level) {
        const auto l = spdlog::level::from_str(level);
        if (l == spdlog::level::off && level != "off")
          throw Error("unknown log level '" + level + "': debug, info, warning, error or off");
        spdlog::set_level(l);
      },
      py::arg("level"));

  py::class_<ModelSource>(m, "ModelSource")
      .def(py::init([](std::string kind, py::bytes payload, std::string origin) {
             char* data = nullptr;
             Py_ssize_t size = 0;
             if (PyBytes_AsStringAndSize(payload.ptr(), &data, &size) != 0) throw py::error_already_set();
             return ModelSource{std::move(kind), std::move(payload), std::move(origin),
                                std::string_view(data, static_cast<size_t>(size))};
           }),
           py::arg("kind"), py::arg("payload"), py::arg("origin"));

  py::class_<LatencyPredictor>(m, "LatencyPredictor")
      .def_static(
          "load",
          [](const std::string& name, const std::string& version, const std::string& home) {
            return LatencyPredictor::load(registry_at(home), name, version);
          },
          py::arg("name"), py::arg("version") = "", py::arg("home") = "")
      .def_static(
          "from_folder", [](const fs::path& folder, const std::string& home) {
            return LatencyPredictor::from_folder(folder, registry_at(home));
          },
          py::arg("folder"), py::arg("home") = "")
      .def_property_readonly("name", &LatencyPredictor::name)
      .def_property_readonly("kernels", [](const LatencyPredictor& p) { return p.kernel_predictors().kernels(); })
      .def_property_readonly("folder", [](const LatencyPredictor& p) { return p.kernel_predictors().folder().string(); })
      .def(
          "predict",
          [](const LatencyPredictor& p, const ModelSource& model, const InputShapes& shapes) {
            py::gil_scoped_release unlocked;
            return predict_source(p, model, shapes).latency_ms;
          },
          py::arg("model"), py::arg("shapes") = InputShapes{})
      .def(
          "predict_detail",
          [](const LatencyPredictor& p, const ModelSource& model, const InputShapes& shapes) {
            std::string text;
            {
              py::gil_scoped_release unlocked;
              text = predict_source(p, model, shapes).to_json().dump();
            }
            return text;
          },
          py::arg("model"), py::arg("shapes") = InputShapes{})
      .def(
          "predict_many",
          [](const LatencyPredictor& p, const std::vector<ModelSource>& models, const InputShapes& shapes, unsigned threads) {
            py::gil_scoped_release unlocked;
            return predict_all(p, models, shapes, threads);
          },
          py::arg("models"), py::arg("shapes") = InputShapes{}, py::arg("threads") = 1)
      // For bench/python_bench.py: the same prediction timed in C++, `calls` times in a row, seconds per
      // call, so that the Python overhead is a ratio measured inside one process.
      .def(
          "_time_native_predict",
          [](const LatencyPredictor& p, const ModelSource& model, int calls) {
            py::gil_scoped_release unlocked;
            std::vector<double> seconds;
            for (int i = 0; i < calls; ++i) {
              const auto t0 = std::chrono::steady_clock::now();
              predict_source(p, model, {});
              seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
            return seconds;
          },
          py::arg("model"), py::arg("calls"))
      .def(
          "predict_kernels",
          [](const LatencyPredictor& p, const std::string& kernel,
             const py::array_t<double, py::array::c_style | py::array::forcecast>& rows) {
            FeatureMatrix x = rows_from_array(rows);
            std::vector<double> y;
            {
              py::gil_scoped_release unlocked;
              y = p.kernel_predictors().predict(kernel, x);
            }
            return to_array(y);
          },
          py::arg("kernel"), py::arg("rows"));

  py::class_<KernelRegressor>(m, "KernelRegressor")
      .def_static("load", &KernelRegressor::load, py::arg("file"))
      .def_property_readonly("feature_names", &KernelRegressor::feature_names)
      .def_property_readonly("feature_count", &KernelRegressor::feature_count)
      .def("save", &KernelRegressor::save, py::arg("file"))
      .def(
          "predict",
          [](const KernelRegressor& r, const py::array_t<double, py::array::c_style | py::array::forcecast>& rows) {
            FeatureMatrix x = rows_from_array(rows);
            if (!x.empty() && x.front().size() != r.feature_count())
              throw Error("rows have " + std::to_string(x.front().size()) + " features, the model takes " +
                          std::to_string(r.feature_count()));
            std::vector<double> y;
            {
              py::gil_scoped_release unlocked;
              y = r.predict(x);
            }
            return to_array(y);
          },
          py::arg("rows"));

  m.def(
      "model_ir_json",
      [](const ModelSource& model, const InputShapes& shapes) { return ir_to_nnmeter_json(ir_of(model, shapes)).dump(); },
      py::arg("model"), py::arg("shapes") = InputShapes{});
  m.def(
      "detect_kernels",
      [](const ModelSource& model, const InputShapes& shapes, const std::string& rules_json) {
        const FusionRules rules = FusionRules::from_json(Json::parse(rules_json), "fusion_rules");
        Json out = Json::array();
        for (const auto& k : detect_kernels(ir_of(model, shapes), rules)) {
          Json j = {{"name", k.name}, {"op", k.op}, {"kind", to_string(k.kind)}, {"kernel", k.kernel},
                    {"config", k.config}, {"nodes", k.nodes}};
          if (!k.reason.empty()) j["reason"] = k.reason;
          out.push_back(std::move(j));
        }
        return out.dump();
      },
      py::arg("model"), py::arg("shapes"), py::arg("rules_json"));
  m.def(
      "latency_metrics",
      [](const std::vector<double>& y_pred, const std::vector<double>& y_true) {
        return latency_metrics(y_pred, y_true).to_json().dump();
      },
      py::arg("y_pred"), py::arg("y_true"));
  // The reference networks (nn-meter networks).
  m.def("network_sets", [] {
    Json out = Json::array();
    for (const auto& s : network_sets()) out.push_back(s.to_json());
    return out.dump();
  });
  m.def("network_architectures", [] { return network_architectures(); });
  m.def(
      "network_onnx",
      [](const std::string& arch, int64_t resolution, double width) {
        return py::bytes(network_onnx({arch, resolution, width}));
      },
      py::arg("arch"), py::arg("resolution"), py::arg("width"));
  m.def(
      "export_network_set",
      [](const std::string& name, const fs::path& dir, bool progress) {
        const NetworkSet& set = find_network_set(name);
        py::gil_scoped_release release;
        return export_network_set(set, dir, progress).files;
      },
      py::arg("name"), py::arg("dir"), py::arg("progress") = false);
  m.def("network_sample_families", [] { return network_sample_families(); });
  m.def(
      "export_network_sample",
      [](const std::string& family, int64_t count, uint32_t seed, const fs::path& dir, bool progress) {
        const NetworkSet set = sample_network_set(family, count, seed);
        NetworkExport e;
        {
          py::gil_scoped_release release;
          e = export_network_set(set, dir, progress);
        }
        Json files = Json::array(), skipped = Json::array();
        for (const auto& f : e.files) files.push_back(f.string());
        for (const auto& [file, why] : e.skipped) skipped.push_back({{"file", file}, {"error", why}});
        return Json{{"files", files}, {"skipped", skipped}, {"set", set.to_json()}}.dump();
      },
      py::arg("family"), py::arg("count"), py::arg("seed"), py::arg("dir"), py::arg("progress") = false);
  m.def(
      "list_predictors",
      [](const std::string& home) {
        Json out = Json::array();
        for (const auto& p : registry_at(home).list_predictors())
          out.push_back({{"name", p.name},
                         {"version", p.version},
                         {"category", p.category},
                         {"package_location", p.package_location.string()},
                         {"kernel_predictors", p.kernel_predictors}});
        return out.dump();
      },
      py::arg("home") = "");
  m.def(
      "register_predictor", [](const fs::path& meta, const std::string& home) { return registry_at(home).register_predictor(meta).name; },
      py::arg("meta_file"), py::arg("home") = "");
  m.def(
      "register_module",
      [](const std::string& kind, const fs::path& meta, const std::string& home) {
        return registry_at(home).register_module(module_kind(kind), meta).name;
      },
      py::arg("kind"), py::arg("meta_file"), py::arg("home") = "");
  m.def(
      "unregister_module",
      [](const std::string& kind, const std::string& name, const std::string& implement, const std::string& home) {
        registry_at(home).unregister_module(module_kind(kind), name, implement);
      },
      py::arg("kind"), py::arg("name"), py::arg("implement") = "", py::arg("home") = "");
  m.def(
      "list_backends",
      [](const std::string& home) {
        std::vector<std::pair<std::string, bool>> out;
        for (const auto& b : list_backends(registry_at(home))) out.emplace_back(b.name, b.customized);
        return out;
      },
      py::arg("home") = "");

  // Workspaces and backends.
  m.def("load_workspace", [](const fs::path& root) {
    const Workspace ws = Workspace::load(root);
    return Json{{"root", fs::absolute(ws.root).string()},
                {"backend", ws.backend_config},
                {"predbuild", ws.predictorbuild_config},
                {"ruletest", ws.ruletest_config}}
        .dump();
  });
  m.def(
      "resolve_backend_config",
      [](const std::string& backend, const std::string& config_json, const std::string& where, const std::string& home) {
        return resolve_backend_config(find_backend(registry_at(home), backend).params, Json::parse(config_json), where).dump();
      },
      py::arg("backend"), py::arg("config"), py::arg("where"), py::arg("home") = "");
  m.def(
      "test_connection",
      [](const std::string& backend, const std::string& config_json, const std::string& home) {
        return connect_backend(registry_at(home), backend, Json::parse(config_json))->test_connection();
      },
      py::arg("backend"), py::arg("config"), py::arg("home") = "");
  m.def(
      "convert_model",
      [](const std::string& backend, const std::string& config_json, const fs::path& onnx, const fs::path& work_dir,
         const std::string& home) {
        std::vector<std::string> files;
        for (const auto& f : connect_backend(registry_at(home), backend, Json::parse(config_json))
                                 ->to_backend(onnx, work_dir, onnx.stem().string()))
          files.push_back(f.string());
        return files;
      },
      py::arg("backend"), py::arg("config"), py::arg("onnx"), py::arg("work_dir"), py::arg("home") = "");

  // Kernel data.
  m.def("collect_kernel_data", [](const std::vector<fs::path>& configs, const std::vector<fs::path>& latencies) {
    return collect_kernel_data(configs, latencies).dump();
  });
  m.def(
      "kernel_data_table",
      [](const std::string& kernel, const std::string& kernel_data_json, const std::string& label,
         const std::string& save_path, const std::string& home) {
        const KernelSuite suite = find_kernel(registry_at(home), kernel).create(Json::object());
        const KernelDataTable t = get_data_by_profiled_results(kernel, *suite.parser, Json::parse(kernel_data_json), label);
        if (!save_path.empty()) save_kernel_data_csv(t, save_path);
        return Json{{"columns", t.columns}, {"ids", t.ids}, {"features", t.features}, {"labels", t.labels}}.dump();
      },
      py::arg("kernel"), py::arg("kernel_data"), py::arg("label") = "latency", py::arg("save_path") = "",
      py::arg("home") = "");
  m.def(
      "feature_parser",
      [](const std::string& kernel, const std::string& home) {
        const KernelSuite suite = find_kernel(registry_at(home), kernel).create(Json::object());
        return suite.parser->needed_config();
      },
      py::arg("kernel"), py::arg("home") = "");
  m.def(
      "features_of",
      [](const std::string& kernel, const std::string& config_json, const std::string& home) {
        const KernelSuite suite = find_kernel(registry_at(home), kernel).create(Json::object());
        return suite.parser->get_feature_by_config(Json::parse(config_json));
      },
      py::arg("kernel"), py::arg("config"), py::arg("home") = "");

  // The builder: every call binds a workspace (builder_config.init) and a backend name.
  m.def(
      "generate_config_sample",
      [](const fs::path& workspace, const std::string& kernel, int sample_num, const std::string& mark,
         const std::string& mode, const std::string& configs_json, uint64_t seed, const std::string& home) {
        const Registry registry = registry_at(home);
        const SampleResult r = generate_config_sample(Workspace::load(workspace), registry, find_kernel(registry, kernel).name,
                                                      sample_num, mark, parse_sampling_mode(mode), configs_from(configs_json), seed);
        return Json{{"results_file", r.results_file.string()}, {"entries", r.new_entries}, {"sampled", r.sampled},
                    {"duplicates", r.duplicates}}
            .dump();
      },
      py::arg("workspace"), py::arg("kernel"), py::arg("sample_num"), py::arg("mark"), py::arg("mode"),
      py::arg("configs"), py::arg("seed"), py::arg("home") = "");

  // Long calls release the GIL: profiling waits on worker processes for minutes.
  m.def(
      "sample_and_profile",
      [](const std::string& workspace, const std::string& backend, const std::string& kernel, int sample_num,
         const std::string& mode, const std::string& configs_json, const std::string& mark, uint64_t seed, bool progress,
         const std::string& home) {
        const std::vector<KernelConfig> configs = configs_from(configs_json);
        py::gil_scoped_release unlocked;
        Builder b = make_builder(workspace, backend, home, seed, progress);
        return b.sample_and_profile_kernel_data(kernel, sample_num, parse_sampling_mode(mode), configs, mark).dump();
      },
      py::arg("workspace"), py::arg("backend"), py::arg("kernel"), py::arg("sample_num"), py::arg("mode"),
      py::arg("configs"), py::arg("mark"), py::arg("seed"), py::arg("progress"), py::arg("home") = "");
  m.def(
      "profile_kernel_data",
      [](const std::string& workspace, const std::string& backend, const std::string& kernel, const std::string& entries_json,
         uint64_t seed, bool progress, const std::string& home) {
        const Json entries = Json::parse(entries_json);
        py::gil_scoped_release unlocked;
        Builder b = make_builder(workspace, backend, home, seed, progress);
        return b.profile_kernel_data(kernel, entries).dump();
      },
      py::arg("workspace"), py::arg("backend"), py::arg("kernel"), py::arg("entries"), py::arg("seed"),
      py::arg("progress"), py::arg("home") = "");
  m.def(
      "build_predictor_by_data",
      [](const std::string& workspace, const std::string& backend, const std::string& kernel, const std::string& data_json,
         double error_threshold, const std::string& mark, const std::string& home) {
        const Json data = Json::parse(data_json);
        py::gil_scoped_release unlocked;
        Builder b = make_builder(workspace, backend, home, 1, false);
        return build_result_json(b.build_predictor_by_data(kernel, data, error_threshold, mark)).dump();
      },
      py::arg("workspace"), py::arg("backend"), py::arg("kernel"), py::arg("kernel_data"), py::arg("error_threshold"),
      py::arg("mark"), py::arg("home") = "");
  m.def(
      "build_predictor_for_kernel",
      [](const std::string& workspace, const std::string& backend, const std::string& kernel, int init_sample_num,
         int finegrained_sample_num, int iteration, double error_threshold, const std::string& mark, uint64_t seed,
         bool progress, const std::string& home) {
        py::gil_scoped_release unlocked;
        Builder b = make_builder(workspace, backend, home, seed, progress);
        auto [result, data] =
            b.build_predictor_for_kernel(kernel, init_sample_num, finegrained_sample_num, iteration, error_threshold, mark);
        return Json{{"result", build_result_json(result)}, {"data", data}}.dump();
      },
      py::arg("workspace"), py::arg("backend"), py::arg("kernel"), py::arg("init_sample_num"),
      py::arg("finegrained_sample_num"), py::arg("iteration"), py::arg("error_threshold"), py::arg("mark"),
      py::arg("seed"), py::arg("progress"), py::arg("home") = "");
  m.def(
      "build_adaptive_predictor_by_data",
      [](const std::string& workspace, const std::string& backend, const std::string& kernel, const std::string& data_json,
         int finegrained_sample_num, double error_threshold, const std::string& mark, uint64_t seed, bool progress,
         const std::string& home) {
        const Json data = Json::parse(data_json);
        py::gil_scoped_release unlocked;
        Builder b = make_builder(workspace, backend, home, seed, progress);
        auto [result, merged] = b.build_adaptive_predictor_by_data(kernel, data, finegrained_sample_num, error_threshold, mark);
        return Json{{"result", build_result_json(result)}, {"data", merged}}.dump();
      },
      py::arg("workspace"), py::arg("backend"), py::arg("kernel"), py::arg("kernel_data"),
      py::arg("finegrained_sample_num"), py::arg("error_threshold"), py::arg("mark"), py::arg("seed"),
      py::arg("progress"), py::arg("home") = "");
  // evaluate returns the report as JSON text and its HTML page, which the Python layer writes where asked.
  m.def(
      "evaluate",
      [](const std::string& predictor, const std::string& version, const std::string& backend, const std::string& config,
         const std::vector<fs::path>& onnx, const fs::path& work_dir, double timeout_s, uint64_t seed, bool progress,
         bool kernels, std::optional<int> kernel_repeats, const std::vector<fs::path>& calibrate_on, const std::string& home) {
        EvaluateSettings s = evaluate_settings(predictor, version, backend, config, onnx, work_dir, timeout_s, seed, progress);
        s.kernels = kernels;
        s.kernel_repeats = kernel_repeats;
        s.calibrate_on = calibrate_on;
        py::gil_scoped_release unlocked;
        const EvaluateReport report = evaluate(registry_at(home), s);
        return std::make_pair(report.to_json().dump(), report.to_html());
      },
      py::arg("predictor"), py::arg("version"), py::arg("backend"), py::arg("config"), py::arg("onnx"),
      py::arg("work_dir"), py::arg("timeout"), py::arg("seed"), py::arg("progress"), py::arg("kernels"),
      py::arg("kernel_repeats"), py::arg("calibrate_on"), py::arg("home") = "");
  m.def(
      "calibrate",
      [](const std::string& predictor, const std::string& version, const std::string& backend, const std::string& config,
         const std::vector<fs::path>& onnx, const fs::path& work_dir, double timeout_s, uint64_t seed, bool progress,
         bool write, const std::string& home) {
        const EvaluateSettings s = evaluate_settings(predictor, version, backend, config, onnx, work_dir, timeout_s, seed, progress);
        py::gil_scoped_release unlocked;
        return calibrate(registry_at(home), s, write).to_json().dump();
      },
      py::arg("predictor"), py::arg("version"), py::arg("backend"), py::arg("config"), py::arg("onnx"),
      py::arg("work_dir"), py::arg("timeout"), py::arg("seed"), py::arg("progress"), py::arg("write"),
      py::arg("home") = "");
  m.def(
      "leave_family_out",
      [](const fs::path& workspace, const fs::path& predictor, double timeout_s, uint64_t seed, bool progress,
         const std::string& home) {
        py::gil_scoped_release unlocked;
        BuilderSettings settings;
        settings.timeout_s = timeout_s;
        settings.seed = seed;
        settings.progress = progress;
        return leave_family_out(registry_at(home), workspace, predictor, settings).to_json().dump();
      },
      py::arg("workspace"), py::arg("predictor"), py::arg("timeout"), py::arg("seed"), py::arg("progress"),
      py::arg("home") = "");
  m.def(
      "build_latency_predictor",
      [](const std::string& workspace, const std::string& backend, const std::vector<std::string>& kernels,
         const std::string& name, const std::string& folder, uint64_t seed, bool progress, bool ruletest,
         bool remeasure_noisy, const std::string& home) {
        py::gil_scoped_release unlocked;
        BuilderSettings settings;
        settings.backend = backend;
        settings.seed = seed;
        settings.progress = progress;
        settings.ruletest = ruletest;
        settings.remeasure_noisy = remeasure_noisy;
        Builder b(Workspace::load(workspace), registry_at(home), settings);
        const auto summaries = b.build_latency_predictor(kernels, name, folder);
        Json out = {{"table", format_accuracy_table(summaries)}, {"kernels", Json::array()}};
        for (const auto& s : summaries)
          out["kernels"].push_back({{"kernel", s.kernel}, {"samples", s.samples}, {"failed", s.failed},
                                    {"metrics", s.metrics.to_json()}, {"acc10_per_iteration", s.acc10_per_iteration}});
        return out.dump();
      },
      py::arg("workspace"), py::arg("backend"), py::arg("kernels"), py::arg("name"), py::arg("folder"),
      py::arg("seed"), py::arg("progress"), py::arg("ruletest"), py::arg("remeasure_noisy"), py::arg("home") = "");
}
