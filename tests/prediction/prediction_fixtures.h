// Helpers for the prediction tests: fusion rules from a list, kernel lists of a model, and small real
// predictor folders trained in the test (XGBoost on configs from the builtin samplers, features from the
// builtin parsers, synthetic latencies) — so every number a test checks comes from a real regressor.
#pragma once

#include <gtest/gtest.h>

#include <onnx/onnx_pb.h>

#include "prediction/onnx_model.h"
#include "networks/layers.h"
#include "common/io.h"
#include "nnmeter/prediction.h"
#include "nnmeter/registry.h"
#include "support/test_support.h"

namespace nnmeter::test {

// {"BF_a_b": {"obey": true}} for each obeyed name, {"obey": false} for each refused one, plus MON.
inline Json rules_json(const std::vector<std::string>& obeyed, bool mon = false, const std::vector<std::string>& refused = {}) {
  Json j = Json::object();
  for (const auto& r : obeyed) j[r] = {{"obey", true}};
  for (const auto& r : refused) j[r] = {{"obey", false}};
  j["MON"] = {{"obey", mon}};
  return j;
}

inline FusionRules rules(const std::vector<std::string>& obeyed, bool mon = false,
                         const std::vector<std::string>& refused = {}) {
  return FusionRules::from_json(rules_json(obeyed, mon, refused), "test rules");
}

// The fusion a CPU backend like onednn_cpu shows: conv/dwconv absorb bn and activations, add absorbs relu.
inline FusionRules cpu_rules(bool mon = false) {
  return rules({"BF_conv_bn", "BF_conv_relu", "BF_conv_relu6", "BF_conv_hswish", "BF_dwconv_bn", "BF_dwconv_relu",
                "BF_dwconv_relu6", "BF_dwconv_hswish", "BF_bn_relu", "BF_add_relu", "BF_fc_relu"},
               mon);
}

inline std::vector<DetectedKernel> detect(const onnx::ModelProto& m, const FusionRules& r) {
  return detect_kernels(onnx_to_ir(m, m.graph().name()), r);
}

inline std::vector<std::string> ops_of(const std::vector<DetectedKernel>& ks) {
  std::vector<std::string> out;
  for (const auto& k : ks) out.push_back(k.op);
  return out;
}

inline const DetectedKernel& kernel_with_op(const std::vector<DetectedKernel>& ks, const std::string& op) {
  for (const auto& k : ks)
    if (k.op == op) return k;
  throw std::runtime_error("no kernel " + op);
}

// Synthetic latency (ms) of a kernel from its config: proportional to work, with a fixed overhead.
inline double synthetic_latency(const std::string& kernel, const KernelConfig& c) {
  auto v = [&](const char* key, double fallback = 1) { return c.contains(key) ? c[key].get<double>() : fallback; };
  const double hw = v("HW"), cin = v("CIN", v("CIN1")), cout = v("COUT", cin), k = v("KERNEL_SIZE"), s = v("STRIDES", v("POOL_STRIDES"));
  if (kernel.rfind("gconv", 0) == 0) return 0.005 + (hw / s) * (hw / s) * cin * cout / v("GROUPS") * k * k * 2e-9;
  if (kernel.rfind("dwconv", 0) == 0) return 0.002 + (hw / s) * (hw / s) * cin * k * k * 2e-7;
  if (kernel.rfind("conv", 0) == 0) return 0.005 + (hw / s) * (hw / s) * cin * cout * k * k * 2e-9;
  if (kernel == "fc") return 0.003 + cin * cout * 1e-8;
  return 0.001 + hw * hw * cin * 1e-7;
}

// A predictor folder with gradient-boosted models for `kernels`, trained on 120 sampled configs each,
// and `rules` as fusion_rules.json (none when null).
inline fs::path make_predictor_folder(const fs::path& folder, const std::vector<std::string>& kernels, const Json& rules,
                                      const std::string& name = "tiny_cpu") {
  PredictorInfo info;
  info.name = name;
  info.backend = "onednn_cpu";
  PredictorWriter writer(folder, info);
  for (const auto& kernel : kernels) {
    KernelSuite suite;
    for (auto& k : builtin_kernels())
      if (k.name == kernel) suite = k.create(Json::object());
    KernelDataset data;
    for (const auto& config : suite.sampler->prior_config_sampling(120, 7)) {
      data.features.push_back(suite.parser->get_feature_by_config(config));
      data.labels.push_back(synthetic_latency(kernel, config));
    }
    data.feature_names = feature_names_for(*suite.parser, data.features.front().size());
    RegressorParams params = default_gbdt_params();
    params.rounds = 40;
    params.max_depth = 4;
    TrainResult fit = train_kernel_predictor(data, params, 0.1, TrainMode::final, kernel);
    KernelPredictorMeta meta;
    meta.kernel = kernel;
    meta.params = params;
    meta.sample_count = fit.sample_count;
    writer.add_kernel(fit.model, meta);
  }
  const fs::path meta_yaml = writer.finish();
  if (!rules.is_null()) io::save_json_file(folder / kFusionRulesFile, rules);
  return meta_yaml;
}

}  // namespace nnmeter::test
