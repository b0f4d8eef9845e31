// Fusion-rule testing: operators (single ops built as ONNX models) and test cases that decide whether a
// backend fuses two operators.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "nnmeter/common.h"

namespace nnmeter {

class Operator {
 public:
  virtual ~Operator() = default;
  virtual Shape output_shape(const Shape& input_shape) const = 0;  // shapes without batch
  virtual bool is_two_inputs() const = 0;
  // A one-operator ONNX model for `input_shape`, serialized.
  virtual std::string build_onnx(const Shape& input_shape, int batch_size) const = 0;
};

struct OperatorInfo {
  std::string name;
  bool customized = false;
  std::string implement = "onnx";
  std::function<std::unique_ptr<Operator>(const Json& ruletest_config)> create;
};

// A model a test case wants profiled.
struct TestCaseModel {
  fs::path model;
  std::vector<Shape> shapes;
};

class TestCase {
 public:
  virtual ~TestCase() = default;
  // Writes the test models under `directory`; returns them by name.
  virtual std::map<std::string, TestCaseModel> generate_testcase(const fs::path& directory, int batch_size) = 0;
  // Decides the rule from every model's latency in ms: at least {"obey": bool}.
  virtual Json run_test(const std::map<std::string, double>& latencies_ms) = 0;
  virtual std::vector<std::string> depends_on() const = 0;
};

struct TestCaseInfo {
  std::string name;
  bool customized = false;
  std::string implement = "onnx";
  std::function<std::unique_ptr<TestCase>(const Json& ruletest_config)> create;
};


}  // namespace nnmeter
