#include "onnx_io/shape_rules.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <string>

namespace nnmeter::onnx_io {

std::optional<WindowAxis> window_axis(int64_t in, int64_t extent, int64_t stride, int64_t pad_begin, int64_t pad_end,
                                      std::string_view auto_pad, bool ceil_mode) {
  if (in <= 0 || extent <= 0 || stride <= 0 || pad_begin < 0 || pad_end < 0) return std::nullopt;
  WindowAxis w{0, pad_begin, pad_end};
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    w.out = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>(0, (w.out - 1) * stride + extent - in);
    w.pad_begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    w.pad_end = total - w.pad_begin;
    return w;
  }
  if (auto_pad == "VALID") {
    w.pad_begin = w.pad_end = 0;
  } else if (auto_pad != "NOTSET") {
    return std::nullopt;
  }
  const int64_t span = in + w.pad_begin + w.pad_end - extent;
  if (span < 0) return std::nullopt;
  w.out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (w.out - 1) * stride >= in + w.pad_begin) --w.out;
  return w;
}

std::optional<Shape> reshape_shape(const Shape& in, const std::vector<int64_t>& target, bool allow_zero,
                                   int64_t max_elements) {
  int64_t total = 1;
  for (int64_t d : in) {
    if (d < 0 || (d > 0 && total > max_elements / d)) return std::nullopt;
    total *= d;
  }
  Shape out;
  int64_t known = 1;
  std::optional<size_t> unknown;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allow_zero) {
      if (i >= in.size()) return std::nullopt;
      d = in[i];
    }
    if (d == -1) {
      if (unknown) return std::nullopt;
      unknown = i;
    } else {
      if (d < 0 || (d > 0 && known > max_elements / d)) return std::nullopt;
      known *= d;
    }
    out.push_back(d);
  }
  if (unknown) {
    if (known <= 0 || total % known != 0) return std::nullopt;
    out[*unknown] = total / known;
  } else if (known != total) {
    return std::nullopt;
  }
  return out;
}

std::optional<SliceAxes> slice_axes(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                                    std::vector<int64_t> axes, std::vector<int64_t> steps) {
  const size_t rank = in.size();
  if (starts.empty() || starts.size() != ends.size()) return std::nullopt;
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) return std::nullopt;
  SliceAxes r{Shape(rank, 0), Shape(rank, 1), in};
  std::vector<bool> seen(rank, false);
  const int64_t r64 = static_cast<int64_t>(rank);
  for (size_t i = 0; i < starts.size(); ++i) {
    if (axes[i] < -r64 || axes[i] >= r64) return std::nullopt;
    const size_t a = static_cast<size_t>(axes[i] < 0 ? axes[i] + r64 : axes[i]);
    if (seen[a] || steps[i] == 0) return std::nullopt;
    seen[a] = true;
    const int64_t d = in[a], s = steps[i];
    if (d == 0) continue;  // nothing to slice: the axis stays empty
    // ONNX's clamping: into [0, d] going forward, into [-1, d - 1] going backward.
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + d : v, lo, hi); };
    const int64_t b = s > 0 ? clamp(starts[i], 0, d) : clamp(starts[i], 0, d - 1);
    const int64_t e = s > 0 ? clamp(ends[i], 0, d) : clamp(ends[i], -1, d - 1);
    r.begin[a] = b;
    r.step[a] = s;
    // ceil(|e - b| / |s|), written so that no step (INT64_MIN included) overflows.
    if (s > 0) r.out[a] = e > b ? 1 + (e - b - 1) / s : 0;
    else r.out[a] = b > e ? 1 + (s == std::numeric_limits<int64_t>::min() ? 0 : (b - e - 1) / -s) : 0;
  }
  return r;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::optional<Shape> einsum_shape(std::string_view equation, const std::vector<Shape>& inputs) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms(1);
  for (char c : lhs) {
    if (c == ',') terms.emplace_back();
    else terms.back() += c;
  }
  if (terms.size() != inputs.size()) return std::nullopt;
  std::map<char, int64_t> dims;
  std::map<char, int> uses;
  std::optional<Shape> ellipsis;  // the broadcast of every input's "..." dims
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& t = terms[i];
    const size_t dots = t.find("...");
    const std::string letters = dots == std::string::npos ? t : t.substr(0, dots) + t.substr(dots + 3);
    if (letters.size() > inputs[i].size() || (dots == std::string::npos && letters.size() != inputs[i].size()))
      return std::nullopt;
    const size_t extra = inputs[i].size() - letters.size();  // dims the ellipsis stands for
    const size_t before = dots == std::string::npos ? letters.size() : dots;
    for (size_t k = 0; k < letters.size(); ++k) {
      const char c = letters[k];
      if (!std::isalpha(static_cast<unsigned char>(c))) return std::nullopt;
      const int64_t d = inputs[i][k < before ? k : k + extra];
      auto [it, fresh] = dims.emplace(c, d);
      if (!fresh && it->second != d) {
        if (it->second != 1 && d != 1) return std::nullopt;
        it->second = std::max(it->second, d);
      }
      ++uses[c];
    }
    if (dots != std::string::npos) {
      const Shape part(inputs[i].begin() + static_cast<std::ptrdiff_t>(before),
                       inputs[i].begin() + static_cast<std::ptrdiff_t>(before + extra));
      ellipsis = ellipsis ? broadcast_shapes(*ellipsis, part) : part;
      if (!ellipsis) return std::nullopt;
    }
  }
  std::string out_term;
  if (arrow != std::string::npos) {
    out_term = eq.substr(arrow + 2);
  } else {  // implicit: the ellipsis, then the letters used once, in alphabetical order
    if (ellipsis) out_term = "...";
    for (const auto& [c, n] : uses)
      if (n == 1) out_term += c;
  }
  Shape out;
  for (size_t k = 0; k < out_term.size(); ++k) {
    if (out_term.compare(k, 3, "...") == 0) {
      if (ellipsis) out.insert(out.end(), ellipsis->begin(), ellipsis->end());
      k += 2;
      continue;
    }
    const auto it = dims.find(out_term[k]);
    if (it == dims.end()) return std::nullopt;
    out.push_back(it->second);
  }
  return out;
}

}  // namespace nnmeter::onnx_io
