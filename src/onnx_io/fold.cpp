#include "onnx_io/fold.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string_view>

#include "onnx_io/shape_rules.h"

namespace nnmeter::onnx_io {

namespace {

using DType = HostTensor::DType;

struct NotFoldable {};

void need(bool ok) {
  if (!ok) throw NotFoldable{};
}

int64_t attr_i(const onnx::NodeProto& n, std::string_view name, int64_t fallback) {
  const auto* a = find_attribute(n, name);
  if (!a) return fallback;
  need(a->type() == onnx::AttributeProto::INT);
  return a->i();
}

std::optional<std::vector<int64_t>> attr_ints(const onnx::NodeProto& n, std::string_view name) {
  const auto* a = find_attribute(n, name);
  if (!a) return std::nullopt;
  need(a->type() == onnx::AttributeProto::INTS);
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

// A tensor of these dims, zero-filled; dims that are negative or hold more than kMaxFoldElements are not folded.
HostTensor make(DType dtype, Shape dims) {
  int64_t total = 1;
  for (int64_t d : dims) {
    need(d >= 0 && (d == 0 || total <= kMaxFoldElements / d));
    total *= d;
  }
  need(total <= kMaxFoldElements);
  HostTensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data.assign(static_cast<size_t>(total), 0.0);
  return t;
}

size_t axis_index(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  need(axis >= -r && axis < r);
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

Shape strides_of(const Shape& dims) {
  Shape s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// The row-major successor of a multi-index into `dims` (back to all zeros after the last element).
void next_index(Shape& pos, const Shape& dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++pos[d] < dims[d]) return;
    pos[d] = 0;
  }
}

// For every element of `out` (row-major), the index of the element of a tensor of dims `in` that numpy
// broadcasting reads for it.
std::vector<size_t> broadcast_index(const Shape& in, const Shape& out) {
  const size_t lead = out.size() - in.size();
  const Shape in_strides = strides_of(in);
  std::vector<size_t> index(static_cast<size_t>(numel(out)));
  Shape pos(out.size(), 0);
  for (size_t i = 0; i < index.size(); ++i) {
    int64_t at = 0;
    for (size_t d = 0; d < in.size(); ++d)
      if (in[d] != 1) at += pos[lead + d] * in_strides[d];
    index[i] = static_cast<size_t>(at);
    next_index(pos, out);
  }
  return index;
}

HostTensor broadcast_to(const HostTensor& t, const Shape& dims) {
  HostTensor out = make(t.dtype, dims);
  const auto index = broadcast_index(t.dims, dims);
  for (size_t i = 0; i < index.size(); ++i) out.data[i] = t.data[index[i]];
  return out;
}

bool is_int_type(int64_t onnx_type) {
  using TP = onnx::TensorProto;
  return onnx_type == TP::INT64 || onnx_type == TP::INT32 || onnx_type == TP::INT16 || onnx_type == TP::INT8 ||
         onnx_type == TP::UINT8 || onnx_type == TP::UINT16 || onnx_type == TP::UINT32 || onnx_type == TP::UINT64 ||
         onnx_type == TP::BOOL;
}

class Folder {
 public:
  Folder(const onnx::NodeProto& n, const std::vector<FoldInput>& in) : n_(n), in_(in) {}

  std::vector<HostTensor> run() {
    need((n_.domain().empty() || n_.domain() == "ai.onnx") && static_cast<int>(in_.size()) == n_.input_size());
    const std::string& op = n_.op_type();
    if (op == "Constant") return {constant()};
    if (op == "Shape") return {shape()};
    if (op == "Size") return {size()};
    if (op == "Identity") return {value(0)};
    if (op == "Cast") return {cast()};
    if (op == "Gather") return {gather()};
    if (op == "Unsqueeze") return {unsqueeze()};
    if (op == "Squeeze") return {squeeze()};
    if (op == "Concat") return {concat()};
    if (op == "Slice") return {slice()};
    if (op == "Reshape") return {reshape()};
    if (op == "Transpose") return {transpose()};
    if (op == "Expand") return {broadcast_to(value(0), broadcast_or_fail(value(0).dims, ints(1)))};
    if (op == "ConstantOfShape") return {constant_of_shape()};
    if (op == "Range") return {range()};
    if (op == "Where") return {where()};
    if (op == "Min" || op == "Max" || op == "Sum") return {variadic(op)};
    if (op.rfind("Reduce", 0) == 0) return {reduce(op)};
    if (auto fn = binary_fn(op)) return {binary(*fn, is_comparison(op))};
    if (auto fn = unary_fn(op)) return {unary(*fn)};
    throw NotFoldable{};
  }

 private:
  bool present(size_t i) const { return i < in_.size() && !n_.input(static_cast<int>(i)).empty(); }

  const HostTensor& value(size_t i) const {
    need(present(i) && in_[i].value != nullptr);
    return *in_[i].value;
  }

  std::vector<int64_t> ints(size_t i) const {
    const HostTensor& t = value(i);
    need(t.dims.size() <= 1);
    return t.to_ints();
  }

  double scalar(size_t i) const {
    const HostTensor& t = value(i);
    need(t.data.size() == 1);
    return t.data[0];
  }

  static Shape broadcast_or_fail(const Shape& a, const Shape& b) {
    auto out = broadcast_shapes(a, b);
    need(out.has_value());
    return *out;
  }

  HostTensor constant() const {
    need(n_.attribute_size() == 1);
    const auto& a = n_.attribute(0);
    if (a.name() == "value") {
      try {
        return from_tensor_proto(a.t(), "Constant");
      } catch (const Error&) {
        throw NotFoldable{};
      }
    }
    if (a.name() == "value_int") return scalar_tensor(DType::I64, static_cast<double>(a.i()));
    if (a.name() == "value_float") return scalar_tensor(DType::F32, a.f());
    if (a.name() == "value_ints" || a.name() == "value_floats") {
      const bool is_int = a.name() == "value_ints";
      HostTensor t = make(is_int ? DType::I64 : DType::F32, {is_int ? a.ints_size() : a.floats_size()});
      for (size_t i = 0; i < t.data.size(); ++i)
        t.data[i] = is_int ? static_cast<double>(a.ints(static_cast<int>(i))) : a.floats(static_cast<int>(i));
      return t;
    }
    throw NotFoldable{};
  }

  static HostTensor scalar_tensor(DType dtype, double v) {
    HostTensor t = make(dtype, {});
    t.data[0] = v;
    return t;
  }

  const Shape& input_shape(size_t i) const {
    need(present(i) && (in_[i].shape != nullptr || in_[i].value != nullptr));
    return in_[i].shape ? *in_[i].shape : in_[i].value->dims;
  }

  HostTensor shape() const {
    const Shape& s = input_shape(0);
    const auto rank = static_cast<int64_t>(s.size());
    auto clamp = [&](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
    const int64_t start = clamp(attr_i(n_, "start", 0)), end = clamp(attr_i(n_, "end", rank));
    HostTensor t = make(DType::I64, {std::max<int64_t>(0, end - start)});
    for (int64_t i = start; i < end; ++i) t.data[static_cast<size_t>(i - start)] = static_cast<double>(s[static_cast<size_t>(i)]);
    return t;
  }

  HostTensor size() const { return scalar_tensor(DType::I64, static_cast<double>(numel(input_shape(0)))); }

  HostTensor cast() const {
    HostTensor t = value(0);
    const int64_t to = attr_i(n_, "to", 0);
    if (to == onnx::TensorProto::BOOL) {
      for (auto& v : t.data) v = v != 0;
      t.dtype = DType::I64;
    } else if (is_int_type(to)) {
      for (auto& v : t.data) v = std::trunc(v);
      t.dtype = DType::I64;
    } else if (to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE || to == onnx::TensorProto::FLOAT16) {
      for (auto& v : t.data) v = static_cast<float>(v);
      t.dtype = DType::F32;
    } else {
      throw NotFoldable{};
    }
    return t;
  }

  HostTensor gather() const {
    const HostTensor& data = value(0);
    const HostTensor& idx = value(1);
    need(!data.dims.empty());
    const size_t axis = axis_index(attr_i(n_, "axis", 0), data.dims.size());
    const int64_t dim = data.dims[axis];
    Shape out(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis));
    out.insert(out.end(), idx.dims.begin(), idx.dims.end());
    out.insert(out.end(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end());
    HostTensor t = make(data.dtype, out);
    const int64_t outer = numel(Shape(data.dims.begin(), data.dims.begin() + static_cast<std::ptrdiff_t>(axis)));
    const int64_t inner = numel(Shape(data.dims.begin() + static_cast<std::ptrdiff_t>(axis) + 1, data.dims.end()));
    const std::vector<int64_t> indices = idx.to_ints();
    size_t at = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (const int64_t i : indices) {
        need(i >= -dim && i < dim);
        const int64_t from = (o * dim + (i < 0 ? i + dim : i)) * inner;
        for (int64_t k = 0; k < inner; ++k) t.data[at++] = data.data[static_cast<size_t>(from + k)];
      }
    return t;
  }

  std::optional<std::vector<int64_t>> axes(size_t input) const {
    if (auto a = attr_ints(n_, "axes")) return a;
    if (present(input)) return ints(input);
    return std::nullopt;
  }

  HostTensor unsqueeze() const {
    HostTensor t = value(0);
    const auto list = axes(1);
    need(list.has_value());
    const size_t rank = t.dims.size() + list->size();
    std::vector<bool> inserted(rank, false);
    for (int64_t a : *list) {
      const size_t i = axis_index(a, rank);
      need(!inserted[i]);
      inserted[i] = true;
    }
    Shape dims;
    for (size_t i = 0, j = 0; i < rank; ++i) dims.push_back(inserted[i] ? 1 : t.dims[j++]);
    t.dims = std::move(dims);
    return t;
  }

  HostTensor squeeze() const {
    HostTensor t = value(0);
    std::vector<bool> drop(t.dims.size(), false);
    if (const auto list = axes(1)) {
      for (int64_t a : *list) {
        const size_t i = axis_index(a, t.dims.size());
        need(t.dims[i] == 1);
        drop[i] = true;
      }
    } else {
      for (size_t i = 0; i < t.dims.size(); ++i) drop[i] = t.dims[i] == 1;
    }
    Shape dims;
    for (size_t i = 0; i < t.dims.size(); ++i)
      if (!drop[i]) dims.push_back(t.dims[i]);
    t.dims = std::move(dims);
    return t;
  }

  HostTensor concat() const {
    need(n_.input_size() > 0);
    const HostTensor& first = value(0);
    need(!first.dims.empty());
    const size_t axis = axis_index(attr_i(n_, "axis", 0), first.dims.size());
    Shape out = first.dims;
    out[axis] = 0;
    for (size_t i = 0; i < in_.size(); ++i) {
      const HostTensor& t = value(i);
      need(t.dims.size() == out.size());
      for (size_t d = 0; d < out.size(); ++d) need(d == axis || t.dims[d] == out[d]);
      out[axis] += t.dims[axis];
    }
    HostTensor r = make(first.dtype, out);
    const int64_t outer = numel(Shape(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(axis)));
    size_t at = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < in_.size(); ++i) {
        const HostTensor& t = value(i);
        const int64_t block = numel(Shape(t.dims.begin() + static_cast<std::ptrdiff_t>(axis), t.dims.end()));
        for (int64_t k = 0; k < block; ++k) r.data[at++] = t.data[static_cast<size_t>(o * block + k)];
      }
    return r;
  }

  HostTensor slice() const {
    const HostTensor& data = value(0);
    const size_t rank = data.dims.size();
    std::vector<int64_t> starts, ends, ax, steps;
    if (n_.input_size() >= 3) {  // opset 10 on: the arguments are inputs
      starts = ints(1);
      ends = ints(2);
      if (present(3)) ax = ints(3);
      if (present(4)) steps = ints(4);
    } else {
      starts = attr_ints(n_, "starts").value_or(std::vector<int64_t>{});
      ends = attr_ints(n_, "ends").value_or(std::vector<int64_t>{});
      ax = attr_ints(n_, "axes").value_or(std::vector<int64_t>{});
    }
    const auto axes = slice_axes(data.dims, starts, ends, std::move(ax), std::move(steps));
    need(axes.has_value());
    const Shape &begin = axes->begin, &step = axes->step, &out = axes->out;
    HostTensor t = make(data.dtype, out);
    const Shape in_strides = strides_of(data.dims);
    Shape pos(rank, 0);
    for (double& v : t.data) {
      int64_t at = 0;
      for (size_t d = 0; d < rank; ++d) at += (begin[d] + pos[d] * step[d]) * in_strides[d];
      v = data.data[static_cast<size_t>(at)];
      next_index(pos, out);
    }
    return t;
  }

  HostTensor reshape() const {
    HostTensor t = value(0);
    auto out = reshape_shape(t.dims, ints(1), attr_i(n_, "allowzero", 0) != 0, kMaxFoldElements);
    need(out.has_value());
    t.dims = std::move(*out);
    return t;
  }

  HostTensor transpose() const {
    const HostTensor& data = value(0);
    const size_t rank = data.dims.size();
    std::vector<int64_t> perm(rank);
    for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
    if (auto p = attr_ints(n_, "perm")) perm = *p;
    need(perm.size() == rank);
    Shape out(rank), in_strides = strides_of(data.dims), from(rank);  // from: the input stride of each output axis
    std::vector<bool> seen(rank, false);
    for (size_t i = 0; i < rank; ++i) {
      const size_t a = axis_index(perm[i], rank);
      need(!seen[a]);
      seen[a] = true;
      out[i] = data.dims[a];
      from[i] = in_strides[a];
    }
    HostTensor t = make(data.dtype, out);
    Shape pos(rank, 0);
    for (double& v : t.data) {
      int64_t at = 0;
      for (size_t d = 0; d < rank; ++d) at += pos[d] * from[d];
      v = data.data[static_cast<size_t>(at)];
      next_index(pos, out);
    }
    return t;
  }

  HostTensor constant_of_shape() const {
    const std::vector<int64_t> dims = ints(0);
    HostTensor fill = scalar_tensor(DType::F32, 0.0);
    if (const auto* a = find_attribute(n_, "value")) {
      try {
        fill = from_tensor_proto(a->t(), "ConstantOfShape");
      } catch (const Error&) {
        throw NotFoldable{};
      }
      need(fill.data.size() == 1);
    }
    HostTensor t = make(fill.dtype, Shape(dims.begin(), dims.end()));
    std::fill(t.data.begin(), t.data.end(), fill.data[0]);
    return t;
  }

  HostTensor range() const {
    const double start = scalar(0), limit = scalar(1), delta = scalar(2);
    need(delta != 0 && std::isfinite(start) && std::isfinite(limit) && std::isfinite(delta));
    const double count = std::max(0.0, std::ceil((limit - start) / delta));
    need(count <= static_cast<double>(kMaxFoldElements));
    HostTensor t = make(value(0).dtype, {static_cast<int64_t>(count)});
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = start + static_cast<double>(i) * delta;
    return t;
  }

  HostTensor where() const {
    const HostTensor &c = value(0), &x = value(1), &y = value(2);
    const Shape out = broadcast_or_fail(broadcast_or_fail(c.dims, x.dims), y.dims);
    const HostTensor bc = broadcast_to(c, out), bx = broadcast_to(x, out), by = broadcast_to(y, out);
    HostTensor t = make(x.dtype, out);
    for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = bc.data[i] != 0 ? bx.data[i] : by.data[i];
    return t;
  }

  using Binary = std::function<double(double, double, bool)>;  // (a, b, integer operands)

  static bool is_comparison(const std::string& op) {
    return op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
           op == "And" || op == "Or" || op == "Xor";
  }

  std::optional<Binary> binary_fn(const std::string& op) const {
    if (op == "Add") return [](double a, double b, bool) { return a + b; };
    if (op == "Sub") return [](double a, double b, bool) { return a - b; };
    if (op == "Mul") return [](double a, double b, bool) { return a * b; };
    if (op == "Div")
      return [](double a, double b, bool integer) {
        need(!integer || b != 0);
        return integer ? std::trunc(a / b) : a / b;
      };
    if (op == "Mod") {
      const bool fmod = attr_i(n_, "fmod", 0) != 0;
      return [fmod](double a, double b, bool) {
        need(b != 0);
        const double r = std::fmod(a, b);
        return fmod || r == 0 || (r < 0) == (b < 0) ? r : r + b;  // fmod = 0: the divisor's sign, as numpy
      };
    }
    if (op == "Pow") return [](double a, double b, bool) { return std::pow(a, b); };
    if (op == "Equal") return [](double a, double b, bool) { return static_cast<double>(a == b); };
    if (op == "Less") return [](double a, double b, bool) { return static_cast<double>(a < b); };
    if (op == "Greater") return [](double a, double b, bool) { return static_cast<double>(a > b); };
    if (op == "LessOrEqual") return [](double a, double b, bool) { return static_cast<double>(a <= b); };
    if (op == "GreaterOrEqual") return [](double a, double b, bool) { return static_cast<double>(a >= b); };
    if (op == "And") return [](double a, double b, bool) { return static_cast<double>(a != 0 && b != 0); };
    if (op == "Or") return [](double a, double b, bool) { return static_cast<double>(a != 0 || b != 0); };
    if (op == "Xor") return [](double a, double b, bool) { return static_cast<double>((a != 0) != (b != 0)); };
    return std::nullopt;
  }

  static HostTensor combine(const HostTensor& a, const HostTensor& b, const Binary& fn, bool comparison) {
    const Shape out = broadcast_or_fail(a.dims, b.dims);
    const auto ia = broadcast_index(a.dims, out), ib = broadcast_index(b.dims, out);
    const bool integer = a.dtype == DType::I64 && b.dtype == DType::I64;
    HostTensor t = make(comparison ? DType::I64 : a.dtype, out);
    for (size_t i = 0; i < t.data.size(); ++i) {
      const double v = fn(a.data[ia[i]], b.data[ib[i]], integer);
      need(std::isfinite(v));
      t.data[i] = t.dtype == DType::F32 ? static_cast<float>(v) : v;
    }
    return t;
  }

  HostTensor binary(const Binary& fn, bool comparison) const {
    need(in_.size() == 2);
    return combine(value(0), value(1), fn, comparison);
  }

  HostTensor variadic(const std::string& op) const {
    need(!in_.empty());
    const Binary fn = op == "Min"   ? Binary([](double a, double b, bool) { return std::min(a, b); })
                      : op == "Max" ? Binary([](double a, double b, bool) { return std::max(a, b); })
                                    : Binary([](double a, double b, bool) { return a + b; });
    HostTensor t = value(0);
    for (size_t i = 1; i < in_.size(); ++i) t = combine(t, value(i), fn, false);
    return t;
  }

  std::optional<std::function<double(double)>> unary_fn(const std::string& op) const {
    if (op == "Neg") return [](double v) { return -v; };
    if (op == "Abs") return [](double v) { return std::abs(v); };
    if (op == "Floor") return [](double v) { return std::floor(v); };
    if (op == "Ceil") return [](double v) { return std::ceil(v); };
    if (op == "Sqrt") return [](double v) { return std::sqrt(v); };
    if (op == "Reciprocal") return [](double v) { return 1 / v; };
    if (op == "Not") return [](double v) { return static_cast<double>(v == 0); };
    if (op == "Sign") return [](double v) { return static_cast<double>((v > 0) - (v < 0)); };
    return std::nullopt;
  }

  HostTensor unary(const std::function<double(double)>& fn) const {
    HostTensor t = value(0);
    for (auto& v : t.data) {
      v = fn(v);
      need(std::isfinite(v));
      if (t.dtype == DType::F32) v = static_cast<float>(v);
    }
    return t;
  }

  HostTensor reduce(const std::string& op) const {
    const HostTensor& data = value(0);
    const size_t rank = data.dims.size();
    const auto list = axes(1);
    const bool keep = attr_i(n_, "keepdims", 1) != 0;
    if ((!list || list->empty()) && attr_i(n_, "noop_with_empty_axes", 0) != 0) return data;
    std::vector<bool> reduced(rank, !list || list->empty());
    if (list)
      for (int64_t a : *list) reduced[axis_index(a, rank)] = true;
    double init = 0;
    std::function<double(double, double)> fn;
    if (op == "ReduceSum") {
      fn = std::plus<>();
    } else if (op == "ReduceProd") {
      fn = std::multiplies<>();
      init = 1;
    } else if (op == "ReduceMax") {
      fn = [](double a, double b) { return std::max(a, b); };
      init = -INFINITY;
    } else if (op == "ReduceMin") {
      fn = [](double a, double b) { return std::min(a, b); };
      init = INFINITY;
    } else {
      throw NotFoldable{};
    }
    Shape kept;  // the output with reduced axes as 1 (keepdims' shape)
    for (size_t d = 0; d < rank; ++d) kept.push_back(reduced[d] ? 1 : data.dims[d]);
    HostTensor t = make(data.dtype, kept);
    std::fill(t.data.begin(), t.data.end(), init);
    const Shape out_strides = strides_of(kept);
    Shape pos(rank, 0);
    for (double v : data.data) {
      int64_t at = 0;
      for (size_t d = 0; d < rank; ++d)
        if (!reduced[d]) at += pos[d] * out_strides[d];
      t.data[static_cast<size_t>(at)] = fn(t.data[static_cast<size_t>(at)], v);
      next_index(pos, data.dims);
    }
    need(std::all_of(t.data.begin(), t.data.end(), [](double v) { return std::isfinite(v); }));
    if (!keep) {
      Shape dims;
      for (size_t d = 0; d < rank; ++d)
        if (!reduced[d]) dims.push_back(data.dims[d]);
      t.dims = std::move(dims);
    }
    return t;
  }

  const onnx::NodeProto& n_;
  const std::vector<FoldInput>& in_;
};

}  // namespace

const onnx::AttributeProto* find_attribute(const onnx::NodeProto& node, std::string_view name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<std::vector<HostTensor>> fold_node(const onnx::NodeProto& node, const std::vector<FoldInput>& inputs) {
  try {
    std::vector<HostTensor> outputs = Folder(node, inputs).run();
    if (node.output_size() != static_cast<int>(outputs.size())) return std::nullopt;
    for (const auto& t : outputs)
      if (t.numel() > kMaxFoldElements) return std::nullopt;
    return outputs;
  } catch (const NotFoldable&) {
    return std::nullopt;
  }
}

}  // namespace nnmeter::onnx_io
