// Load-time folding of exporters' shape arithmetic (onnx_io/fold.h), checked against hand-computed cases,
// including the ones real exports hit: INT64_MAX slice ends, scalars kept scalars, Div of shape values.
#include <gtest/gtest.h>

#include <limits>

#include "onnx_io/fold.h"

namespace nnmeter {
namespace {

using onnx_io::fold_node;
using onnx_io::FoldInput;
using onnx_io::HostTensor;
using DType = HostTensor::DType;

HostTensor ints(Shape dims, std::vector<double> data) { return {DType::I64, std::move(dims), std::move(data)}; }
HostTensor floats(Shape dims, std::vector<double> data) { return {DType::F32, std::move(dims), std::move(data)}; }

onnx::NodeProto node(const std::string& op, int inputs, int outputs = 1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  for (int i = 0; i < inputs; ++i) n.add_input("in" + std::to_string(i));
  for (int i = 0; i < outputs; ++i) n.add_output("out" + std::to_string(i));
  return n;
}

void add_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& values) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto v : values) a->add_ints(v);
}

void add_int(onnx::NodeProto& n, const std::string& name, int64_t value) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

std::vector<FoldInput> values(const std::vector<const HostTensor*>& ts) {
  std::vector<FoldInput> out;
  for (const auto* t : ts) out.push_back({t, t ? &t->dims : nullptr});
  return out;
}

HostTensor fold_one(const onnx::NodeProto& n, const std::vector<FoldInput>& in) {
  auto out = fold_node(n, in);
  if (!out) throw std::runtime_error(n.op_type() + " did not fold");
  EXPECT_EQ(out->size(), 1u);
  return out->at(0);
}

// torchvision's ShuffleNetV2 `chunk`: Shape → Gather → Add → Div → Slice.
TEST(Fold, ShuffleNetChunkArithmetic) {
  const Shape x = {1, 116, 28, 28};
  const HostTensor shape = fold_one(node("Shape", 1), {{nullptr, &x}});
  EXPECT_EQ(shape.dims, (Shape{4}));
  EXPECT_EQ(shape.to_ints(), (std::vector<int64_t>{1, 116, 28, 28}));
  const HostTensor one = ints({1}, {1});
  const HostTensor channels = fold_one(node("Gather", 2), values({&shape, &one}));
  EXPECT_EQ(channels.to_ints(), (std::vector<int64_t>{116}));
  const HostTensor scalar_index = ints({}, {1});
  EXPECT_TRUE(fold_one(node("Gather", 2), values({&shape, &scalar_index})).dims.empty()) << "a scalar index gives a scalar";
  const HostTensor two = ints({}, {2}), seven = ints({}, {7});
  EXPECT_EQ(fold_one(node("Div", 2), values({&seven, &two})).data, (std::vector<double>{3})) << "integer division truncates";
  const HostTensor half = fold_one(node("Div", 2), values({&channels, &two}));
  EXPECT_EQ(half.dims, (Shape{1}));
  EXPECT_EQ(half.to_ints(), (std::vector<int64_t>{58}));
  const HostTensor zero = ints({}, {0});
  EXPECT_FALSE(fold_node(node("Div", 2), values({&seven, &zero}))) << "left to the runtime, not a crash";
}

// torch.roll and "to the end" slices write INT64_MAX, which a double holds as 2^63: it must saturate.
TEST(Fold, SliceWithInt64MaxEndsAndNegativeSteps) {
  const HostTensor data = ints({6}, {0, 1, 2, 3, 4, 5});
  const HostTensor starts = ints({1}, {-2}), ends = ints({1}, {static_cast<double>(std::numeric_limits<int64_t>::max())});
  EXPECT_EQ(fold_one(node("Slice", 3), values({&data, &starts, &ends})).data, (std::vector<double>{4, 5}));
  const HostTensor from = ints({1}, {-1}), to = ints({1}, {static_cast<double>(std::numeric_limits<int64_t>::min())});
  const HostTensor axes = ints({1}, {0}), steps = ints({1}, {-2});
  EXPECT_EQ(fold_one(node("Slice", 5), values({&data, &from, &to, &axes, &steps})).data, (std::vector<double>{5, 3, 1}));
  const HostTensor zero = ints({1}, {0}), six = ints({1}, {6}), last = ints({1}, {5});
  const HostTensor huge_step = ints({1}, {static_cast<double>(std::numeric_limits<int64_t>::max())});
  EXPECT_EQ(fold_one(node("Slice", 5), values({&data, &zero, &six, &axes, &huge_step})).data, (std::vector<double>{0}));
  const HostTensor lowest_step = ints({1}, {static_cast<double>(std::numeric_limits<int64_t>::min())});
  EXPECT_EQ(fold_one(node("Slice", 5), values({&data, &last, &to, &axes, &lowest_step})).data, (std::vector<double>{5}));
  const HostTensor empty = ints({0}, {});
  EXPECT_EQ(fold_one(node("Slice", 5), values({&empty, &from, &to, &axes, &steps})).dims, (Shape{0}));
  EXPECT_EQ(ends.to_ints().at(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(to.to_ints().at(0), std::numeric_limits<int64_t>::min());
}

// A ViT's class token expanded to the batch, and the pads a Swin window computes.
TEST(Fold, ExpandConcatTransposeReshape) {
  const HostTensor token = floats({1, 1, 4}, {0.5, 1.5, 2.5, 3.5});
  const HostTensor to = ints({3}, {1, -1, -1});
  EXPECT_FALSE(fold_node(node("Expand", 2), values({&token, &to}))) << "-1 is not a size Expand knows";
  const HostTensor batch = ints({3}, {2, 1, 1});
  const HostTensor expanded = fold_one(node("Expand", 2), values({&token, &batch}));
  EXPECT_EQ(expanded.dims, (Shape{2, 1, 4}));
  EXPECT_EQ(expanded.data, (std::vector<double>{0.5, 1.5, 2.5, 3.5, 0.5, 1.5, 2.5, 3.5}));

  auto concat = node("Concat", 2);
  add_int(concat, "axis", 1);
  const HostTensor a = ints({2, 1}, {1, 2}), b = ints({2, 2}, {3, 4, 5, 6});
  const HostTensor c = fold_one(concat, values({&a, &b}));
  EXPECT_EQ(c.dims, (Shape{2, 3}));
  EXPECT_EQ(c.data, (std::vector<double>{1, 3, 4, 2, 5, 6}));

  auto transpose = node("Transpose", 1);
  add_ints(transpose, "perm", {1, 0});
  const HostTensor t = fold_one(transpose, values({&c}));
  EXPECT_EQ(t.dims, (Shape{3, 2}));
  EXPECT_EQ(t.data, (std::vector<double>{1, 2, 3, 5, 4, 6}));

  const HostTensor target = ints({2}, {0, -1});
  const HostTensor r = fold_one(node("Reshape", 2), values({&t, &target}));
  EXPECT_EQ(r.dims, (Shape{3, 2}));
  const HostTensor bad = ints({1}, {5});
  EXPECT_FALSE(fold_node(node("Reshape", 2), values({&t, &bad}))) << "6 elements do not reshape to 5";
}

TEST(Fold, UnsqueezeSqueezeRangeWhereReduce) {
  const HostTensor s = ints({}, {7});
  const HostTensor axes = ints({1}, {0});
  const HostTensor u = fold_one(node("Unsqueeze", 2), values({&s, &axes}));
  EXPECT_EQ(u.dims, (Shape{1}));
  EXPECT_TRUE(fold_one(node("Squeeze", 2), values({&u, &axes})).dims.empty());

  const HostTensor start = ints({}, {1}), limit = ints({}, {8}), delta = ints({}, {3});
  EXPECT_EQ(fold_one(node("Range", 3), values({&start, &limit, &delta})).data, (std::vector<double>{1, 4, 7}));
  const HostTensor huge = ints({}, {1e12});
  EXPECT_FALSE(fold_node(node("Range", 3), values({&start, &huge, &delta}))) << "too large to fold";

  const HostTensor cond = ints({3}, {1, 0, 1}), x = ints({3}, {1, 2, 3}), y = ints({}, {-1});
  EXPECT_EQ(fold_one(node("Where", 3), values({&cond, &x, &y})).data, (std::vector<double>{1, -1, 3}));

  auto prod = node("ReduceProd", 1);
  add_int(prod, "keepdims", 0);
  const HostTensor dims = ints({2, 2}, {2, 3, 4, 5});
  const HostTensor p = fold_one(prod, values({&dims}));
  EXPECT_TRUE(p.dims.empty());
  EXPECT_EQ(p.data, (std::vector<double>{120}));
}

TEST(Fold, UnknownInputsAndOpsAreLeftAlone) {
  const HostTensor a = ints({1}, {1});
  EXPECT_FALSE(fold_node(node("Add", 2), values({&a, nullptr})));
  EXPECT_FALSE(fold_node(node("Conv", 2), values({&a, &a})));
  EXPECT_FALSE(fold_node(node("Shape", 1), {FoldInput{}}));
  onnx::NodeProto custom = node("Add", 2);
  custom.set_domain("com.example");
  EXPECT_FALSE(fold_node(custom, values({&a, &a})));
}

}  // namespace
}  // namespace nnmeter
