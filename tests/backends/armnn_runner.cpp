#include "backends/armnn_runner.h"

#include <armnn/ArmNN.hpp>
#include <armnnTfLiteParser/ITfLiteParser.hpp>

namespace nnmeter::test {

namespace {

std::vector<unsigned> dims(const armnn::TensorInfo& info) {
  std::vector<unsigned> out;
  for (unsigned i = 0; i < info.GetNumDimensions(); ++i) out.push_back(info.GetShape()[i]);
  return out;
}

armnn::INetworkPtr parse(armnnTfLiteParser::ITfLiteParser& parser, const std::string& bytes) {
  return parser.CreateNetworkFromBinary(std::vector<uint8_t>(bytes.begin(), bytes.end()));
}

}  // namespace

std::map<std::string, std::vector<unsigned>> armnn_inputs(const std::string& tflite_bytes) {
  auto parser = armnnTfLiteParser::ITfLiteParser::Create();
  auto network = parse(*parser, tflite_bytes);
  std::map<std::string, std::vector<unsigned>> out;
  for (const auto& name : parser->GetSubgraphInputTensorNames(0))
    out[name] = dims(parser->GetNetworkInputBindingInfo(0, name).second);
  return out;
}

std::map<std::string, ArmnnTensor> run_armnn(const std::string& tflite_bytes,
                                             const std::map<std::string, std::vector<float>>& inputs) {
  auto parser = armnnTfLiteParser::ITfLiteParser::Create();
  armnn::INetworkPtr network = parse(*parser, tflite_bytes);
  armnn::IRuntime::CreationOptions options;
  armnn::IRuntimePtr runtime = armnn::IRuntime::Create(options);
  armnn::IOptimizedNetworkPtr optimized = armnn::Optimize(*network, {armnn::Compute::CpuRef}, runtime->GetDeviceSpec());
  armnn::NetworkId id = 0;
  if (runtime->LoadNetwork(id, std::move(optimized)) != armnn::Status::Success)
    throw std::runtime_error("Arm NN could not load the network on CpuRef");
  armnn::InputTensors in;
  for (const auto& name : parser->GetSubgraphInputTensorNames(0)) {
    const auto binding = parser->GetNetworkInputBindingInfo(0, name);
    const auto& data = inputs.at(name);
    if (data.size() != binding.second.GetNumElements()) throw std::runtime_error("input size mismatch for " + name);
    in.emplace_back(binding.first, armnn::ConstTensor(binding.second, data.data()));
  }
  std::map<std::string, ArmnnTensor> results;
  armnn::OutputTensors out;
  for (const auto& name : parser->GetSubgraphOutputTensorNames(0)) {
    const auto binding = parser->GetNetworkOutputBindingInfo(0, name);
    ArmnnTensor& t = results[name];
    t.shape = dims(binding.second);
    t.data.resize(binding.second.GetNumElements());
    out.emplace_back(binding.first, armnn::Tensor(binding.second, t.data.data()));
  }
  if (runtime->EnqueueWorkload(id, in, out) != armnn::Status::Success) throw std::runtime_error("Arm NN failed to run the network");
  return results;
}

}  // namespace nnmeter::test
