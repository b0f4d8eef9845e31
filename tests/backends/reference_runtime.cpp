#include "backends/reference_runtime.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "onnx_io/shape_rules.h"

namespace nnmeter::test {

namespace {

using T = RefTensor;

int64_t count(const Shape& s) { return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>()); }

Shape strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

T from_proto(const onnx::TensorProto& p) {
  T t;
  t.shape.assign(p.dims().begin(), p.dims().end());
  const auto n = static_cast<size_t>(count(t.shape));
  t.data.resize(n);
  if (p.data_type() == onnx::TensorProto::FLOAT) {
    if (p.has_raw_data()) {
      std::vector<float> f(n);
      std::memcpy(f.data(), p.raw_data().data(), n * 4);
      std::copy(f.begin(), f.end(), t.data.begin());
    } else {
      std::copy(p.float_data().begin(), p.float_data().end(), t.data.begin());
    }
  } else if (p.data_type() == onnx::TensorProto::INT64) {
    if (p.has_raw_data()) {
      std::vector<int64_t> v(n);
      std::memcpy(v.data(), p.raw_data().data(), n * 8);
      std::copy(v.begin(), v.end(), t.data.begin());
    } else {
      std::copy(p.int64_data().begin(), p.int64_data().end(), t.data.begin());
    }
  } else {
    throw std::runtime_error("reference: unsupported tensor type");
  }
  return t;
}

struct Node {
  const onnx::NodeProto& n;
  int64_t i(const std::string& name, int64_t d) const {
    for (const auto& a : n.attribute())
      if (a.name() == name) return a.i();
    return d;
  }
  float f(const std::string& name, float d) const {
    for (const auto& a : n.attribute())
      if (a.name() == name) return a.f();
    return d;
  }
  std::vector<int64_t> ints(const std::string& name) const {
    for (const auto& a : n.attribute())
      if (a.name() == name) return {a.ints().begin(), a.ints().end()};
    return {};
  }
};

// Calls fn(index vector) for every position of `shape`.
template <class Fn>
void for_each_index(const Shape& shape, Fn fn) {
  Shape idx(shape.size(), 0);
  for (int64_t k = 0, n = count(shape); k < n; ++k) {
    fn(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

T broadcast(const T& a, const T& b, double (*fn)(double, double)) {
  const size_t r = std::max(a.shape.size(), b.shape.size());
  Shape pa(r - a.shape.size(), 1), pb(r - b.shape.size(), 1), out(r);
  pa.insert(pa.end(), a.shape.begin(), a.shape.end());
  pb.insert(pb.end(), b.shape.begin(), b.shape.end());
  for (size_t i = 0; i < r; ++i) out[i] = std::max(pa[i], pb[i]);
  const Shape sa = strides(pa), sb = strides(pb);
  T o{out, {}};
  for_each_index(out, [&](const Shape& idx) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < r; ++d) {
      ia += (pa[d] == 1 ? 0 : idx[d]) * sa[d];
      ib += (pb[d] == 1 ? 0 : idx[d]) * sb[d];
    }
    o.data.push_back(fn(a.data[static_cast<size_t>(ia)], b.data[static_cast<size_t>(ib)]));
  });
  return o;
}

T map(const T& x, const std::function<double(double)>& fn) {
  T o = x;
  for (auto& v : o.data) v = fn(v);
  return o;
}

// Conv and pooling share the window walk; `init`/`acc`/`fin` define the reduction.
T conv(const Node& n, const T& x, const T& w, const T* b) {
  const int64_t g = n.i("group", 1);
  const auto st = n.ints("strides"), pads = n.ints("pads"), dil = n.ints("dilations");
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t M = w.shape[0], KH = w.shape[2], KW = w.shape[3], cg = C / g, mg = M / g;
  const int64_t sh = st.empty() ? 1 : st[0], sw = st.empty() ? 1 : st[1];
  const int64_t dh = dil.empty() ? 1 : dil[0], dw = dil.empty() ? 1 : dil[1];
  const int64_t pt = pads.empty() ? 0 : pads[0], pl = pads.empty() ? 0 : pads[1];
  const int64_t pb = pads.empty() ? 0 : pads[2], pr = pads.empty() ? 0 : pads[3];
  const int64_t OH = (H + pt + pb - (KH - 1) * dh - 1) / sh + 1, OW = (W + pl + pr - (KW - 1) * dw - 1) / sw + 1;
  T o{{N, M, OH, OW}, std::vector<double>(static_cast<size_t>(N * M * OH * OW))};
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = b ? b->data[static_cast<size_t>(m)] : 0.0;
          const int64_t grp = m / mg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += x.data[static_cast<size_t>(((nn * C + grp * cg + c) * H + ih) * W + iw)] *
                     w.data[static_cast<size_t>(((m * cg + c) * KH + kh) * KW + kw)];
              }
          o.data[static_cast<size_t>(((nn * M + m) * OH + oh) * OW + ow)] = s;
        }
  return o;
}

T pool(const Node& n, const T& x, bool max, bool global) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  auto ks = global ? std::vector<int64_t>{H, W} : n.ints("kernel_shape");
  auto st = global ? std::vector<int64_t>{1, 1} : n.ints("strides");
  auto pads = global ? std::vector<int64_t>{} : n.ints("pads");
  if (st.empty()) st = {1, 1};
  if (pads.empty()) pads = {0, 0, 0, 0};
  const bool ceil = n.i("ceil_mode", 0), include = n.i("count_include_pad", 0);
  auto od = [&](int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1) {
    const int64_t span = in + p0 + p1 - k;
    int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= in + p0) --o;
    return o;
  };
  const int64_t OH = od(H, ks[0], st[0], pads[0], pads[2]), OW = od(W, ks[1], st[1], pads[1], pads[3]);
  T o{{N, C, OH, OW}, {}};
  for (int64_t nn = 0; nn < N; ++nn)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = max ? -INFINITY : 0.0;
          int64_t cnt = 0;
          for (int64_t kh = 0; kh < ks[0]; ++kh)
            for (int64_t kw = 0; kw < ks[1]; ++kw) {
              const int64_t ih = oh * st[0] - pads[0] + kh, iw = ow * st[1] - pads[1] + kw;
              const bool inside_padded = ih < H + pads[2] && iw < W + pads[3];
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                if (include && inside_padded) ++cnt;
                continue;
              }
              const double v = x.data[static_cast<size_t>(((nn * C + c) * H + ih) * W + iw)];
              acc = max ? std::max(acc, v) : acc + v;
              ++cnt;
            }
          o.data.push_back(max ? acc : acc / static_cast<double>(cnt));
        }
  return o;
}

T transpose(const T& x, const std::vector<int64_t>& perm) {
  Shape out;
  for (auto p : perm) out.push_back(x.shape[static_cast<size_t>(p)]);
  const Shape s = strides(x.shape);
  T o{out, {}};
  for_each_index(out, [&](const Shape& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < perm.size(); ++d) off += idx[d] * s[static_cast<size_t>(perm[d])];
    o.data.push_back(x.data[static_cast<size_t>(off)]);
  });
  return o;
}

T concat(const std::vector<const T*>& xs, int64_t axis) {
  const auto a = static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(xs[0]->shape.size()) : axis);
  Shape out = xs[0]->shape;
  out[a] = 0;
  for (const auto* x : xs) out[a] += x->shape[a];
  const int64_t outer = count(Shape(out.begin(), out.begin() + static_cast<long>(a)));
  T o{out, {}};
  for (int64_t i = 0; i < outer; ++i)
    for (const auto* x : xs) {
      const int64_t chunk = count(x->shape) / std::max<int64_t>(outer, 1);
      o.data.insert(o.data.end(), x->data.begin() + i * chunk, x->data.begin() + (i + 1) * chunk);
    }
  return o;
}

T slice_axis(const T& x, size_t axis, int64_t start, int64_t len) {
  Shape out = x.shape;
  out[axis] = len;
  const Shape s = strides(x.shape);
  T o{out, {}};
  for_each_index(out, [&](const Shape& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] + (d == axis ? start : 0)) * s[d];
    o.data.push_back(x.data[static_cast<size_t>(off)]);
  });
  return o;
}

// Splits `shape` at the dims [from, to) into outer x middle x inner counts.
std::array<int64_t, 3> split_at(const Shape& shape, size_t from, size_t to) {
  return {count(Shape(shape.begin(), shape.begin() + static_cast<long>(from))),
          count(Shape(shape.begin() + static_cast<long>(from), shape.begin() + static_cast<long>(to))),
          count(Shape(shape.begin() + static_cast<long>(to), shape.end()))};
}

size_t axis_of(int64_t axis, size_t rank) { return static_cast<size_t>(axis < 0 ? axis + static_cast<int64_t>(rank) : axis); }

// Mean over `axes` (all when empty).
T reduce_mean(const T& x, std::vector<int64_t> axes, bool keepdims) {
  std::vector<bool> reduced(x.shape.size(), axes.empty());
  for (auto a : axes) reduced[axis_of(a, x.shape.size())] = true;
  Shape kept;
  for (size_t d = 0; d < x.shape.size(); ++d) kept.push_back(reduced[d] ? 1 : x.shape[d]);
  const Shape ks = strides(kept);
  T o{kept, std::vector<double>(static_cast<size_t>(count(kept)), 0.0)};
  size_t k = 0;
  for_each_index(x.shape, [&](const Shape& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (reduced[d] ? 0 : idx[d]) * ks[d];
    o.data[static_cast<size_t>(off)] += x.data[k++];
  });
  const double n = static_cast<double>(count(x.shape)) / static_cast<double>(count(kept));
  for (auto& v : o.data) v /= n;
  if (!keepdims) {
    Shape s;
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (!reduced[d]) s.push_back(x.shape[d]);
    o.shape = s;
  }
  return o;
}

// numpy matmul: 1-D operands gain a dimension, batch dimensions broadcast.
T matmul(T a, T b) {
  const bool va = a.shape.size() == 1, vb = b.shape.size() == 1;
  if (va) a.shape.insert(a.shape.begin(), 1);
  if (vb) b.shape.push_back(1);
  const int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  const size_t r = std::max(a.shape.size(), b.shape.size());
  Shape pa(r - a.shape.size(), 1), pb(r - b.shape.size(), 1), batch(r - 2);
  pa.insert(pa.end(), a.shape.begin(), a.shape.end());
  pb.insert(pb.end(), b.shape.begin(), b.shape.end());
  for (size_t d = 0; d + 2 < r; ++d) batch[d] = std::max(pa[d], pb[d]);
  Shape out = batch;
  if (!va) out.push_back(M);
  if (!vb) out.push_back(N);
  T o{out, {}};
  const Shape sa = strides(Shape(pa.begin(), pa.end() - 2)), sb = strides(Shape(pb.begin(), pb.end() - 2));
  for_each_index(batch, [&](const Shape& idx) {
    int64_t ia = 0, ib = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      ia += (pa[d] == 1 ? 0 : idx[d]) * sa[d];
      ib += (pb[d] == 1 ? 0 : idx[d]) * sb[d];
    }
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += a.data[static_cast<size_t>(ia * M * K + i * K + k)] * b.data[static_cast<size_t>(ib * K * N + k * N + j)];
        o.data.push_back(s);
      }
  });
  return o;
}

}  // namespace

std::map<std::string, RefTensor> run_reference(const onnx::ModelProto& model, const std::vector<Tensor>& inputs) {
  std::map<std::string, T> v;
  for (const auto& init : model.graph().initializer()) v[init.name()] = from_proto(init);
  for (const auto& in : inputs) v[in.name] = T{in.shape, {in.data.begin(), in.data.end()}};
  auto get = [&](const std::string& name) -> const T& {
    const auto it = v.find(name);
    if (it == v.end()) throw std::runtime_error("reference: missing tensor " + name);
    return it->second;
  };
  for (const auto& np : model.graph().node()) {
    const Node n{np};
    const auto& op = np.op_type();
    auto in = [&](int i) -> const T& { return get(np.input(i)); };
    auto has = [&](int i) { return np.input_size() > i && !np.input(i).empty(); };
    T out;
    if (op == "Conv") out = conv(n, in(0), in(1), has(2) ? &in(2) : nullptr);
    else if (op == "BatchNormalization") {
      const T& x = in(0);
      out = x;
      const int64_t C = x.shape[1], inner = count(x.shape) / x.shape[0] / C;
      const double eps = n.f("epsilon", 1e-5f);
      for (size_t k = 0; k < out.data.size(); ++k) {
        const auto c = static_cast<size_t>((static_cast<int64_t>(k) / inner) % C);
        out.data[k] = (x.data[k] - in(3).data[c]) / std::sqrt(in(4).data[c] + eps) * in(1).data[c] + in(2).data[c];
      }
    } else if (op == "Relu") out = map(in(0), [](double x) { return std::max(x, 0.0); });
    else if (op == "Clip") {
      const double lo = has(1) ? in(1).data[0] : -INFINITY, hi = has(2) ? in(2).data[0] : INFINITY;
      out = map(in(0), [=](double x) { return std::min(hi, std::max(lo, x)); });
    } else if (op == "Sigmoid") out = map(in(0), [](double x) { return 1 / (1 + std::exp(-x)); });
    else if (op == "HardSigmoid") {
      const double a = n.f("alpha", 0.2f), b = n.f("beta", 0.5f);
      out = map(in(0), [=](double x) { return std::clamp(a * x + b, 0.0, 1.0); });
    } else if (op == "HardSwish") out = map(in(0), [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); });
    else if (op == "Tanh") out = map(in(0), [](double x) { return std::tanh(x); });
    else if (op == "Sqrt") out = map(in(0), [](double x) { return std::sqrt(x); });
    else if (op == "Erf") out = map(in(0), [](double x) { return std::erf(x); });
    else if (op == "Pow") out = broadcast(in(0), in(1), [](double a, double b) { return std::pow(a, b); });
    else if (op == "Add") out = broadcast(in(0), in(1), [](double a, double b) { return a + b; });
    else if (op == "Sub") out = broadcast(in(0), in(1), [](double a, double b) { return a - b; });
    else if (op == "Mul") out = broadcast(in(0), in(1), [](double a, double b) { return a * b; });
    else if (op == "Div") out = broadcast(in(0), in(1), [](double a, double b) { return a / b; });
    else if (op == "MaxPool") out = pool(n, in(0), true, false);
    else if (op == "AveragePool") out = pool(n, in(0), false, false);
    else if (op == "GlobalAveragePool") out = pool(n, in(0), false, true);
    else if (op == "ReduceMean") {
      std::vector<int64_t> axes = n.ints("axes");
      if (has(1)) axes.assign(in(1).data.begin(), in(1).data.end());
      out = reduce_mean(in(0), axes, n.i("keepdims", 1));
    } else if (op == "Flatten") {
      out = in(0);
      out.shape = {out.shape[0], count(out.shape) / out.shape[0]};
    } else if (op == "Gemm") {
      const T &a = in(0), &w = in(1);
      const bool tb = n.i("transB", 0);
      const int64_t M = a.shape[0], K = a.shape[1], N = tb ? w.shape[0] : w.shape[1];
      out = T{{M, N}, {}};
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double s = has(2) ? in(2).data[static_cast<size_t>(in(2).data.size() == static_cast<size_t>(N) ? j : 0)] : 0;
          for (int64_t k = 0; k < K; ++k)
            s += a.data[static_cast<size_t>(i * K + k)] * w.data[static_cast<size_t>(tb ? j * K + k : k * N + j)];
          out.data.push_back(s);
        }
    } else if (op == "MatMul") out = matmul(in(0), in(1));
    else if (op == "LayerNormalization") {
      const T& x = in(0);
      const size_t axis = axis_of(n.i("axis", -1), x.shape.size());
      const auto parts = split_at(x.shape, axis, x.shape.size());
      const int64_t outer = parts[0], inner = parts[1];
      const double eps = n.f("epsilon", 1e-5f);
      // Scale and bias as exports write them: the normalized dims or trailing ones of them, so their values
      // repeat along inner.
      auto at = [](const T& t, int64_t i) { return t.data[static_cast<size_t>(i % static_cast<int64_t>(t.data.size()))]; };
      out = x;
      Shape stat_shape(x.shape.begin(), x.shape.begin() + static_cast<long>(axis));
      stat_shape.resize(x.shape.size(), 1);
      T mean{stat_shape, {}}, inv{stat_shape, {}};
      for (int64_t o = 0; o < outer; ++o) {
        double m = 0, var = 0;
        for (int64_t i = 0; i < inner; ++i) m += x.data[static_cast<size_t>(o * inner + i)];
        m /= static_cast<double>(inner);
        for (int64_t i = 0; i < inner; ++i) var += std::pow(x.data[static_cast<size_t>(o * inner + i)] - m, 2);
        const double r = 1 / std::sqrt(var / static_cast<double>(inner) + eps);
        for (int64_t i = 0; i < inner; ++i) {
          double& y = out.data[static_cast<size_t>(o * inner + i)];
          y = (y - m) * r * at(in(1), i) + (has(2) ? at(in(2), i) : 0.0);
        }
        mean.data.push_back(m);
        inv.data.push_back(r);
      }
      if (np.output_size() > 1 && !np.output(1).empty()) v[np.output(1)] = mean;
      if (np.output_size() > 2 && !np.output(2).empty()) v[np.output(2)] = inv;
    } else if (op == "Concat") {
      std::vector<const T*> xs;
      for (int i = 0; i < np.input_size(); ++i) xs.push_back(&in(i));
      out = concat(xs, n.i("axis", 0));
    } else if (op == "Split") {
      const auto axis = static_cast<size_t>(n.i("axis", 0));
      int64_t start = 0;
      for (int k = 0; k < np.output_size(); ++k) {
        const auto len = static_cast<int64_t>(in(1).data[static_cast<size_t>(k)]);
        v[np.output(k)] = slice_axis(in(0), axis, start, len);
        start += len;
      }
      continue;
    } else if (op == "Slice") {
      auto ints_of = [&](int k) {
        std::vector<int64_t> v;
        if (np.input_size() > k && !np.input(k).empty())
          for (double d : in(k).data)  // saturating: exporters write INT64_MAX for "to the end"
            v.push_back(d >= 9.2e18 ? INT64_MAX : d <= -9.2e18 ? INT64_MIN : static_cast<int64_t>(d));
        return v;
      };
      const T& x = in(0);
      const auto ax = onnx_io::slice_axes(x.shape, ints_of(1), ints_of(2), ints_of(3), ints_of(4));
      if (!ax) throw std::runtime_error("reference: Slice arguments do not check out");
      out = T{ax->out, {}};
      Shape pos(x.shape.size(), 0);
      for (int64_t e = 0; e < count(ax->out); ++e) {
        int64_t at = 0;
        for (size_t d = 0; d < x.shape.size(); ++d) at = at * x.shape[d] + ax->begin[d] + pos[d] * ax->step[d];
        out.data.push_back(x.data[static_cast<size_t>(at)]);
        for (size_t d = x.shape.size(); d-- > 0;) {
          if (++pos[d] < ax->out[d]) break;
          pos[d] = 0;
        }
      }
    } else if (op == "Shape") {
      out = T{{static_cast<int64_t>(in(0).shape.size())}, {in(0).shape.begin(), in(0).shape.end()}};
    } else if (op == "Gather") {
      const T& d = in(0);
      out = T{in(1).shape, {}};
      for (double k : in(1).data) out.data.push_back(d.data[static_cast<size_t>(k)]);  // 1-D data only
    } else if (op == "Reshape") {
      out = in(0);
      Shape s(in(1).data.begin(), in(1).data.end());
      int64_t known = 1, infer = -1;
      for (size_t k = 0; k < s.size(); ++k) {
        if (s[k] == 0) s[k] = in(0).shape[k];
        if (s[k] == -1) infer = static_cast<int64_t>(k);
        else known *= s[k];
      }
      if (infer >= 0) s[static_cast<size_t>(infer)] = count(out.shape) / known;
      out.shape = s;
    } else if (op == "Transpose") out = transpose(in(0), n.ints("perm"));
    else if (op == "Softmax") {
      out = in(0);
      const size_t axis = axis_of(n.i("axis", -1), out.shape.size());
      const auto [outer, len, inner] = split_at(out.shape, axis, axis + 1);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          auto at = [&](int64_t k) -> double& { return out.data[static_cast<size_t>((o * len + k) * inner + i)]; };
          double mx = -INFINITY, sum = 0;
          for (int64_t k = 0; k < len; ++k) mx = std::max(mx, at(k));
          for (int64_t k = 0; k < len; ++k) sum += (at(k) = std::exp(at(k) - mx));
          for (int64_t k = 0; k < len; ++k) at(k) /= sum;
        }
    } else if (op == "Pad") {
      const T& x = in(0);
      const Shape pads(in(1).data.begin(), in(1).data.end());
      Shape os = x.shape;
      for (size_t d = 0; d < os.size(); ++d) os[d] += pads[d] + pads[d + os.size()];
      out = T{os, std::vector<double>(static_cast<size_t>(count(os)), has(2) ? in(2).data[0] : 0.0)};
      const Shape so = strides(os);
      size_t k = 0;
      for_each_index(x.shape, [&](const Shape& idx) {
        int64_t off = 0;
        for (size_t d = 0; d < idx.size(); ++d) off += (idx[d] + pads[d]) * so[d];
        out.data[static_cast<size_t>(off)] = x.data[k++];
      });
    } else if (op == "Identity" || op == "Dropout") out = in(0);
    else throw std::runtime_error("reference: op " + op + " not implemented");
    v[np.output(0)] = std::move(out);
  }
  std::map<std::string, T> outs;
  for (const auto& o : model.graph().output()) outs[o.name()] = get(o.name());
  return outs;
}

}  // namespace nnmeter::test
