// What an op's lowering sees of the engine: the graph, the memory of its inputs, outputs to bind and
// pipeline steps to add. The engine implements it; ops/*.cpp never see the engine's bookkeeping
// (buffers, edge reorders, the plan), so an op file stays about its own primitives.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <unordered_map>

#include "backends/onednn/graph_internal.h"

namespace nnmeter::onednn {

using dnnl::memory;

memory::dims to_dims(const Shape& s);
memory::desc plain_md(const Shape& s);
memory::desc any_md(const memory::dims& d);
// A strided layout without blocking (abcd, acdb, ...): its dimension order by decreasing stride.
std::optional<std::vector<int>> dense_order(const memory::desc& md);
// The dense layout of `d` whose dimensions, outermost first, are `order`.
memory::desc dense_md(const memory::dims& d, const std::vector<int>& order);
// `md` itself, or plain when it is a dense layout that orders only dimensions of size 1 differently (the same
// bytes: oneDNN's optimized binary and concat take plain, not "bac" for [1, T, C]).
memory::desc canonical_md(const memory::desc& md);
// A dense layout for `dims` with the same dimension order as `like` (keeps NHWC as NHWC), else plain.
memory::desc dense_like(const memory::desc& like, const Shape& dims);
memory::dims strides_of(const memory::desc& md);
// Strided without blocking and starting at the buffer's start: Reshape and Transpose can view it.
bool viewable(const memory::desc& md);
// The strides that show a dense strided tensor with another shape over the same bytes, when such a view
// exists (numpy's no-copy reshape rule).
std::optional<memory::dims> reshape_strides(const memory::dims& dims, const memory::dims& strides, const memory::dims& to);
Shape pad_rank(const Shape& s, size_t rank);
memory::dims minus_one(const Shape& s);
dnnl::primitive_attr make_attr(const std::vector<PostOp>& ops);

class Lowering {
 public:
  virtual ~Lowering() = default;

  virtual const Graph& graph() const = 0;
  virtual const dnnl::engine& engine() const = 0;

  // The memory of a value in the layout its producer wrote; constants materialize in plain layout.
  virtual const memory& mem(int value) = 0;
  // The value in layout `want`: itself, or a reordered copy shared by every consumer that wants it.
  virtual memory as_desc(int value, const memory::desc& want) = 0;
  memory as_plain(int value) { return as_desc(value, plain_md(graph().value(value).shape)); }

  // `value` now lives in `m`, a buffer of its own.
  virtual void bind(int value, memory m) = 0;
  // `value` is a view of `source`'s bytes (Reshape, Identity, a sum post-op into the residual).
  virtual void bind_alias(int value, const memory& view, int source) = 0;
  memory new_output(int value, const memory::desc& md);
  // The value's buffer must not be overwritten in place (its border is written once).
  virtual void pin(int value) = 0;
  // No later step reads the buffer of `value`, so a primitive may accumulate into it; the node
  // `absorbed_consumer` was merged into the current one and does not count.
  virtual bool overwritable(int value, int absorbed_consumer) const = 0;

  virtual void add_step(dnnl::primitive prim, std::unordered_map<int, memory> args, Json info) = 0;
  virtual void reorder_step(const memory& from, const memory& to, const std::string& why) = 0;
  // Keeps a memory alive that steps reference only through views.
  virtual void keep(const memory& m) = 0;

  memory host_memory(const HostTensor& t, const memory::desc& md) const;
  // A load-time constant (row-major `dims`) in layout `want`, reordered once, outside the pipeline.
  virtual memory constant_memory(const HostTensor& t, const memory::dims& dims, const memory::desc& want) = 0;
  // The same bytes seen with another shape (row-major data only).
  memory alias(const memory& plain, const Shape& shape) const;
  Attrs attrs(const Node& n) const { return graph().attrs(*n.proto); }
  // A step's entry in the plan file.
  Json step_info(const dnnl::primitive_desc_base& pd, const Node& n, const char* primitive) const;
};

}  // namespace nnmeter::onednn
