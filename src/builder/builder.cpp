#include "nnmeter/builder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "common/hash.h"
#include "common/io.h"
#include "nnmeter/backend.h"
#include "nnmeter/evaluate.h"
#include "nnmeter/kernel_data.h"
#include "nnmeter/networks.h"
#include "nnmeter/prediction.h"
#include "nnmeter/profiling.h"
#include "nnmeter/registry.h"
#include "nnmeter/ruletest.h"

namespace nnmeter {

namespace {

// A composition term from fewer networks says nothing about families it was not fitted on.
constexpr size_t kMinCalibrationNetworks = 3;

constexpr const char* kModelsMark = "models";  // the SAMPLE_MODELS networks' layers

std::string with_mark(const std::string& base, const std::string& mark) { return mark.empty() ? base : base + "_" + mark; }

KernelData merge(const KernelData& a, const KernelData& b) {
  KernelData out = a;
  for (const auto& [id, entry] : b.items()) out[id] = entry;
  return out;
}

// Split-half repeatability of the samples whose repeats were kept.
RepeatAgreement kernel_data_repeatability(const KernelData& data, const MeasurementProtocol& protocol) {
  std::vector<std::vector<double>> repeats;
  for (const auto& [id, entry] : data.items())
    if (entry.contains("repeats_ms") && entry["repeats_ms"].is_array())
      repeats.push_back(entry["repeats_ms"].get<std::vector<double>>());
  return split_half_agreement(repeats, protocol.statistic);
}

}  // namespace

KernelData load_kernel_data(const std::string& kernel_type, const std::vector<fs::path>& config_files,
                            const std::vector<fs::path>& latency_files) {
  if (config_files.empty()) throw Error("kernel data needs at least one config json file");
  Json configs = Json::object();
  for (const auto& file : config_files) {
    const Json doc = io::load_json_file(file);
    if (!doc.is_object() || !doc.contains(kernel_type) || !doc[kernel_type].is_object())
      throw Error(file.string() + " holds no configs of kernel '" + kernel_type + "' ({\"" + kernel_type +
                  "\": {ID: {model, shapes, config}}} expected)");
    for (const auto& [id, entry] : doc[kernel_type].items()) configs[id] = entry;
  }
  for (const auto& file : latency_files) {
    const Json doc = io::load_json_file(file);
    if (!doc.is_object() || !doc.contains(kernel_type) || !doc[kernel_type].is_object())
      throw Error(file.string() + " holds no latencies of kernel '" + kernel_type + "'");
    for (const auto& [id, entry] : doc[kernel_type].items()) {
      if (!configs.contains(id))
        throw Error(fmt::format("{}: ID {} has a latency but no config in the config files given", file.string(), id));
      if (!entry.is_object() || !entry.contains("latency"))
        throw Error(fmt::format("{}: ID {} has no \"latency\"", file.string(), id));
      if (!parse_latency_value(entry["latency"]))
        throw Error(fmt::format("{}: ID {} has an unparsable latency {}", file.string(), id, entry["latency"].dump()));
      configs[id]["latency"] = entry["latency"];
    }
  }
  return configs;
}

Builder::Builder(Workspace workspace, Registry registry, BuilderSettings settings)
    : workspace_(std::move(workspace)), registry_(std::move(registry)), settings_(std::move(settings)) {
  if (settings_.backend.empty()) throw Error("the builder needs a backend name");
  // An unknown backend or a bad backend_config.yaml value fails now, not after sampling.
  resolve_backend_config(find_backend(registry_, settings_.backend).params, workspace_.backend_config,
                         (workspace_.configs_dir() / "backend_config.yaml").string());
  if (!settings_.regressor) settings_.regressor = workspace_.build_config().regressor;
  if (settings_.sharding.active()) {
    settings_.sharding.root = workspace_.shards_dir();
    settings_.sharding.probes = drift_probe_jobs();
    // Each shard's repeats were measured on another device, against probes of its own: one host's probe series
    // cannot level them (profiling/profile_models.cpp). Said once, so the key is not taken for applied.
    if (MeasurementProtocol::from_config(workspace_.backend_config).normalize_probe_levels)
      spdlog::warn("PROBE_LEVELS normalize does not apply to a sharded build: its labels keep the levels they were "
                   "measured at; SHARD_LEVELS normalize puts the shards on one level (docs/sharding.md)");
  }
}

RegressorParams Builder::regressor_params(const std::string& kernel_type) const {
  return settings_.regressor == RegressorMode::gbdt ? default_gbdt_params()
                                                    : default_regressor_params(kernel_type, settings_.backend);
}

KernelSuite& Builder::suite(const std::string& kernel_type) {
  auto it = suites_.find(kernel_type);
  if (it == suites_.end())
    it = suites_.emplace(kernel_type, find_kernel(registry_, kernel_type).create(workspace_.predictorbuild_config)).first;
  return it->second;
}

uint64_t Builder::seed_for(const std::string& kernel_type, const std::string& mark) const {
  return settings_.seed ^ fnv1a(kernel_type + "/" + mark);
}

ProfileBatch Builder::profile_batch(const std::string& kernel_type, const Json& entries) const {
  ProfileBatch batch;
  batch.journal = results_dir() / ("profile_journal_" + kernel_type + ".jsonl");
  batch.error_log = results_dir() / "profile_error.log";
  find_kernel(registry_, kernel_type);  // its name becomes part of file names below
  for (const auto& [id, entry] : entries.items()) {
    if (!entry.is_object() || !entry.contains("model"))
      throw Error(fmt::format("kernel data entry {} of '{}' has no model path", id, kernel_type));
    ProfileJob job{id, entry["model"].get<std::string>(), {}};
    if (entry.contains("converted_model") && entry["converted_model"].is_array())
      for (const auto& f : entry["converted_model"]) job.converted_files.emplace_back(f.get<std::string>());
    batch.jobs.push_back(std::move(job));
  }
  return batch;
}

ProfilerOptions Builder::profiler_options(const std::string& label) const {
  ProfilerOptions options = ProfilerOptions::of(settings_.backend, workspace_.backend_config, registry_,
                                                workspace_.predictor_build_dir() / "converted", label)
                                .run_as(settings_);
  options.seed = settings_.seed ^ fnv1a(label);
  options.remeasure_unsettled = settings_.remeasure_noisy;
  if (MeasurementProtocol::from_config(workspace_.backend_config).probe_every > 0)
    options.probes = ProfilerOptions::Probes{drift_probe_jobs(), results_dir() / "drift_probes.jsonl"};
  return options;
}

std::vector<ProfileJob> Builder::drift_probe_jobs() const {
  // Two fixed kernels every backend runs: a compute-bound conv and a memory-bound depthwise conv, so a
  // drift that hits one kind of work and not the other shows as well.
  static const std::vector<std::pair<std::string, KernelConfig>> probes = {
      {"conv-bn-relu", {{"HW", 28}, {"CIN", 64}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}}},
      {"dwconv-bn-relu", {{"HW", 56}, {"CIN", 96}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}}}};
  std::vector<ProfileJob> jobs;
  for (const auto& [kernel, config] : probes) {
    const fs::path model = workspace_.predictor_build_dir() / "probes" / ("probe_" + kernel + ".onnx");
    if (!fs::exists(model)) {
      const KernelSuite suite = find_kernel(registry_, kernel).create(workspace_.predictorbuild_config);
      io::write_file_atomic(model, suite.kernel->build_onnx(config, 1));
    }
    jobs.push_back(ProfileJob{"probe_" + kernel, model, {}});
  }
  return jobs;
}

KernelData Builder::profile_kernel_data(const std::string& kernel_type, const Json& entries) {
  const auto outcomes = profile_batches({profile_batch(kernel_type, entries)}, profiler_options(kernel_type)).front();
  return record_profiled(kernel_type, entries, outcomes);
}

std::map<std::string, KernelData> Builder::profile_kernels(const std::map<std::string, Json>& entries_by_kernel,
                                                           const std::string& label) {
  std::vector<ProfileBatch> batches;
  for (const auto& [kernel, entries] : entries_by_kernel) batches.push_back(profile_batch(kernel, entries));
  const auto outcomes = profile_batches(batches, profiler_options(label));
  std::map<std::string, KernelData> out;
  size_t i = 0;
  for (const auto& [kernel, entries] : entries_by_kernel) out[kernel] = record_profiled(kernel, entries, outcomes[i++]);
  return out;
}

KernelData Builder::record_profiled(const std::string& kernel_type, const Json& entries,
                                    const std::map<std::string, ProfileOutcome>& outcomes) {
  const fs::path profiled_file = results_dir() / ("profiled_" + kernel_type + ".json");
  Json doc = fs::exists(profiled_file) ? io::load_json_file(profiled_file) : Json::object();
  if (!doc.is_object()) throw Error(profiled_file.string() + " is not a kernel latency file: move it away");
  const bool detail = workspace_.build_config().detail;
  KernelData profiled = Json::object();
  size_t failed = 0, settled = 0, capped = 0;
  for (const auto& [id, outcome] : outcomes) {
    if (!outcome.ok) {
      ++failed;
      continue;
    }
    settled += outcome.stopped == "settled";
    capped += outcome.stopped == "max_repeats";
    Json entry = detail ? entries[id] : Json::object();
    entry["latency"] = outcome.latency.str();
    // The repeats travel with the label (an extra field; nn-Meter's readers ignore it): as measured, or divided by
    // the probes' level with PROBE_LEVELS normalize (the journal keeps them as measured).
    entry["repeats_ms"] = outcome.repeats_ms;
    if (!outcome.stopped.empty()) entry["repeats_stopped"] = outcome.stopped;  // adaptive repeats: settled or not
    doc[kernel_type][id] = entry;
    profiled[id] = entries[id];
    profiled[id]["latency"] = entry["latency"];
    profiled[id]["repeats_ms"] = entry["repeats_ms"];
  }
  io::save_json_file(profiled_file, doc);
  failed_profiles_[kernel_type] += failed;
  if (failed > 0) spdlog::info("{}: {} of {} models failed to profile (see {})", kernel_type, failed, outcomes.size(),
                               (results_dir() / "profile_error.log").string());
  if (settled + capped > 0)
    spdlog::info("{}: the repeats of {} samples settled; {} reached the cap without settling, labelled with its statistic",
                 kernel_type, settled, capped);
  if (!outcomes.empty() && failed == outcomes.size())
    throw Error(fmt::format("all {} models of '{}' failed to profile: see {}", failed, kernel_type,
                            (results_dir() / "profile_error.log").string()));
  return profiled;
}

std::optional<Json> Builder::earlier_entries(const std::string& kernel_type, const std::string& mark) const {
  // A rerun after an interruption continues the configs a step sampled before (the journal then skips the
  // ones already profiled) instead of sampling again: the same seed would only yield duplicates.
  const fs::path earlier = results_dir() / (kernel_type + "_" + mark + ".json");
  if (!fs::exists(earlier)) return std::nullopt;
  const Json doc = io::load_json_file(earlier);
  if (!doc.is_object() || !doc.contains(kernel_type) || !doc[kernel_type].is_object() || doc[kernel_type].empty())
    return std::nullopt;
  spdlog::info("{}: continuing the {} configs sampled earlier in {}", kernel_type, doc[kernel_type].size(), earlier.string());
  return doc[kernel_type];
}

Json Builder::sample_entries(const std::string& kernel_type, int sample_num, SamplingMode mode,
                             const std::vector<KernelConfig>& configs, const std::string& mark) {
  if (auto earlier = earlier_entries(kernel_type, mark)) return std::move(*earlier);
  const SampleResult r = generate_config_sample(workspace_, suite(kernel_type), sample_num, mark, mode, configs,
                                                seed_for(kernel_type, mark), sealed_[kernel_type]);
  if (r.excluded > 0)
    spdlog::info("{}: {} of the {} configs sampled are layers of the sealed test split and were left out", kernel_type,
                 r.excluded, r.sampled);
  return r.new_entries;
}

std::vector<fs::path> Builder::network_files(const std::string& key, const std::vector<fs::path>& entries) const {
  std::set<std::string> sets;
  for (const auto& s : network_sets()) sets.insert(s.name);
  std::vector<fs::path> files;
  for (const fs::path& given : entries) {
    if (given == kSealedTestSet)
      throw Error(fmt::format("predictorbuild_config.yaml: {} cannot list the {} set: no build trains on the sealed test "
                              "split, so that it scores predictors on networks they never saw (nn-meter evaluate --onnx)",
                              key, kSealedTestSet));
    // A builtin set or a sample by name: its networks, written once into the build folder (a rerun finds them).
    std::optional<NetworkSet> set;
    try {
      set = parse_network_sample(given.string());
    } catch (const Error& e) {
      throw Error(fmt::format("predictorbuild_config.yaml: {}: {}", key, e.what()));
    }
    if (!set && sets.count(given.string())) set = find_network_set(given.string());
    if (set) {
      const NetworkExport e = export_network_set(*set, workspace_.predictor_build_dir() / "networks" / set->name);
      for (const auto& [file, why] : e.skipped) spdlog::warn("{}: skipped {}: {}", key, file, why);
      files.insert(files.end(), e.files.begin(), e.files.end());
      continue;
    }
    const fs::path path = given.is_absolute() ? given : workspace_.root / given;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::directory_iterator(path))
        if (entry.is_regular_file() && entry.path().extension() == ".onnx") found.push_back(entry.path());
      if (found.empty())
        throw Error(fmt::format("predictorbuild_config.yaml: {} folder {} holds no .onnx file", key, path.string()));
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(path, ec)) {
      files.push_back(path);
    } else {
      throw Error(fmt::format("predictorbuild_config.yaml: {} entry {} is neither a network set (nn-meter networks list), "
                              "a sample (sample:FAMILY:COUNT:SEED) nor a file or folder (relative paths start at the "
                              "workspace folder {})",
                              key, given.string(), workspace_.root.string()));
    }
  }
  return files;
}

std::map<std::string, Json> Builder::model_sample_entries(const std::vector<std::string>& kernels,
                                                          const std::vector<ModelIr>& models, const FusionRules& rules) {
  std::map<std::string, Json> out;
  std::vector<std::string> todo;
  for (const auto& kernel : kernels) {
    if (auto earlier = earlier_entries(kernel, kModelsMark)) out[kernel] = std::move(*earlier);
    else todo.push_back(kernel);
  }
  std::map<std::string, std::vector<KernelConfig>> configs;
  std::map<std::string, std::set<std::string>> seen;
  std::map<std::string, size_t> unbuildable;
  for (const ModelIr& ir : todo.empty() ? std::vector<ModelIr>{} : models)
    for (const DetectedKernel& k : detect_kernels(ir, rules)) {
      if (k.kind != KernelKind::compute) continue;
      // The sample goes to the kernel whose predictor will predict the layer (a lone conv: conv-bn-relu's),
      // chosen among all kernels built: one whose samples a rerun continues is not replaced by a stand-in. A
      // grouped conv's config is the whole layer's, a sample of a grouped conv kernel only.
      std::string kernel;
      for (const std::string& candidate : stand_in_kernels(k.kernel))
        if (is_grouped_conv(candidate) == is_grouped_conv(k.kernel) &&
            std::find(kernels.begin(), kernels.end(), candidate) != kernels.end()) {
          kernel = candidate;
          break;
        }
      if (std::find(todo.begin(), todo.end(), kernel) == todo.end()) continue;
      KernelConfig config = stand_in_config(k.kernel, kernel, k.config);
      if (!seen[kernel].insert(config.dump()).second) continue;
      try {
        suite(kernel).kernel->input_tensor_shape(config);
      } catch (const Error& e) {
        spdlog::debug("{}: {} of {} is not a config the kernel builds: {}", kernel, k.name, ir.origin, e.what());
        ++unbuildable[kernel];
        continue;
      }
      configs[kernel].push_back(std::move(config));
    }
  for (const auto& kernel : todo) {
    if (configs[kernel].empty()) continue;
    const SampleResult r = write_config_samples(workspace_, suite(kernel), configs[kernel], kModelsMark,
                                                seed_for(kernel, kModelsMark), sealed_[kernel]);
    spdlog::info("{}: {} samples are layers of the {} SAMPLE_MODELS networks ({} distinct, {} already sampled{}{})",
                 kernel, r.new_entries.size(), models.size(), configs[kernel].size(), r.duplicates,
                 unbuildable[kernel] > 0 ? fmt::format(", {} the kernel cannot build", unbuildable[kernel]) : "",
                 r.excluded > 0 ? fmt::format(", {} layers of the sealed test split left out", r.excluded) : "");
    out[kernel] = r.new_entries;
  }
  return out;
}

void Builder::seal_test_split(const std::vector<std::string>& kernels, const FusionRules& rules) {
  const auto built = [&](const std::string& k) { return std::find(kernels.begin(), kernels.end(), k) != kernels.end(); };
  size_t layers = 0;
  for (const NetworkSpec& spec : find_network_set(kSealedTestSet).networks) {
    // Without weights: a few MB per network, where VGG's and AlexNet's weights take hundreds.
    const ModelIr ir = load_onnx_ir_bytes(network_onnx(spec, false), spec.file_name());
    for (const DetectedKernel& k : detect_kernels(ir, rules)) {
      if (k.kind != KernelKind::compute && k.kind != KernelKind::elementwise) continue;
      // Every kernel that may predict the layer (its stand-ins too) leaves it out, not only the first one built.
      const bool ew = k.kind == KernelKind::elementwise;
      for (const std::string& candidate : ew ? elementwise_kernels(k.binary) : stand_in_kernels(k.kernel))
        if (built(candidate) && sealed_[candidate].insert(stand_in_config(k.kernel, candidate, k.config).dump()).second)
          ++layers;
    }
  }
  spdlog::debug("sealed test split: {} layer configs of the kernels built are never sampled", layers);
}

KernelData Builder::sample_and_profile_kernel_data(const std::string& kernel_type, int sample_num, SamplingMode mode,
                                                   const std::vector<KernelConfig>& configs, const std::string& mark) {
  return profile_kernel_data(kernel_type, sample_entries(kernel_type, sample_num, mode, configs, mark));
}

PredictorBuildResult Builder::build_predictor_by_data(const std::string& kernel_type, const KernelData& kernel_data,
                                                      double error_threshold, const std::string& mark) {
  KernelSuite& s = suite(kernel_type);
  const KernelDataTable table = get_data_by_profiled_results(kernel_type, *s.parser, Json{{kernel_type, kernel_data}});
  KernelDataset data;
  data.features = table.features;
  data.labels = table.labels;
  for (const auto& id : table.ids) data.configs.push_back(kernel_data.at(id).value("config", Json::object()));
  if (data.features.empty()) throw Error("no profiled samples of '" + kernel_type + "' to train on");
  data.feature_names = feature_names_for(*s.parser, data.features.front().size());
  const RegressorParams params = regressor_params(kernel_type);

  PredictorBuildResult out;
  out.train = train_kernel_predictor(data, params, error_threshold, TrainMode::split, kernel_type);
  out.acc10 = out.train.metrics ? out.train.metrics->acc10 : 0.0;
  out.error_configs = out.train.error_configs;
  out.model_file = results_dir() / "predictors" / (kernel_type + "_" + mark + ".json");
  out.train.model.save(out.model_file);
  write_test_result_csv(results_dir() / "collection" / ("TestResult_" + kernel_type + "_" + mark + ".csv"), data, out.train);
  if (out.train.metrics) {
    const LatencyMetrics& m = *out.train.metrics;
    spdlog::info("{} ({}): {} samples, rmse {:.4f} ms, rmspe {:.2f} %, 5%/10%/15% accuracy {:.1f}/{:.1f}/{:.1f} %",
                 kernel_type, mark, out.train.sample_count, m.rmse, m.rmspe, 100 * m.acc5, 100 * m.acc10, 100 * m.acc15);
  }
  return out;
}

std::pair<PredictorBuildResult, KernelData> Builder::build_initial_predictor_by_data(const std::string& kernel_type,
                                                                                     int init_sample_num,
                                                                                     double error_threshold,
                                                                                     const std::string& mark) {
  const std::string m = with_mark("prior", mark);
  KernelData data = sample_and_profile_kernel_data(kernel_type, init_sample_num, SamplingMode::Prior, {}, m);
  return {build_predictor_by_data(kernel_type, data, error_threshold, m), data};
}

std::pair<PredictorBuildResult, KernelData> Builder::build_adaptive_predictor_by_data(const std::string& kernel_type,
                                                                                      const KernelData& kernel_data,
                                                                                      int finegrained_sample_num,
                                                                                      double error_threshold,
                                                                                      const std::string& mark) {
  const std::string m = with_mark("finegrained", mark);
  PredictorBuildResult current = build_predictor_by_data(kernel_type, kernel_data, error_threshold, m);
  if (current.error_configs.empty()) return {std::move(current), kernel_data};
  const KernelData fresh = sample_and_profile_kernel_data(kernel_type, finegrained_sample_num, SamplingMode::Finegrained,
                                                          current.error_configs, m);
  KernelData merged = merge(kernel_data, fresh);
  return {build_predictor_by_data(kernel_type, merged, error_threshold, m), merged};
}

std::pair<PredictorBuildResult, KernelData> Builder::build_predictor_for_kernel(
    const std::string& kernel_type, int init_sample_num, int finegrained_sample_num, int iteration, double error_threshold,
    const std::string& mark, KernelBuildSummary* summary) {
  if (init_sample_num <= 0 || finegrained_sample_num <= 0 || iteration <= 0)
    throw Error(fmt::format("'{}': init_sample_num, finegrained_sample_num and iteration must be positive", kernel_type));
  auto [result, data] = build_initial_predictor_by_data(kernel_type, init_sample_num, error_threshold, mark);
  std::vector<double> acc10s = {result.acc10};
  spdlog::info("{}: iteration 1: acc10 {:.4f}, error_configs number: {}", kernel_type, result.acc10,
               result.error_configs.size());
  for (int i = 1; i < iteration && !result.error_configs.empty(); ++i) {
    const std::string m = with_mark("finegrained" + std::to_string(i), mark);
    const KernelData fresh = sample_and_profile_kernel_data(kernel_type, finegrained_sample_num, SamplingMode::Finegrained,
                                                            result.error_configs, m);
    data = merge(data, fresh);
    result = build_predictor_by_data(kernel_type, data, error_threshold, m);
    acc10s.push_back(result.acc10);
    spdlog::info("{}: iteration {}: acc10 {:.4f}, error_configs number: {}", kernel_type, i + 1, result.acc10,
                 result.error_configs.size());
  }
  if (summary != nullptr) {
    summary->kernel = kernel_type;
    summary->samples = result.train.sample_count;
    summary->failed = failed_profiles_[kernel_type];
    summary->metrics = result.train.metrics.value_or(LatencyMetrics{});
    summary->acc10_per_iteration = acc10s;
  }
  return {std::move(result), std::move(data)};
}

std::vector<KernelBuildSummary> Builder::build_latency_predictor(const std::vector<std::string>& kernels,
                                                                 const std::string& name, const fs::path& folder) {
  const PredictorBuildConfig build = workspace_.build_config();
  std::vector<std::string> todo = kernels;
  if (todo.empty())
    for (const auto& [kernel, settings] : build.kernels) todo.push_back(kernel);
  if (todo.empty()) throw Error("predictorbuild_config.yaml lists no KERNELS to build");
  for (const auto& kernel : todo) find_kernel(registry_, kernel);  // every name valid before any work starts
  // The predictor folder carries the backend's fusion rules; a bad ruletest_config fails now, not after training.
  std::optional<RuleTester> rule_tester;
  if (settings_.ruletest)
    rule_tester.emplace(workspace_, registry_,
                        RuleTestSettings{settings_.backend, {}, settings_.timeout_s, settings_.worker_executable,
                                         settings_.progress, settings_.sharding});

  PredictorInfo info;
  info.name = name.empty() ? settings_.backend + "_predictor" : name;
  info.backend = settings_.backend;
  info.backend_config = resolve_backend_config(find_backend(registry_, settings_.backend).params,
                                               workspace_.backend_config, "backend_config.yaml");
  const fs::path predictor_folder = folder.empty() ? workspace_.predictor_build_dir() / "predictor" : folder;
  PredictorWriter writer(predictor_folder, info);
  // Every phase (prior sampling, each fine-grained round) samples all kernels first and profiles them in
  // one shuffled order, so that slow drift of the device over the build spreads over every kernel instead
  // of shifting the kernels profiled late; then each kernel is trained on its own.
  struct KernelState {
    KernelBuildSettings settings;
    KernelData data = Json::object();
    PredictorBuildResult result;
    std::vector<double> acc10s;
  };
  std::map<std::string, KernelState> state;
  // SAMPLE_MODELS are read before any work, so a missing or malformed network fails the build at once.
  std::vector<ModelIr> sample_models;
  for (const auto& file : network_files("SAMPLE_MODELS", build.sample_models)) sample_models.push_back(load_onnx_ir(file));
  // So are the calibration networks: a build does not measure for an hour and then find one unreadable.
  const std::vector<fs::path> calibration = network_files("CALIBRATION_NETWORKS", build.calibration_networks);
  if (!calibration.empty() && calibration.size() < kMinCalibrationNetworks)
    throw Error(fmt::format("predictorbuild_config.yaml: CALIBRATION_NETWORKS names {} network{}; the composition term "
                            "needs at least {} (of more than one family and size), e.g. the set calibration",
                            calibration.size(), calibration.size() == 1 ? "" : "s", kMinCalibrationNetworks));
  for (const auto& file : calibration) (void)load_onnx_ir(file);
  // The rules come first: SAMPLE_MODELS' layers and the sealed test split's are found as prediction will find them.
  // Without the rule test (--no-ruletest) nothing fuses: each op of a layer is sampled on its own.
  std::optional<RuleTestResult> rules;
  if (rule_tester) rules = rule_tester->run();
  const FusionRules fusion = rules ? FusionRules::from_json(rules->rules, rules->rules_file.string()) : FusionRules{};
  seal_test_split(todo, fusion);
  std::map<std::string, Json> entries;
  for (const auto& kernel : todo) {
    state[kernel].settings = build.kernel(kernel);
    entries[kernel] = sample_entries(kernel, state[kernel].settings.init_sample_num, SamplingMode::Prior, {}, "prior");
  }
  if (!sample_models.empty())
    for (auto& [kernel, more] : model_sample_entries(todo, sample_models, fusion)) entries[kernel].update(more);
  for (int iteration = 1; !entries.empty(); ++iteration) {
    const std::string mark = iteration == 1 ? "prior" : "finegrained" + std::to_string(iteration - 1);
    const auto profiled = profile_kernels(entries, iteration == 1 ? "prior samples" : "fine-grained round " + std::to_string(iteration - 1));
    for (const auto& [kernel, fresh] : profiled) {
      KernelState& k = state[kernel];
      k.data = merge(k.data, fresh);
      k.result = build_predictor_by_data(kernel, k.data, k.settings.error_threshold, mark);
      k.acc10s.push_back(k.result.acc10);
      spdlog::info("{}: iteration {}: acc10 {:.4f}, error_configs number: {}", kernel, iteration, k.result.acc10,
                   k.result.error_configs.size());
    }
    entries.clear();
    for (auto& [kernel, k] : state)
      if (iteration < k.settings.iteration && !k.result.error_configs.empty())
        entries[kernel] = sample_entries(kernel, k.settings.finegrained_sample_num, SamplingMode::Finegrained,
                                         k.result.error_configs, "finegrained" + std::to_string(iteration));
  }

  const std::vector<DriftSeries> drift_series = read_drift(results_dir() / "drift_probes.jsonl");
  const bool levels_normalized =
      MeasurementProtocol::from_config(workspace_.backend_config).normalize_probe_levels && !drift_series.empty() &&
      !settings_.sharding.active();
  if (const std::string drift = describe_drift(drift_series); !drift.empty()) {
    spdlog::info("Drift probes over the build (the last three measurements against the first three, medians){}:",
                 levels_normalized ? "; every label is divided by their level when it was measured (PROBE_LEVELS normalize)"
                     : "");
    for (size_t start = 0; start < drift.size();) {
      const size_t end = drift.find('\n', start);
      spdlog::info("  {}", drift.substr(start, end - start));
      start = end == std::string::npos ? drift.size() : end + 1;
    }
  }

  std::vector<KernelBuildSummary> summaries;
  for (const auto& kernel : todo) {
    const KernelBuildSettings& s = state[kernel].settings;
    const PredictorBuildResult& result = state[kernel].result;
    const KernelData& data = state[kernel].data;
    KernelBuildSummary summary;
    summary.kernel = kernel;
    summary.samples = result.train.sample_count;
    summary.failed = failed_profiles_[kernel];
    summary.metrics = result.train.metrics.value_or(LatencyMetrics{});
    summary.acc10_per_iteration = state[kernel].acc10s;
    summary.repeatability = kernel_data_repeatability(data, MeasurementProtocol::from_config(workspace_.backend_config));
    // The shipped model is fit on every sample; the metrics are those of the last held-out evaluation.
    KernelSuite& ks = suite(kernel);
    const KernelDataTable table = get_data_by_profiled_results(kernel, *ks.parser, Json{{kernel, data}});
    KernelDataset all;
    all.features = table.features;
    all.labels = table.labels;
    if (all.features.empty()) throw Error("no profiled samples of '" + kernel + "' to train on");
    all.feature_names = feature_names_for(*ks.parser, all.features.front().size());
    const RegressorParams params = regressor_params(kernel);
    const TrainResult final_fit = train_kernel_predictor(all, params, s.error_threshold, TrainMode::final, kernel);
    KernelPredictorMeta meta;
    meta.kernel = kernel;
    meta.feature_names = all.feature_names;
    meta.log_target = params.log_target;
    meta.params = params;
    meta.metrics = result.train.metrics;
    meta.sample_count = final_fit.sample_count;
    writer.add_kernel(final_fit.model, meta);
    summaries.push_back(summary);
  }
  if (rules) {
    io::save_json_file(predictor_folder / kFusionRulesFile, rules->rules);
    spdlog::info("Fusion rules: {} obeyed, {} not obeyed, {} undecided (details in {})", rules->obeyed, rules->not_obeyed,
                 rules->undecided, rules->rules_file.string());
  }
  const Json quality = assess_measurement_quality(summaries, drift_series, levels_normalized);
  writer.set_measurement_quality(quality);
  const fs::path meta_yaml = writer.finish();
  if (!calibration.empty()) {
    calibrate_predictor(meta_yaml.parent_path(), calibration);
    // What to expect on families the predictor never saw: its own figure in sample says little about that.
    if (fs::exists(meta_yaml.parent_path() / kFusionRulesFile)) {
      try {
        spdlog::info("Generalization: {}", leave_family_out(meta_yaml.parent_path()).line());
      } catch (const Error& e) {
        spdlog::warn("Generalization not assessed: {}", e.what());
      }
    }
  }
  if (quality["verdict"] == "noisy") {
    for (const auto& reason : quality["reasons"]) spdlog::warn("measurement: {}", reason.get<std::string>());
    spdlog::warn("the labels of this build are noise where they repeat this badly: the predictor is marked "
                 "measurement_quality noisy (predict and evaluate say so); nn-meter check-machine tells what disturbs "
                 "the machine; when it is quiet, nn-meter build --remeasure-noisy on this workspace repeats the "
                 "samples whose repeats did not settle and trains again");
  }
  Json table = Json::array();
  for (const auto& s : summaries)
    table.push_back({{"kernel", s.kernel}, {"samples", s.samples}, {"failed", s.failed}, {"metrics", s.metrics.to_json()},
                     {"acc10_per_iteration", s.acc10_per_iteration}, {"repeatability", s.repeatability.to_json()}});
  io::save_json_file(results_dir() / "accuracy.json", table);
  spdlog::info("Predictor '{}' saved in {}; register it with: nn-meter register --predictor {}", info.name,
               meta_yaml.parent_path().string(), meta_yaml.string());
  return summaries;
}

void Builder::calibrate_predictor(const fs::path& folder, const std::vector<fs::path>& networks) const {
  if (!fs::exists(folder / kFusionRulesFile)) {
    spdlog::warn("CALIBRATION_NETWORKS: not calibrated, the predictor has no fusion rules (built without the rule "
                 "test); run nn-meter ruletest, then nn-meter calibrate --predictor {} --onnx NETWORKS",
                 folder.string());
    return;
  }
  const EvaluateSettings s = calibration_settings(folder, networks);
  spdlog::info("Calibrating the composition term on the {} CALIBRATION_NETWORKS, each measured by the protocol "
               "(journal in {}: a rerun resumes it)",
               networks.size(), s.work_dir.string());
  const CalibrationReport r = calibrate(registry_, s);
  std::istringstream table(r.to_table());
  for (std::string line; std::getline(table, line);) spdlog::info("  {}", line);
  spdlog::info("Composition term written to {}: predict and evaluate use it", r.file.string());
}

EvaluateSettings Builder::calibration_settings(const fs::path& folder, const std::vector<fs::path>& networks) const {
  EvaluateSettings s;
  s.predictor = folder.string();
  s.onnx = networks;
  s.work_dir = workspace_.predictor_build_dir() / "calibration";
  s.timeout_s = settings_.timeout_s;
  s.worker_executable = settings_.worker_executable;
  s.progress = settings_.progress;
  s.seed = settings_.seed;
  s.sharding = settings_.sharding;
  return s;
}

Json assess_measurement_quality(const std::vector<KernelBuildSummary>& summaries, const std::vector<DriftSeries>& drift,
                                bool levels_normalized) {
  Json kernels = Json::object(), reasons = Json::array(), drifts = Json::array();
  std::vector<std::string> noisy;
  for (const auto& s : summaries) {
    kernels[s.kernel] = s.repeatability.to_json();
    if (s.repeatability.samples > 0 && s.repeatability.within10 < kQuietRepeatWithin10)
      noisy.push_back(fmt::format("{} {:.0f}%", s.kernel, 100 * s.repeatability.within10));
  }
  if (!noisy.empty())
    reasons.push_back(fmt::format("the repeats of {} agree within ±10% for only these shares of their samples: {} "
                                  "(a quiet machine: {:.0f}% or more)",
                                  noisy.size() == 1 ? "one kernel" : fmt::format("{} kernels", noisy.size()),
                                  fmt::join(noisy, ", "), 100 * kQuietRepeatWithin10));
  for (const auto& d : drift) {
    if (d.ratio.empty()) continue;
    // The level judged is the running median of three: one probe measurement far off is one process's level,
    // which the repeats of the samples measured then (other processes, other minutes) outvote, so a lone spike no
    // longer calls a build noisy (docs/measurement.md). The raw range is kept beside it.
    const std::vector<double> level = d.smoothed();
    const auto [lo, hi] = std::minmax_element(level.begin(), level.end());
    const auto [raw_lo, raw_hi] = std::minmax_element(d.ratio.begin(), d.ratio.end());
    const size_t at_lo = static_cast<size_t>(lo - level.begin()), at_hi = static_cast<size_t>(hi - level.begin());
    drifts.push_back({{"probe", d.probe}, {"low", *lo - 1}, {"high", *hi - 1}, {"low_minute", d.minutes[at_lo]},
                      {"high_minute", d.minutes[at_hi]}, {"span_minutes", d.span_minutes()},
                      {"raw_low", *raw_lo - 1}, {"raw_high", *raw_hi - 1}});
    if (!levels_normalized && (*hi - 1 > kQuietDrift || 1 - *lo > kQuietDrift))
      reasons.push_back(fmt::format("drift probe {} moved {:+.1f}% (minute {:.0f}) to {:+.1f}% (minute {:.0f}) against "
                                    "its start over {:.0f} min, each the median of three measurements (a quiet machine: "
                                    "within ±{:.0f}%)",
                                    d.probe, 100 * (*lo - 1), d.minutes[at_lo], 100 * (*hi - 1), d.minutes[at_hi],
                                    d.span_minutes(), 100 * kQuietDrift));
  }
  return {{"verdict", reasons.empty() ? "ok" : "noisy"},
          {"reasons", reasons},
          {"kernels", kernels},
          {"drift", drifts},
          {"thresholds", {{"repeat_within10", kQuietRepeatWithin10}, {"drift", kQuietDrift}}},
          {"levels_normalized", levels_normalized}};
}

std::string format_accuracy_table(const std::vector<KernelBuildSummary>& summaries) {
  // The last two columns are the ceiling: how often two halves of each sample's repeats agree.
  std::string out = fmt::format("{:<18} {:>8} {:>10} {:>9} {:>7} {:>7} {:>7} {:>9} {:>9}\n", "kernel", "samples",
                                "rmse(ms)", "rmspe(%)", "acc5", "acc10", "acc15", "repeat5", "repeat10");
  for (const auto& s : summaries) {
    const LatencyMetrics& m = s.metrics;
    const RepeatAgreement& r = s.repeatability;
    const auto ceiling = [&](double v) { return r.samples == 0 ? std::string("-") : fmt::format("{:.1f}%", 100 * v); };
    out += fmt::format("{:<18} {:>8} {:>10.4f} {:>9.2f} {:>6.1f}% {:>6.1f}% {:>6.1f}% {:>9} {:>9}\n", s.kernel, s.samples,
                       m.rmse, m.rmspe, 100 * m.acc5, 100 * m.acc10, 100 * m.acc15, ceiling(r.within5), ceiling(r.within10));
  }
  return out;
}

}  // namespace nnmeter
