// Config sampling and kernel model generation (nn-Meter's generate_config_sample). Works for builtin and
// registered (plugin) kernels alike: everything goes through the Kernel / ConfigSampler interfaces.
//
// Files written (each atomically; on failure nothing new is left behind):
//   <ws>/predictor_build/kernels/<kernel>_<mark>_<ID>.onnx   one model per new config
//   <ws>/predictor_build/results/<kernel>_<mark>.json        {kernel: {ID: {model, shapes, config}}}
// An existing results file of the same kernel and mark is extended, not replaced. Configs equal to one
// already sampled for this kernel in the workspace (any mark), or repeated within the batch, are dropped,
// so fewer than sample_num models may be written.
#pragma once

#include <optional>
#include <set>

#include "nnmeter/kernel.h"
#include "nnmeter/workspace.h"

namespace nnmeter {

// Most configs one sampling call draws (--num, INIT_SAMPLE_NUM, FINEGRAINED_SAMPLE_NUM): ten times
// nn-Meter's largest default, and still a few hundred MB of models and configs.
inline constexpr int kMaxSampleNum = 100000;

enum class SamplingMode { Prior, Finegrained };
SamplingMode parse_sampling_mode(const std::string& text);  // "prior" | "finegrained"

struct SampleResult {
  fs::path results_file;  // <ws>/predictor_build/results/<kernel>_<mark>.json
  Json new_entries = Json::object();  // {ID: {model, shapes, config}} written by this call
  int sampled = 0;      // configs the sampler returned
  int duplicates = 0;   // of those, dropped as duplicates
  int excluded = 0;     // of those, dropped as configs `excluded` names
};

// nn-Meter's generate_config_sample(kernel_type, sample_num, mark, sampling_mode, configs).
// Prior mode draws `sample_num` configs; fine-grained mode draws up to `sample_num` configs around each of
// `configs`. `seed` makes the configs, IDs and weights reproducible. The kernel suite is created from the
// workspace's predictorbuild_config (BATCH_SIZE, PRIOR_CONFIG_LIB, ...). A config whose dump is in `excluded` is
// never written (a build's sealed test layers).
SampleResult generate_config_sample(const Workspace& workspace, const Registry& registry, const std::string& kernel_type,
                                    int sample_num, const std::string& mark, SamplingMode mode,
                                    const std::vector<KernelConfig>& configs, uint64_t seed);

// The same with an already created suite (tests, or callers holding a suite).
SampleResult generate_config_sample(const Workspace& workspace, KernelSuite& suite, int sample_num,
                                    const std::string& mark, SamplingMode mode, const std::vector<KernelConfig>& configs,
                                    uint64_t seed, const std::set<std::string>& excluded = {});

// Writes `configs` as they are, as generate_config_sample writes the configs it draws (same files, dedup and
// atomicity): samples chosen elsewhere, e.g. the layers of given networks. Each config must be one the suite's
// kernel can build.
SampleResult write_config_samples(const Workspace& workspace, KernelSuite& suite, const std::vector<KernelConfig>& configs,
                                  const std::string& mark, uint64_t seed, const std::set<std::string>& excluded = {});

// Configs from a file for fine-grained sampling: a JSON or YAML list of configs, or a kernel data file
// ({kernel: {ID: {config: {...}}}}, whose entries for `kernel_type` are used).
std::vector<KernelConfig> load_configs_file(const fs::path& path, const std::string& kernel_type);

// A random 6-capital-letter sample ID.
std::string random_sample_id(uint64_t& state);

}  // namespace nnmeter
