// One library holding eight classes, more than ABI 1's macro could list, of every kind: nn-meter lists
// them from the library's description and loads any of them. brokenBackend fails on purpose: its
// constructor with a two-line message when the config sets BREAK, its profile always.
#include <nnmeter/plugin.h>

#include <stdexcept>

namespace {

using nnmeter::plugin::json;

class firstBackend : public nnmeter::plugin::Backend {
 public:
  using Backend::Backend;
  std::string test_connection() override { return "first of eight"; }
  json profile(const std::vector<std::string>&) override { return {{"avg", 1.0}}; }
};

class plainKernel : public nnmeter::plugin::Kernel {
 public:
  using Kernel::Kernel;
  json input_tensor_shape(const json&) const override { return json::array({json::array({3, 8, 8})}); }
  std::string get_model(const json&, int) const override { return "not a model"; }
};

class plainSampler : public nnmeter::plugin::Sampler {
 public:
  using Sampler::Sampler;
  json prior_config_sampling(int sample_num, uint64_t) override {
    json configs = json::array();
    for (int i = 0; i < sample_num; ++i) configs.push_back({{"HW", i + 1}});
    return configs;
  }
  json finegrained_config_sampling(int, const json& configs, uint64_t) override { return configs; }
};

class plainParser : public nnmeter::plugin::Parser {
 public:
  using Parser::Parser;
  std::vector<std::string> needed_config() const override { return {"HW"}; }
  std::vector<double> get_feature_by_config(const json& config) const override {
    return {config.at("HW").get<double>()};
  }
  json get_config_by_feature(const std::vector<double>& feature) const override { return {{"HW", feature.at(0)}}; }
};

class plainOperator : public nnmeter::plugin::Operator {
 public:
  using Operator::Operator;
  json output_shape(const json& input_shape) const override { return input_shape; }
  std::string get_model(const json&, int) const override { return "not a model"; }
};

class plainTestCase : public nnmeter::plugin::TestCase {
 public:
  using TestCase::TestCase;
  json generate_testcase(const std::string&, int) override { return json::object(); }
  json run_test(const json&) override { return {{"obey", true}}; }
};

class brokenBackend : public nnmeter::plugin::Backend {
 public:
  explicit brokenBackend(const json& config) : Backend(config) {
    if (config.value("BREAK", false)) throw std::runtime_error("cannot reach the device\nsecond line never shown");
  }
  std::string test_connection() override { return "broken but constructed"; }
  json profile(const std::vector<std::string>&) override { throw std::runtime_error("the device is gone"); }
};

class lastBackend : public nnmeter::plugin::Backend {
 public:
  using Backend::Backend;
  std::string test_connection() override { return "eighth of eight"; }
  json profile(const std::vector<std::string>&) override { return {{"latency_ms", {2.0, 2.5}}}; }
};

}  // namespace

NNMETER_PLUGIN("many_classes", "2.5", firstBackend, plainKernel, plainSampler, plainParser, plainOperator,
               plainTestCase, brokenBackend, lastBackend)
