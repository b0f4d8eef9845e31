// Topological order of a graph given as edges, for every graph nn-meter orders: ONNX nodes, nn-Meter IR
// nodes, the units of kernel detection.
#pragma once

#include <cstddef>
#include <optional>
#include <queue>
#include <utility>
#include <vector>

namespace nnmeter {

// Kahn's algorithm over nodes 0 … n−1, each edge (from, to) meaning `from` comes before `to`. Among the
// nodes ready at a time, the first by `before` (a strict weak order on indices) is taken, so the order is
// deterministic. nullopt when the edges form a cycle.
template <class Before>
std::optional<std::vector<size_t>> topological_order(size_t n, const std::vector<std::pair<size_t, size_t>>& edges,
                                                     Before before) {
  std::vector<std::vector<size_t>> next(n);
  std::vector<size_t> pending(n, 0);
  for (const auto& [from, to] : edges) {
    next[from].push_back(to);
    ++pending[to];
  }
  auto after = [&](size_t a, size_t b) { return before(b, a); };
  std::priority_queue<size_t, std::vector<size_t>, decltype(after)> ready(after);
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t c : next[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (order.size() != n) return std::nullopt;
  return order;
}

}  // namespace nnmeter
