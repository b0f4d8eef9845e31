// The builtin operators (nn-Meter's 18 and ours, configured from ruletest_config) and the builtin special
// test case MON. BF_op1_op2 cases are not listed: they are made from BASIC_TESTCASES by the rule tester.
#include <fmt/format.h>

#include <numeric>

#include "common/hash.h"
#include "fusion/operators.h"
#include "fusion/testcases.h"
#include "registry/builtins.h"

namespace nnmeter {

namespace fusion {

namespace {

std::string shape_str(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ", ")); }

// In nn-Meter's listing order, then ours.
std::vector<OpSpec> all_specs() {
  static const std::vector<std::string> kOrder = {"conv",   "dwconv", "convtrans", "bn",      "globalavgpool", "maxpool",
                                                  "avgpool", "se",    "fc",        "relu",    "relu6",         "sigmoid",
                                                  "hswish", "reshape", "add",      "concat",  "flatten",       "split",
                                                  "swish",  "channelshuffle", "linear", "gelu", "layernorm",
                                                  "softmax"};
  std::vector<OpSpec> specs;
  for (auto family : {conv_operator_specs, elementwise_operator_specs, pool_operator_specs, structural_operator_specs})
    for (auto& spec : family()) specs.push_back(std::move(spec));
  std::vector<OpSpec> out;
  for (const auto& name : kOrder)
    for (auto& spec : specs)
      if (spec.name == name) out.push_back(std::move(spec));
  return out;
}

uint64_t seed_of(const std::string& name) { return fnv1a(name); }

// One builtin operator: its spec bound to the config's parameters.
class BuiltinOperator final : public Operator {
 public:
  BuiltinOperator(OpSpec spec, OpParams params) : spec_(std::move(spec)), params_(params) {}

  Shape output_shape(const Shape& input_shape) const override {
    for (int64_t d : input_shape)
      if (d <= 0) throw Error(fmt::format("operator '{}': input shape {} has a non-positive dimension", spec_.name, shape_str(input_shape)));
    return spec_.shape(params_, input_shape);
  }
  bool is_two_inputs() const override { return spec_.two_inputs; }

  std::string build_onnx(const Shape& input_shape, int batch_size) const override {
    if (batch_size <= 0) throw Error("operator '" + spec_.name + "': batch size must be positive");
    const Shape out = output_shape(input_shape);
    onnx_io::GraphBuilder g(spec_.name, seed_of(spec_.name));
    std::vector<std::string> inputs = {g.input(batched(batch_size, input_shape))};
    if (spec_.two_inputs) inputs.push_back(g.input(batched(batch_size, input_shape)));
    for (const auto& y : spec_.body(g, inputs, params_, input_shape, batch_size)) g.output(y, batched(batch_size, out));
    return g.finish_serialized();
  }

 private:
  OpSpec spec_;
  OpParams params_;
};

}  // namespace

OpParams OpParams::from_config(const Json& c) {
  const RuleTestConfig r = RuleTestConfig::from_json(c);
  return OpParams{r.cout, r.kernel_size, r.strides, r.pool_strides};
}

void require_rank(const std::string& op, const Shape& in, size_t rank) {
  if (rank == 0 ? !in.empty() : in.size() == rank) return;
  if (rank == 3)
    throw Error(fmt::format("operator '{}' needs a [C, H, W] input, got {}: do not list it in LAYERS_1D nor after an "
                            "operator with a 1-D output", op, shape_str(in)));
  throw Error(fmt::format("operator '{}' cannot take an input of shape {}", op, shape_str(in)));
}

void require_even_first(const std::string& op, const Shape& in) {
  if (in.at(0) % 2 != 0)
    throw Error(fmt::format("operator '{}' halves the first axis, which must be even, got {}", op, shape_str(in)));
}

Shape batched(int64_t batch, const Shape& shape) {
  Shape out = {batch};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

std::unique_ptr<Operator> create_builtin_operator(const std::string& name, const Json& ruletest_config) {
  for (auto& spec : all_specs())
    if (spec.name == name) return std::make_unique<BuiltinOperator>(std::move(spec), OpParams::from_config(ruletest_config));
  throw Error("unknown builtin operator '" + name + "'");
}

}  // namespace fusion

namespace {

std::vector<OperatorInfo> builtin_operator_list() {
  std::vector<OperatorInfo> out;
  for (auto& spec : fusion::all_specs()) {
    OperatorInfo info;
    info.name = spec.name;
    info.create = [spec](const Json& config) -> std::unique_ptr<Operator> {
      return std::make_unique<fusion::BuiltinOperator>(spec, fusion::OpParams::from_config(config));
    };
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<TestCaseInfo> builtin_testcase_list() {
  TestCaseInfo mon;
  mon.name = "MON";
  mon.create = [](const Json& config) { return fusion::make_mon_case(config); };
  return {mon};
}

const BuiltinRegistration registration(&builtin_operator_list, &builtin_testcase_list);

}  // namespace

}  // namespace nnmeter
