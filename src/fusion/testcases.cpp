#include "fusion/testcases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "common/io.h"
#include "fusion/compose.h"
#include "fusion/operators.h"
#include "nnmeter/ruletest.h"

namespace nnmeter::fusion {

namespace {

void write_model(const fs::path& file, const std::string& bytes) { io::write_file_atomic(file, bytes); }

}  // namespace

std::optional<std::vector<std::string>> split_basic_name(const std::string& testcase) {
  if (testcase.rfind("BF_", 0) != 0) return std::nullopt;
  std::vector<std::string> ops;
  size_t start = 3;
  for (;;) {
    const size_t sep = testcase.find('_', start);
    ops.push_back(testcase.substr(start, sep == std::string::npos ? std::string::npos : sep - start));
    if (ops.back().empty()) return std::nullopt;
    if (sep == std::string::npos) break;
    start = sep + 1;
  }
  if (ops.size() < 2 || ops.size() > kMaxChainOps) return std::nullopt;
  return ops;
}

Shape basic_input_shape(const RuleTestConfig& config, const std::vector<std::string>& ops) {
  const auto& l = config.layers_1d;
  for (const auto& op : ops)
    if (std::find(l.begin(), l.end(), op) != l.end()) return {config.shape_1d};
  return {config.cin, config.hw, config.hw};
}

BasicFusionCase::BasicFusionCase(std::string name, Ops ops, Shape input, double alpha)
    : name_(std::move(name)), ops_(std::move(ops)), alpha_(alpha) {
  for (size_t i = 0; i < ops_.size(); ++i) {
    const std::string& op = ops_[i].first;
    const auto same = std::count_if(ops_.begin(), ops_.end(), [&](const auto& o) { return o.first == op; });
    aliases_.push_back(same > 1 ? fmt::format("{}_{}", op, i + 1) : op);
  }
  try {
    for (const auto& [op, impl] : ops_) {
      inputs_.push_back(input);
      input = impl->output_shape(input);
    }
  } catch (const Error& e) {
    throw Error(fmt::format("test case {}: {}", name_, e.what()));
  }
}

std::map<std::string, TestCaseModel> BasicFusionCase::generate_testcase(const fs::path& directory, int batch_size) {
  std::vector<std::pair<std::string, onnx::ModelProto>> models;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const std::string origin = "operator " + aliases_[i];
    models.emplace_back(aliases_[i], parse_model(ops_[i].second->build_onnx(inputs_[i], batch_size), origin));
  }
  onnx::ModelProto block = models.front().second;
  for (size_t i = 1; i < models.size(); ++i) block = chain(block, models[i].second, "operator " + aliases_[i] + " in " + name_);
  models.emplace_back("block", std::move(block));
  std::map<std::string, TestCaseModel> out;
  for (const auto& [model_name, model] : models) {
    const fs::path file = directory / (name_ + "_" + model_name + ".onnx");
    write_model(file, serialize(model));
    out[model_name] = TestCaseModel{file, input_shapes(model)};
  }
  return out;
}

Json BasicFusionCase::run_test(const std::map<std::string, double>& latencies_ms) {
  std::vector<double> alone;
  for (const auto& alias : aliases_) alone.push_back(latencies_ms.at(alias));
  return {{"obey", basic_fusion_obeys(alone, latencies_ms.at("block"), alpha_)}};
}

namespace {

// MON — does the backend fuse an operator into its producer when the producer's output has more than one
// consumer?
//
// nn-Meter's MON stores bool(case name), which is always true. Here the question is answered by
// measurement. The block is a depthwise conv P whose output feeds two consumers: a ReLU C (the pair
// BF_dwconv_relu shows the backend fuses on its own) and a second depthwise conv B (the other branch,
// which cannot be an activation post-op of P). Two hypotheses predict the block's latency:
//   fused:      T(P∘C) + T(B)       — C runs inside P although P's output is also read by B
//   not fused:  T(P) + T(C) + T(B)  — the second consumer prevents the fusion
// where T(P∘C) is the measured latency of the model P → C alone. The rule obeys when the block is closer
// to the fused prediction. T(B) appears in both, so the decision rests on T(P) + T(C) − T(P∘C), the
// saving BF_dwconv_relu found to be large (> EMP_ALPHA · min); this is why MON depends on it: when the
// backend never fuses dwconv and relu, the two hypotheses coincide and MON is not evaluated.
// A depthwise conv is the producer because it is memory-bound: a ReLU costs a sizeable share of it, so
// the two predictions are far apart compared with measurement noise.
class MultipleOutNodesCase final : public TestCase {
 public:
  explicit MultipleOutNodesCase(const Json& config)
      : config_(RuleTestConfig::from_json(config)),
        dwconv_(create_builtin_operator("dwconv", config)),
        relu_(create_builtin_operator("relu", config)) {}

  std::map<std::string, TestCaseModel> generate_testcase(const fs::path& directory, int batch_size) override {
    const Shape input = {config_.cin, config_.hw, config_.hw};
    const Shape middle = dwconv_->output_shape(input);
    const onnx::ModelProto producer = parse_model(dwconv_->build_onnx(input, batch_size), "operator dwconv");
    const onnx::ModelProto consumer = parse_model(relu_->build_onnx(middle, batch_size), "operator relu");
    const onnx::ModelProto branch = parse_model(dwconv_->build_onnx(middle, batch_size), "operator dwconv");

    onnx::ModelProto block = producer;
    const std::string joint = producer.graph().output(0).name();
    append_model(block, joint, consumer, "relu_", "operator relu");
    append_model(block, joint, branch, "branch_", "operator dwconv");
    drop_output(block, joint);

    std::map<std::string, TestCaseModel> out;
    const std::vector<std::pair<std::string, onnx::ModelProto>> models = {
        {"dwconv", producer}, {"relu", consumer}, {"dwconv_relu", chain(producer, consumer, "operator relu")},
        {"branch", branch},   {"block", block}};
    for (const auto& [name, model] : models) {
      const fs::path file = directory / ("MON_" + name + ".onnx");
      write_model(file, serialize(model));
      out[name] = TestCaseModel{file, input_shapes(model)};
    }
    return out;
  }

  Json run_test(const std::map<std::string, double>& t) override {
    return {{"obey", mon_obeys(t.at("dwconv"), t.at("relu"), t.at("dwconv_relu"), t.at("branch"), t.at("block"))}};
  }

  std::vector<std::string> depends_on() const override { return {"BF_dwconv_relu"}; }

 private:
  RuleTestConfig config_;
  std::unique_ptr<Operator> dwconv_, relu_;
};

}  // namespace

std::unique_ptr<TestCase> make_mon_case(const Json& ruletest_config) {
  return std::make_unique<MultipleOutNodesCase>(ruletest_config);
}

}  // namespace nnmeter::fusion

namespace nnmeter {

bool basic_fusion_obeys(double t1_ms, double t2_ms, double t12_ms, double alpha) {
  return basic_fusion_obeys({t1_ms, t2_ms}, t12_ms, alpha);
}

bool basic_fusion_obeys(const std::vector<double>& ops_ms, double block_ms, double alpha) {
  if (ops_ms.empty()) return false;
  double sum = 0;
  for (double t : ops_ms) sum += t;
  return sum - block_ms > alpha * *std::min_element(ops_ms.begin(), ops_ms.end());
}

bool mon_obeys(double producer_ms, double consumer_ms, double fused_pair_ms, double branch_ms, double block_ms) {
  const double fused = fused_pair_ms + branch_ms;
  const double separate = producer_ms + consumer_ms + branch_ms;
  return std::fabs(block_ms - fused) < std::fabs(block_ms - separate);
}

}  // namespace nnmeter
