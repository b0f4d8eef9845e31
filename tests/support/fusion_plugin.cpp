// A customized operator and test case for the registry tests: a ReLU operator and a test case deciding
// whether two ReLUs in a row fuse, with the reference criterion (T1 + T2) - T12 > alpha * min(T1, T2).
#include <nnmeter/plugin.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

namespace {

using nnmeter::plugin::json;

std::string relu_chain_model(const std::vector<int64_t>& shape, int batch, int relus) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  auto* graph = model.mutable_graph();
  graph->set_name("relus");
  std::string prev = "input";
  for (int i = 0; i < relus; ++i) {
    auto* node = graph->add_node();
    node->set_op_type("Relu");
    node->add_input(prev);
    prev = i + 1 == relus ? "output" : "r" + std::to_string(i);
    node->add_output(prev);
  }
  for (auto* info : {graph->add_input(), graph->add_output()}) {
    info->set_name(info == &graph->input(0) ? "input" : "output");
    auto* t = info->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_value(batch);
    for (int64_t d : shape) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  return model.SerializeAsString();
}

class MyRelu : public nnmeter::plugin::Operator {
 public:
  using Operator::Operator;
  json output_shape(const json& input_shape) const override { return input_shape; }
  std::string get_model(const json& input_shape, int batch_size) const override {
    return relu_chain_model(input_shape.get<std::vector<int64_t>>(), batch_size, 1);
  }
};

class ReluReluCase : public nnmeter::plugin::TestCase {
 public:
  using TestCase::TestCase;
  json generate_testcase(const std::string& directory, int batch_size) override {
    std::filesystem::create_directories(directory);
    const std::vector<int64_t> shape = {8, 4, 4};
    json out = json::object();
    for (const auto& [name, relus] : std::vector<std::pair<std::string, int>>{{"relu_1", 1}, {"relu_2", 1}, {"block", 2}}) {
      const std::string path = directory + "/" + name + ".onnx";
      std::ofstream(path, std::ios::binary) << relu_chain_model(shape, batch_size, relus);
      out[name] = {{"model", path}, {"shapes", json::array({shape})}};
    }
    return out;
  }
  json run_test(const json& latencies_ms) override {
    const double t1 = latencies_ms.at("relu_1"), t2 = latencies_ms.at("relu_2"), t12 = latencies_ms.at("block");
    return {{"obey", (t1 + t2) - t12 > 0.5 * std::min(t1, t2)}};
  }
};

}  // namespace

NNMETER_PLUGIN("fusion_plugin", "1", MyRelu, ReluReluCase)
