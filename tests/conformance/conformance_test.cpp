// The ONNX backend node tests shipped by Debian's libonnx-testdata, run on onednn_cpu. Every test whose
// graph uses only ops the engine knows is run; a test may only be skipped when skipped.txt names it with
// a reason, and a listed test that starts passing fails too, so the list stays honest.
//
// Tolerance: |got - expected| <= 1e-5 + 1e-3 * |expected| per element (the ONNX backend test default is
// rtol 1e-3; the absolute term absorbs oneDNN's polynomial exp/tanh/logistic near zero).
//
// Adaptation: the node tests feed every tensor as a graph input, while onednn_cpu wants weights, shapes
// and axes as load-time constants (as every exported CNN has them). Inputs in such parameter slots,
// and non-float inputs, are bound as initializers with the test's own values before conversion.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "backends/onednn/engine.h"
#include "common/io.h"
#include "onnx_io/tensor_file.h"

namespace nnmeter::onednn {
namespace {

const fs::path kNodeDir = "/usr/share/libonnx-testdata/data/node";

// Ops the engine evaluates at load time only; node tests feeding them runtime data are not selected.
const std::set<std::string> kFoldable = {"Constant", "Shape", "Size"};

std::map<std::string, std::string> skip_list() {
  std::map<std::string, std::string> out;
  std::ifstream in(fs::path(NNMETER_CONFORMANCE_DIR) / "skipped.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto colon = line.find(':');
    out[line.substr(0, colon)] = colon == std::string::npos ? "" : line.substr(colon + 1);
  }
  return out;
}

onnx::ModelProto read_model(const fs::path& path) {
  onnx::ModelProto m;
  const auto bytes = io::read_file(path);
  if (!m.ParseFromString(bytes)) throw Error("cannot parse " + path.string());
  return m;
}

bool uses_known_ops(const onnx::ModelProto& m) {
  const auto& ops = supported_runtime_ops();
  for (const auto& n : m.graph().node())
    if (std::find(ops.begin(), ops.end(), n.op_type()) == ops.end() && !kFoldable.count(n.op_type())) return false;
  return m.graph().node_size() > 0;
}

std::vector<std::string> selected_tests() {
  std::vector<std::string> names;
  if (!fs::exists(kNodeDir)) return names;
  for (const auto& e : fs::directory_iterator(kNodeDir)) {
    const auto model = e.path() / "model.onnx";
    if (!fs::exists(model) || !fs::exists(e.path() / "test_data_set_0")) continue;
    try {
      if (uses_known_ops(read_model(model))) names.push_back(e.path().filename().string());
    } catch (const std::exception&) {
      names.push_back(e.path().filename().string());  // unreadable models must show up as failures
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Inputs the engine needs as constants become initializers holding the test's values.
void bind_parameters(onnx::ModelProto& m, const fs::path& data_dir) {
  std::set<std::string> params;
  for (const auto& n : m.graph().node())
    for (int i = 0; i < n.input_size(); ++i)
      if (is_parameter_input(n.op_type(), static_cast<size_t>(i))) params.insert(n.input(i));
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  int k = 0;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    const auto file = data_dir / fmt::format("input_{}.pb", k++);
    const bool non_float = in.type().tensor_type().elem_type() != onnx::TensorProto::FLOAT;
    if (!params.count(in.name()) && !non_float) continue;
    onnx::TensorProto t;
    if (!t.ParseFromString(io::read_file(file))) throw Error("cannot parse " + file.string());
    t.set_name(in.name());
    *m.mutable_graph()->add_initializer() = t;
  }
}

std::vector<Tensor> runtime_inputs(const onnx::ModelProto& original, const Engine& engine, const fs::path& data_dir) {
  std::vector<Tensor> out;
  std::set<std::string> inits;
  for (const auto& t : original.graph().initializer()) inits.insert(t.name());
  int k = 0;
  for (const auto& in : original.graph().input()) {
    if (inits.count(in.name())) continue;
    const auto file = data_dir / fmt::format("input_{}.pb", k++);
    for (const auto& [name, shape] : engine.input_specs())
      if (name == in.name()) out.push_back(onnx_io::read_tensor_pb(file, name));
  }
  for (auto& t : out) {  // .pb names may be empty; the graph input order is the naming authority
    (void)t;
  }
  return out;
}

// Runs one node test; returns "" when every output matches, else what went wrong.
std::string check_node_test(const std::string& name) {
  const fs::path dir = kNodeDir / name;
  const auto data_dir = dir / "test_data_set_0";
  try {
    const auto original = read_model(dir / "model.onnx");
    auto model = original;
    bind_parameters(model, data_dir);
    Engine engine(load_graph(std::move(model), name + "/model.onnx"), EngineOptions{1});
    const auto outputs = engine.forward(runtime_inputs(original, engine, data_dir));
    if (outputs.size() != static_cast<size_t>(original.graph().output_size()))
      return fmt::format("{} outputs, expected {}", outputs.size(), original.graph().output_size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      const auto expected = onnx_io::read_tensor_pb(data_dir / fmt::format("output_{}.pb", i));
      if (outputs[i].shape != expected.shape)
        return fmt::format("output {} has shape [{}], expected [{}]", i, fmt::join(outputs[i].shape, ","),
                           fmt::join(expected.shape, ","));
      size_t bad = 0;
      double worst = 0;
      for (size_t j = 0; j < expected.data.size(); ++j) {
        const double want = expected.data[j], got = outputs[i].data[j];
        const double err = std::fabs(got - want);
        if (std::isnan(want) && std::isnan(got)) continue;
        if (!(err <= 1e-5 + 1e-3 * std::fabs(want))) {
          ++bad;
          worst = std::max(worst, std::isnan(err) ? INFINITY : err);
        }
      }
      if (bad)
        return fmt::format("output {}: {} of {} elements outside tolerance, worst abs error {}", i, bad,
                           expected.data.size(), worst);
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

class NodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(NodeTest, MatchesReferenceOutputs) {
  const auto skips = skip_list();
  const auto problem = check_node_test(GetParam());
  const auto it = skips.find(GetParam());
  if (it != skips.end()) {
    if (problem.empty()) FAIL() << GetParam() << " is listed in skipped.txt but passes; remove it from the list";
    GTEST_SKIP() << it->second << " [" << problem << "]";
  }
  EXPECT_EQ(problem, "");
}

INSTANTIATE_TEST_SUITE_P(OnnxNode, NodeTest, ::testing::ValuesIn(selected_tests()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(OnnxNodeSuite, SkipListNamesRealTests) {
  for (const auto& [name, reason] : skip_list()) {
    EXPECT_TRUE(fs::exists(kNodeDir / name)) << name << " in skipped.txt does not exist";
    EXPECT_FALSE(reason.empty()) << name << " in skipped.txt has no reason";
  }
}

}  // namespace
}  // namespace nnmeter::onednn
