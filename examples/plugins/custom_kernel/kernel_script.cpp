// An example customized kernel: Conv -> BatchNormalization -> Relu, the same composition as the builtin
// conv-bn-relu, built as an ONNX model with SAME padding (output size ceil(HW / STRIDES)).
#include <nnmeter/plugin.h>
#include <onnx/onnx_pb.h>

#include <random>

namespace {

using nnmeter::plugin::json;

void add_initializer(onnx::GraphProto& graph, const std::string& name, const std::vector<int64_t>& dims,
                     std::mt19937& rng, float scale, float offset = 0.0f) {
  onnx::TensorProto* t = graph.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t count = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    count *= d;
  }
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (int64_t i = 0; i < count; ++i) t->add_float_data(offset + dist(rng));
}

void set_value_info(onnx::ValueInfoProto* info, const std::string& name, const std::vector<int64_t>& dims) {
  info->set_name(name);
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tensor->mutable_shape()->add_dim()->set_dim_value(d);
}

int64_t key(const json& config, const char* name) {
  if (!config.contains(name) || !config[name].is_number_integer() || config[name].get<int64_t>() <= 0)
    throw std::runtime_error(std::string("config needs a positive integer ") + name);
  return config[name].get<int64_t>();
}

class MyKernel : public nnmeter::plugin::Kernel {
 public:
  using Kernel::Kernel;

  json input_tensor_shape(const json& config) const override {
    return json::array({json::array({key(config, "CIN"), key(config, "HW"), key(config, "HW")})});
  }

  std::string get_model(const json& config, int batch_size) const override {
    const int64_t hw = key(config, "HW"), cin = key(config, "CIN"), cout = key(config, "COUT");
    const int64_t k = key(config, "KERNEL_SIZE"), s = key(config, "STRIDES");
    const int64_t out_hw = (hw + s - 1) / s;
    const int64_t pad_total = std::max<int64_t>((out_hw - 1) * s + k - hw, 0);

    onnx::ModelProto model;
    model.set_ir_version(8);
    model.set_producer_name("nnmeter-example-kernel");
    model.add_opset_import()->set_version(13);
    onnx::GraphProto& graph = *model.mutable_graph();
    graph.set_name("mykernel");
    std::mt19937 rng(7);
    add_initializer(graph, "w", {cout, cin, k, k}, rng, 0.1f);
    add_initializer(graph, "b", {cout}, rng, 0.1f);
    add_initializer(graph, "gamma", {cout}, rng, 0.1f, 1.0f);
    add_initializer(graph, "beta", {cout}, rng, 0.1f);
    add_initializer(graph, "mean", {cout}, rng, 0.1f);
    add_initializer(graph, "var", {cout}, rng, 0.1f, 1.0f);

    onnx::NodeProto* conv = graph.add_node();
    conv->set_op_type("Conv");
    conv->set_name("conv");
    for (const char* in : {"input", "w", "b"}) conv->add_input(in);
    conv->add_output("conv_out");
    auto* ks = conv->add_attribute();
    ks->set_name("kernel_shape");
    ks->set_type(onnx::AttributeProto::INTS);
    ks->add_ints(k);
    ks->add_ints(k);
    auto* st = conv->add_attribute();
    st->set_name("strides");
    st->set_type(onnx::AttributeProto::INTS);
    st->add_ints(s);
    st->add_ints(s);
    auto* pads = conv->add_attribute();
    pads->set_name("pads");
    pads->set_type(onnx::AttributeProto::INTS);
    for (int64_t p : {pad_total / 2, pad_total / 2, pad_total - pad_total / 2, pad_total - pad_total / 2})
      pads->add_ints(p);

    onnx::NodeProto* bn = graph.add_node();
    bn->set_op_type("BatchNormalization");
    bn->set_name("bn");
    for (const char* in : {"conv_out", "gamma", "beta", "mean", "var"}) bn->add_input(in);
    bn->add_output("bn_out");

    onnx::NodeProto* relu = graph.add_node();
    relu->set_op_type("Relu");
    relu->set_name("relu");
    relu->add_input("bn_out");
    relu->add_output("output");

    set_value_info(graph.add_input(), "input", {batch_size, cin, hw, hw});
    set_value_info(graph.add_output(), "output", {batch_size, cout, out_hw, out_hw});
    return model.SerializeAsString();
  }
};

}  // namespace

NNMETER_PLUGIN("custom_kernel", "1.0", MyKernel)
