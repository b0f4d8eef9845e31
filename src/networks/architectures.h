// The reference architectures as ONNX graphs written the way torch.onnx.export writes torchvision's models
// (opset 13, eval mode, constant folding: BatchNormalization folded into the conv before it, SiLU as
// Sigmoid·Mul, hardswish as HardSigmoid·Mul, chunk as a Shape → Gather → Div → Slice chain, AvgPool behind a
// Pad), batch 1, fixed-seed random weights: MobileNet v1/v2/v3, ResNet18/34/50, SqueezeNet 1.1, ShuffleNetV2,
// MnasNet, GoogLeNet, DenseNet121, EfficientNet-B0, AlexNet, VGG-11-BN; and two NAS search spaces (Once-for-all
// MobileNetV3, ProxylessNAS). A Python test exports the torchvision counterparts and checks that detection finds
// the same kernels with the same configs in both.
#pragma once

#include <onnx/onnx_pb.h>

#include <optional>

#include "nnmeter/common.h"

namespace nnmeter::networks {

struct Network {
  std::string name;
  onnx::ModelProto model;
  double flops = 0;  // conv and fully-connected multiply-adds x 2
};

std::vector<std::string> architectures();
std::vector<std::string> spaces();  // the NAS search spaces, built like an architecture
// Builds one architecture or space at `resolution` x `resolution` with channel width multiplier `width` (1 = the
// published network); with `variant`, its per-layer random variant of that seed (LayerBuilder::set_variant);
// without `weights`, initializers without data (GraphBuilder::set_weights). Throws Error for an unknown name, a
// width <= 0 or a resolution the network cannot take.
Network build(const std::string& name, int64_t resolution = 224, double width = 1.0,
              std::optional<uint64_t> variant = std::nullopt, bool weights = true);

}  // namespace nnmeter::networks
