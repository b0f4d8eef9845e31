// Runs a .tflite file through Arm NN's TFLite parser on its CpuRef backend: an independent reader and
// runtime for the files the TFLite export writes (Debian ships no TFLite interpreter).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "nnmeter/common.h"

namespace nnmeter::test {

struct ArmnnTensor {
  std::vector<unsigned> shape;
  std::vector<float> data;
};

// Parses, optimizes for CpuRef and runs `tflite_bytes` once on the given inputs (by tensor name, in the
// file's own layout); returns every output by tensor name. Throws std::exception on any Arm NN error.
std::map<std::string, ArmnnTensor> run_armnn(const std::string& tflite_bytes, const std::map<std::string, std::vector<float>>& inputs);
// The file's input tensors: name -> shape.
std::map<std::string, std::vector<unsigned>> armnn_inputs(const std::string& tflite_bytes);

}  // namespace nnmeter::test
