// Real CNN architectures as ONNX (torchvision layer by layer, batch 1, eval mode, random weights with a
// fixed seed) for whole-model tests and benchmarks: MobileNet v1/v2/v3, ResNet18/50, SqueezeNet 1.1,
// ShuffleNetV2, MnasNet, GoogLeNet, DenseNet121, EfficientNet-B0, ResNet34, AlexNet, VGG-11-BN.
#pragma once

#include <onnx/onnx_pb.h>

#include "nnmeter/common.h"

namespace nnmeter::zoo {

struct ZooModel {
  std::string name;
  onnx::ModelProto model;
  double flops = 0;  // conv and fully-connected multiply-adds x 2
};

std::vector<std::string> model_names();
// Builds one architecture at `resolution` x `resolution` with channel width multiplier `width` (1 = the
// published network); throws Error for an unknown name.
ZooModel build(const std::string& name, int64_t resolution = 224, double width = 1.0);

}  // namespace nnmeter::zoo
