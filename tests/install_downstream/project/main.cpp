// Trains a conv-bn-relu predictor on FLOPs-proportional labels, saves the folder, loads it and predicts a
// conv model: the public C++ API end to end, from the installed headers and library only.
#include <fstream>
#include <iostream>

#include "nnmeter/kernel.h"
#include "nnmeter/prediction.h"
#include "nnmeter/predictor_folder.h"
#include "nnmeter/registry.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const nnmeter::fs::path dir = argv[1];
  nnmeter::KernelSuite suite;
  for (auto& k : nnmeter::builtin_kernels())
    if (k.name == "conv-bn-relu") suite = k.create(nnmeter::Json::object());
  nnmeter::KernelDataset data;
  for (const auto& config : suite.sampler->prior_config_sampling(60, 1)) {
    data.features.push_back(suite.parser->get_feature_by_config(config));
    data.labels.push_back(0.01 + data.features.back()[5] / 1000);  // FLOPs / 2e6, in ms per GFLOP
  }
  data.feature_names = nnmeter::feature_names_for(*suite.parser, data.features.front().size());
  const nnmeter::TrainResult fit =
      nnmeter::train_kernel_predictor(data, nnmeter::default_gbdt_params(), 0.1, nnmeter::TrainMode::final, "conv-bn-relu");
  nnmeter::PredictorInfo info;
  info.name = "downstream_cpu";
  info.backend = "onednn_cpu";
  nnmeter::PredictorWriter writer(dir / "predictor", info);
  nnmeter::KernelPredictorMeta meta;
  meta.kernel = "conv-bn-relu";
  meta.params = nnmeter::default_gbdt_params();
  meta.sample_count = fit.sample_count;
  writer.add_kernel(fit.model, meta);
  writer.finish();
  // The backend's fusion rules (nn-meter ruletest writes them): conv, bn and relu run as one kernel.
  std::ofstream(dir / "predictor" / nnmeter::kFusionRulesFile)
      << R"({"BF_conv_bn": {"obey": true}, "BF_conv_relu": {"obey": true}, "MON": {"obey": false}})";

  const nnmeter::KernelConfig conv = {{"HW", 28}, {"CIN", 32}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}};
  std::ofstream(dir / "conv.onnx", std::ios::binary) << suite.kernel->build_onnx(conv, 1);
  const auto predictor = nnmeter::LatencyPredictor::from_folder(dir / "predictor");
  const nnmeter::ModelPrediction p = predictor.predict_file(dir / "conv.onnx");
  std::cout << "predicted " << p.latency_ms << " ms for " << p.kernels.size() << " kernels\n";
  return p.latency_ms > 0 ? 0 : 1;
}
