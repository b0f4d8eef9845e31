// generate_config_sample: sample configs, drop duplicates, write one ONNX model per config and the
// kernel's results JSON. Only the KernelSuite interfaces are used, so plugin kernels take the same path.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "common/io.h"
#include "kernels/config_check.h"
#include "nnmeter/registry.h"
#include "nnmeter/sampling.h"
#include "nnmeter/workspace.h"

namespace nnmeter {

namespace {

void check_mark(const std::string& mark) {
  const bool ok = !mark.empty() && mark.size() <= 64 && std::all_of(mark.begin(), mark.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
  if (!ok) throw Error("mark '" + mark + "' must be 1-64 characters of letters, digits, '_' or '-' (it is part of file names)");
}

int batch_size_of(const Json& predictorbuild_config) {
  const int batch = PredictorBuildConfig::from_json(predictorbuild_config).batch_size;
  kernels::check::check_batch(batch);
  return batch;
}

// Sampler output must be a list of JSON objects; anything else (a plugin bug) is reported, not written.
void check_sampled(const std::string& kernel, const std::vector<KernelConfig>& configs) {
  for (size_t i = 0; i < configs.size(); ++i)
    if (!configs[i].is_object())
      throw Error("the sampler of kernel '" + kernel + "' returned a non-object config #" + std::to_string(i) + ": " +
                  configs[i].dump());
}

struct Existing {
  std::set<std::string> configs;  // canonical dumps (nlohmann objects are key-sorted)
  std::set<std::string> ids;
};

// Every config already sampled for `kernel` in the workspace: results/<kernel>_<any mark>.json.
Existing existing_samples(const fs::path& results_dir, const std::string& kernel) {
  Existing out;
  std::error_code ec;
  if (!fs::is_directory(results_dir, ec)) return out;
  const std::string prefix = kernel + "_";
  for (const auto& entry : fs::directory_iterator(results_dir)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || entry.path().extension() != ".json" || name.rfind(prefix, 0) != 0) continue;
    Json data = io::load_json_file(entry.path());
    if (!data.is_object() || !data.contains(kernel) || !data[kernel].is_object()) continue;
    for (const auto& [id, item] : data[kernel].items()) {
      out.ids.insert(id);
      if (item.is_object() && item.contains("config")) out.configs.insert(item["config"].dump());
    }
  }
  return out;
}

// A run killed between writing its models and its results file leaves models no results file names, and
// possibly a temporary file of the model being written. Called under the sampling lock, so no other run
// is writing: every file of `kernel` no results file of any kernel references is such a leftover.
// (Any kernel: "a_b_prior_X.onnx" of kernel a_b also starts with "a_".)
void remove_leftovers(const fs::path& kernels_dir, const fs::path& results_dir, const std::string& kernel) {
  std::error_code ec;
  if (!fs::is_directory(kernels_dir, ec)) return;
  std::set<std::string> referenced;
  if (fs::is_directory(results_dir, ec))
    for (const auto& entry : fs::directory_iterator(results_dir)) {
      if (!entry.is_regular_file() || entry.path().extension() != ".json") continue;
      Json data;
      try {
        data = io::load_json_file(entry.path());
      } catch (const Error&) {
        return;  // cannot tell what it references: keep everything
      }
      if (!data.is_object()) continue;
      for (const auto& [name, items] : data.items())
        if (items.is_object())
          for (const auto& [id, item] : items.items())
            if (item.is_object() && item.contains("model") && item["model"].is_string())
              referenced.insert(fs::path(item["model"].get<std::string>()).filename().string());
    }
  size_t removed = 0;
  for (const auto& entry : fs::directory_iterator(kernels_dir)) {
    const std::string name = entry.path().filename().string();
    const bool model = name.rfind(kernel + "_", 0) == 0 && entry.path().extension() == ".onnx";
    const bool temp = name.rfind("." + kernel + "_", 0) == 0 && name.find(".onnx.tmp.") != std::string::npos;
    if ((model && !referenced.count(name)) || temp) removed += fs::remove(entry.path(), ec) ? 1 : 0;
  }
  if (removed > 0) spdlog::info("Removed {} leftover files of an interrupted sampling run of {}", removed, kernel);
}

// Removes the models written so far if the call fails, so a failed run leaves no partial state.
class WrittenFiles {
 public:
  ~WrittenFiles() {
    if (committed_) return;
    for (const auto& p : paths_) {
      std::error_code ec;
      fs::remove(p, ec);
    }
  }
  void add(const fs::path& p) { paths_.push_back(p); }
  void commit() { committed_ = true; }

 private:
  std::vector<fs::path> paths_;
  bool committed_ = false;
};

}  // namespace

SamplingMode parse_sampling_mode(const std::string& text) {
  if (text == "prior") return SamplingMode::Prior;
  if (text == "finegrained") return SamplingMode::Finegrained;
  throw Error("unknown sampling mode '" + text + "'; use 'prior' or 'finegrained'");
}

std::string random_sample_id(uint64_t& state) {
  std::string id;
  for (int i = 0; i < 6; ++i) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    id.push_back(static_cast<char>('A' + (z >> 32) % 26));
  }
  return id;
}

SampleResult generate_config_sample(const Workspace& workspace, const Registry& registry, const std::string& kernel_type,
                                    int sample_num, const std::string& mark, SamplingMode mode,
                                    const std::vector<KernelConfig>& configs, uint64_t seed) {
  KernelInfo info = find_kernel(registry, kernel_type);
  KernelSuite suite = info.create(workspace.predictorbuild_config);
  if (suite.name.empty()) suite.name = info.name;
  return generate_config_sample(workspace, suite, sample_num, mark, mode, configs, seed);
}

SampleResult generate_config_sample(const Workspace& workspace, KernelSuite& suite, int sample_num,
                                    const std::string& mark, SamplingMode mode, const std::vector<KernelConfig>& configs,
                                    uint64_t seed, const std::set<std::string>& excluded) {
  const std::string& kernel = suite.name;
  if (sample_num <= 0 || sample_num > kMaxSampleNum)
    throw Error("sample_num must be a positive integer of at most " + std::to_string(kMaxSampleNum) +
                " (--num, INIT_SAMPLE_NUM or FINEGRAINED_SAMPLE_NUM), got " + std::to_string(sample_num));
  check_mark(mark);
  if (mode == SamplingMode::Finegrained && configs.empty())
    throw Error("fine-grained sampling of '" + kernel + "' needs at least one config to sample around");
  // 1. Sample; write_config_samples validates everything before touching the workspace.
  std::vector<KernelConfig> sampled = mode == SamplingMode::Prior
                                          ? suite.sampler->prior_config_sampling(sample_num, seed)
                                          : suite.sampler->finegrained_config_sampling(sample_num, configs, seed);
  return write_config_samples(workspace, suite, sampled, mark, seed, excluded);
}

SampleResult write_config_samples(const Workspace& workspace, KernelSuite& suite,
                                  const std::vector<KernelConfig>& sampled, const std::string& mark, uint64_t seed,
                                  const std::set<std::string>& excluded) {
  const std::string& kernel = suite.name;
  check_mark(mark);
  if (sampled.size() > static_cast<size_t>(kMaxSampleNum))
    throw Error(fmt::format("{} configs of '{}' to write; at most {} fit one sampling call", sampled.size(), kernel,
                            kMaxSampleNum));
  const int batch = batch_size_of(workspace.predictorbuild_config);
  check_sampled(kernel, sampled);
  std::vector<std::vector<Shape>> shapes;
  shapes.reserve(sampled.size());
  for (const auto& c : sampled) shapes.push_back(suite.kernel->input_tensor_shape(c));

  SampleResult result;
  result.sampled = static_cast<int>(sampled.size());
  const fs::path build_dir = workspace.predictor_build_dir();
  const fs::path kernels_dir = build_dir / "kernels";
  const fs::path results_dir = build_dir / "results";
  result.results_file = results_dir / (kernel + "_" + mark + ".json");

  // 2. Under the workspace lock: dedup against what is there, write models, then the results file.
  fs::create_directories(build_dir);
  io::FileLock lock(build_dir / ".sampling.lock");
  remove_leftovers(kernels_dir, results_dir, kernel);
  Existing existing = existing_samples(results_dir, kernel);
  Json results = fs::exists(result.results_file) ? io::load_json_file(result.results_file) : Json::object();
  if (!results.is_object() || (results.contains(kernel) && !results[kernel].is_object()))
    throw Error("results file " + result.results_file.string() + " is not a kernel data file ({kernel: {ID: {...}}})");
  Json& entries = results[kernel];
  if (entries.is_null()) entries = Json::object();

  const fs::path root = fs::absolute(workspace.root).lexically_normal();
  uint64_t id_state = seed ^ 0x6E6E2D4D65746572ULL;  // IDs use their own stream, independent of the sampler
  WrittenFiles written;
  for (size_t i = 0; i < sampled.size(); ++i) {
    if (excluded.count(sampled[i].dump())) {
      ++result.excluded;
      continue;
    }
    if (!existing.configs.insert(sampled[i].dump()).second) {
      ++result.duplicates;
      continue;
    }
    std::string id;
    fs::path model;
    do {
      id = random_sample_id(id_state);
      model = root / "predictor_build" / "kernels" / (kernel + "_" + mark + "_" + id + ".onnx");
    } while (existing.ids.count(id) != 0 || fs::exists(model));
    existing.ids.insert(id);
    std::string bytes;
    try {
      bytes = suite.kernel->build_onnx(sampled[i], batch);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error("kernel '" + kernel + "' failed to build a model for " + sampled[i].dump() + ": " + e.what());
    }
    written.add(model);
    io::write_file_atomic(model, bytes);
    Json entry = {{"model", model.string()}, {"shapes", shapes[i]}, {"config", sampled[i]}};
    result.new_entries[id] = entry;
    entries[id] = std::move(entry);
  }
  if (result.new_entries.empty()) {
    spdlog::warn("all {} sampled configs of {} are already in the workspace{}; nothing written", result.sampled, kernel,
                 result.excluded > 0 ? " or excluded" : "");
    return result;
  }
  io::save_json_file(result.results_file, results);
  written.commit();
  return result;
}

std::vector<KernelConfig> load_configs_file(const fs::path& path, const std::string& kernel_type) {
  const std::string ext = path.extension().string();
  Json data = ext == ".yaml" || ext == ".yml" ? io::load_yaml_file(path) : io::load_json_file(path);
  std::vector<KernelConfig> out;
  if (data.is_array()) {
    for (const auto& c : data) out.push_back(c);
  } else if (data.is_object() && data.contains(kernel_type) && data[kernel_type].is_object()) {
    for (const auto& [id, item] : data[kernel_type].items()) {
      if (!item.is_object() || !item.contains("config"))
        throw Error("configs file " + path.string() + ": entry " + id + " has no 'config'");
      out.push_back(item["config"]);
    }
  } else {
    throw Error("configs file " + path.string() + " must hold a list of configs or kernel data for '" + kernel_type + "'");
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i].is_object())
      throw Error("configs file " + path.string() + ": config #" + std::to_string(i) + " is not an object: " + out[i].dump());
  return out;
}

}  // namespace nnmeter
