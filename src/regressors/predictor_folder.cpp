// The predictor folder: versioned metadata + one XGBoost JSON model per kernel + a registry meta.yaml.
#include <xgboost/c_api.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/io.h"
#include "common/text.h"
#include "nnmeter/predictor_folder.h"
#include "regressors/model_cache.h"

namespace nnmeter {

namespace {

constexpr const char* kFormatName = "nn-meter-predictor";

// ISA flags worth recording: they decide which oneDNN/XNNPACK kernels run, hence the latencies.
bool notable_isa(const std::string& flag) {
  static const char* exact[] = {"sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "neon", "asimd", "asimdhp",
                                "asimddp", "sve", "sve2", "i8mm", "bf16"};
  for (const char* e : exact)
    if (flag == e) return true;
  return flag.rfind("avx512", 0) == 0 || flag.rfind("amx", 0) == 0 || flag.rfind("avx_vnni", 0) == 0;
}


void check_kernel_name(const std::string& kernel) {
  if (kernel.empty() || kernel.front() == '.' || kernel.find_first_of("/\\") != std::string::npos ||
      kernel == "predictor" || kernel == "fusion_rules")
    throw Error("'" + kernel + "' cannot be a kernel predictor name (it names the model file <kernel>.json)");
}

Json library_versions() {
  int major = 0, minor = 0, patch = 0;
  XGBoostVersion(&major, &minor, &patch);
  return Json{{"xgboost", std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch)},
              {"nn-meter", version()}};
}

std::string model_file_name(const std::string& kernel) { return kernel + ".json"; }

}  // namespace

DeviceInfo describe_device() {
  DeviceInfo d;
  d.logical_cores = std::thread::hardware_concurrency();
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::vector<std::string> flags;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    // x86 names the CPU in "model name"; many ARM kernels only give "Hardware" or "CPU part".
    if (d.cpu_model.empty() && (key == "model name" || key == "Hardware" || key == "Model")) d.cpu_model = value;
    if (flags.empty() && (key == "flags" || key == "Features")) {
      std::istringstream words(value);
      for (std::string f; words >> f;)
        if (notable_isa(f)) flags.push_back(f);
    }
  }
  d.isa = flags;
  if (d.cpu_model.empty()) d.cpu_model = "unknown";
  return d;
}

Json DeviceInfo::to_json() const {
  return Json{{"cpu_model", cpu_model}, {"logical_cores", logical_cores}, {"isa", isa}};
}

Json KernelPredictorMeta::to_json() const {
  return Json{{"model_file", model_file_name(kernel)},
              {"feature_names", feature_names},
              {"feature_count", feature_names.size()},
              {"target_transform", log_target ? "log" : "raw"},
              {"regressor", params.to_json()},
              {"metrics", metrics ? metrics->to_json() : Json()},
              {"sample_count", sample_count}};
}

KernelPredictorMeta KernelPredictorMeta::from_json(const std::string& kernel, const Json& j, const std::string& origin) {
  const std::string where = "kernel '" + kernel + "' in " + origin;
  if (!j.is_object()) throw Error(where + " is not a mapping");
  KernelPredictorMeta m;
  m.kernel = kernel;
  try {
    m.feature_names = j.at("feature_names").get<std::vector<std::string>>();
    if (j.at("feature_count").get<size_t>() != m.feature_names.size())
      throw Error(where + ": feature_count differs from the number of feature_names");
    const std::string transform = j.at("target_transform").get<std::string>();
    if (transform != "log" && transform != "raw") throw Error(where + ": target_transform must be log or raw");
    m.log_target = transform == "log";
    m.params = RegressorParams::from_json(j.at("regressor"), where);
    if (!j.at("metrics").is_null()) m.metrics = LatencyMetrics::from_json(j.at("metrics"));
    m.sample_count = j.at("sample_count").get<size_t>();
  } catch (const Json::exception& e) {
    throw Error(where + " is malformed (" + e.what() + ")");
  }
  return m;
}

Json PredictorMeta::to_json() const {
  Json kernels_json = Json::object();
  for (const auto& [name, k] : kernels) kernels_json[name] = k.to_json();
  Json out{{"format", kFormatName},
           {"format_version", format_version},
           {"name", info.name},
           {"version", info.version},
           {"category", info.category},
           {"backend", {{"name", info.backend}, {"config", info.backend_config}}},
           {"device", device.to_json()},
           {"libraries", libraries},
           {"fusion_rules", kFusionRulesFile},
           {"kernels", kernels_json}};
  if (!measurement_quality.is_null()) out["measurement_quality"] = measurement_quality;
  return out;
}

PredictorWriter::PredictorWriter(fs::path folder, PredictorInfo info) : folder_(std::move(folder)) {
  if (info.name.empty()) throw Error("a predictor needs a name");
  meta_.info = std::move(info);
  meta_.device = describe_device();
  meta_.libraries = library_versions();
}

void PredictorWriter::add_kernel(const KernelRegressor& model, KernelPredictorMeta meta) {
  check_kernel_name(meta.kernel);
  if (model.empty()) throw Error("kernel predictor '" + meta.kernel + "' has no trained model");
  if (meta.feature_names.empty()) meta.feature_names = model.feature_names();
  if (meta.feature_names != model.feature_names())
    throw Error("kernel predictor '" + meta.kernel + "': feature names given for the folder differ from those the " +
                "model was trained with (set KernelDataset::feature_names before training)");
  if (meta.params.log_target != model.log_target())
    throw Error("kernel predictor '" + meta.kernel + "': regressor params say log_target=" +
                (meta.params.log_target ? "true" : "false") + " but the model was trained otherwise");
  meta.log_target = model.log_target();
  const fs::path model_file = folder_ / model_file_name(meta.kernel);
  model.save(model_file);
  ModelCache::write(model, model_file);
  const std::string name = meta.kernel;
  meta_.kernels.insert_or_assign(name, std::move(meta));
}

fs::path PredictorWriter::finish() {
  if (meta_.kernels.empty()) throw Error("predictor folder " + folder_.string() + " would hold no kernel model");
  io::save_json_file(folder_ / kPredictorMetaFile, meta_.to_json());
  Json registry_meta = {{"name", meta_.info.name},
                        {"version", meta_.info.version},
                        {"category", meta_.info.category},
                        {"package_location", "."},  // the registry resolves it against meta.yaml's folder
                        {"kernel_predictors", Json::array()}};
  for (const auto& [name, _] : meta_.kernels) registry_meta["kernel_predictors"].push_back(name);
  const fs::path meta_yaml = folder_ / kRegistryMetaFile;
  // Written last: a meta.yaml exists only for a complete folder.
  io::write_file_atomic(meta_yaml, io::json_to_yaml(registry_meta));
  return meta_yaml;
}

fs::path save_predictor_folder(const fs::path& folder, const PredictorInfo& info,
                               const std::vector<KernelModelEntry>& kernels) {
  PredictorWriter writer(folder, info);
  for (const auto& k : kernels) {
    if (k.model == nullptr) throw Error("kernel predictor '" + k.meta.kernel + "' has no model");
    writer.add_kernel(*k.model, k.meta);
  }
  return writer.finish();
}

struct LoadedPredictor::Model {
  fs::path file;
  std::mutex mutex;  // guards `regressor` while the first use loads it
  std::optional<KernelRegressor> regressor;
};

LoadedPredictor::LoadedPredictor() = default;
LoadedPredictor::~LoadedPredictor() = default;
LoadedPredictor::LoadedPredictor(LoadedPredictor&&) noexcept = default;
LoadedPredictor& LoadedPredictor::operator=(LoadedPredictor&&) noexcept = default;

std::vector<std::string> LoadedPredictor::kernels() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : models_) out.push_back(name);
  return out;
}

namespace {

PredictorMeta parse_meta(const Json& j, const fs::path& file) {
  const std::string origin = file.string();
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormatName)
    throw Error(origin + " is not an nn-meter predictor description (format is not '" + kFormatName + "')");
  if (!j.contains("format_version") || !j["format_version"].is_number_integer())
    throw Error(origin + " has no integer format_version");
  PredictorMeta m;
  m.format_version = j["format_version"].get<int>();
  if (m.format_version != kPredictorFormatVersion)
    throw Error(origin + " has format_version " + std::to_string(m.format_version) + "; this nn-meter reads version " +
                std::to_string(kPredictorFormatVersion) + ": rebuild the predictor or use a matching nn-meter");
  try {
    m.info.name = j.at("name").get<std::string>();
    m.info.version = j.at("version").get<std::string>();
    m.info.category = j.value("category", "");
    m.info.backend = j.at("backend").at("name").get<std::string>();
    m.info.backend_config = j.at("backend").value("config", Json::object());
    const Json& dev = j.at("device");
    m.device.cpu_model = dev.value("cpu_model", "");
    m.device.logical_cores = dev.value("logical_cores", 0u);
    m.device.isa = dev.value("isa", std::vector<std::string>{});
    m.libraries = j.value("libraries", Json::object());
    m.measurement_quality = j.value("measurement_quality", Json());
    if (!m.measurement_quality.is_null() && !m.measurement_quality.is_object())
      throw Error(origin + ": measurement_quality must be an object");
    if (!j.at("kernels").is_object() || j.at("kernels").empty()) throw Error(origin + " lists no kernels");
    for (const auto& [name, k] : j.at("kernels").items()) {
      check_kernel_name(name);
      m.kernels.emplace(name, KernelPredictorMeta::from_json(name, k, origin));
    }
  } catch (const Json::exception& e) {
    throw Error(origin + " is malformed (" + e.what() + ")");
  }
  return m;
}

void check_layout(const KernelRegressor& model, const KernelPredictorMeta& k, const fs::path& model_file) {
  if (model.feature_count() != k.feature_names.size())
    throw Error("model file " + model_file.string() + " takes " + std::to_string(model.feature_count()) +
                " features but predictor.json declares " + std::to_string(k.feature_names.size()) +
                ": the folder is inconsistent, rebuild the predictor");
  if (model.feature_names() != k.feature_names)
    throw Error("model file " + model_file.string() + " has a feature layout different from predictor.json's: rebuild the predictor");
  if (model.log_target() != k.log_target)
    throw Error("model file " + model_file.string() + " has a target transform different from predictor.json's: rebuild the predictor");
}

}  // namespace

std::vector<double> LoadedPredictor::predict(const std::string& kernel, const FeatureMatrix& rows) const {
  const auto it = models_.find(kernel);
  if (it == models_.end()) {
    std::string known;
    for (const auto& [name, _] : models_) known += (known.empty() ? "" : ", ") + name;
    throw Error("predictor " + meta_.info.name + " has no model for kernel '" + kernel + "' (it has: " + known + ")");
  }
  Model& m = *it->second;
  const std::lock_guard lock(m.mutex);
  if (!m.regressor) {
    KernelRegressor model = ModelCache::load(m.file);
    check_layout(model, meta_.kernels.at(kernel), m.file);
    m.regressor = std::move(model);
  }
  // A kernel's features only grow at their end (kernels/feature_parsers.cpp), so a model trained before an
  // extra feature existed reads the leading ones it was trained on.
  const size_t width = m.regressor->feature_count();
  if (rows.empty() || rows.front().size() <= width) return m.regressor->predict(rows);
  FeatureMatrix leading;
  leading.reserve(rows.size());
  for (const auto& row : rows)
    leading.emplace_back(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(std::min(width, row.size())));
  return m.regressor->predict(leading);
}

LoadedPredictor load_predictor_folder(const fs::path& folder) {
  if (!fs::exists(folder)) throw Error("predictor folder " + folder.string() + " does not exist");
  if (!fs::is_directory(folder)) throw Error("predictor folder " + folder.string() + " is not a folder");
  const fs::path meta_file = folder / kPredictorMetaFile;
  if (!fs::exists(meta_file))
    throw Error("predictor folder " + folder.string() + " has no " + kPredictorMetaFile + ": not a built predictor");
  LoadedPredictor p;
  p.folder_ = folder;
  p.meta_ = parse_meta(io::load_json_file(meta_file), meta_file);
  for (const auto& [name, k] : p.meta_.kernels) {
    auto model = std::make_unique<LoadedPredictor::Model>();
    model->file = folder / model_file_name(name);
    if (!fs::exists(model->file)) throw Error("model file " + model->file.string() + " does not exist");
    p.models_.emplace(name, std::move(model));
  }
  return p;
}

}  // namespace nnmeter
