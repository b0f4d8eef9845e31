// Concat, with the ShuffleNet channel shuffle (and the Split after it) the passes merge into it.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

// Concat, channel shuffle and Split in one pass: part j of g fills channels j, j + g, j + 2g, ... of
// the shuffled tensor, whose channel ranges are the outputs; they keep the first part's dimension order.
void lower_concat_shuffled(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const auto groups = g.of(n).shuffle_groups;
  std::vector<memory> parts;
  for (int in : n.inputs) parts.push_back(viewable(cx.mem(in).get_desc()) ? cx.mem(in) : cx.as_plain(in));
  int64_t first = 0;  // the first channel of the current output, per part
  for (int out : n.outputs) {
    const Shape& os = g.value(out).shape;
    const memory dst = cx.new_output(out, dense_like(parts[0].get_desc(), os));
    auto strides = strides_of(dst.get_desc());
    const auto channel = strides[1];
    strides[1] *= groups;
    Shape dims = os, offsets(os.size(), 0);
    dims[1] /= groups;
    offsets[1] = first;
    for (int64_t j = 0; j < groups; ++j) {
      const memory& part = parts[static_cast<size_t>(j)];
      const memory src(part.get_desc().submemory_desc(to_dims(dims), to_dims(offsets)), cx.engine(), part.get_data_handle());
      const memory place(memory::desc(to_dims(dims), memory::data_type::f32, strides), cx.engine(),
                         static_cast<float*>(dst.get_data_handle()) + j * channel);
      cx.keep(src);
      cx.keep(place);
      cx.reorder_step(src, place, "shuffle " + n.name);
    }
    first += dims[1];
  }
}

// oneDNN's choice when every input's slice of it is addressable (blocks not cut), else the dense
// order of the first unblocked input, else plain.
memory::desc concat_layout(const memory::desc& picked, const std::vector<memory>& srcs, size_t axis) {
  std::vector<memory::desc> candidates{canonical_md(picked)};
  for (const auto& src : srcs)
    if (viewable(src.get_desc())) candidates.push_back(dense_like(src.get_desc(), Shape(picked.dims())));
  candidates.push_back(plain_md(Shape(picked.dims())));
  for (const auto& c : candidates) {
    memory::dims offsets(c.dims().size(), 0);
    bool fits = true;
    for (const auto& src : srcs) {
      fits = fits && c.submemory_desc(src.get_desc().dims(), offsets, true).data.ndims != 0;
      offsets[axis] += src.get_desc().dims()[axis];
    }
    if (fits) return c;
  }
  return candidates.back();
}

// oneDNN concatenates inputs of mixed layouts with reference code; one reorder per input into its
// slice of the output converts the layout and places the data in the same pass.
void lower_concat_by_reorders(Lowering& cx, const Node& n, size_t axis, const std::vector<memory>& srcs,
                              const memory::desc& picked) {
  const memory dst = cx.new_output(n.outputs[0], concat_layout(picked, srcs, axis));
  memory::dims offsets(picked.dims().size(), 0);
  for (const auto& src : srcs) {
    const memory slice(dst.get_desc().submemory_desc(src.get_desc().dims(), offsets), cx.engine(), dst.get_data_handle());
    cx.keep(slice);
    cx.reorder_step(src, slice, "concat " + n.name);
    offsets[axis] += src.get_desc().dims()[axis];
  }
}

void lower_concat(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  if (g.of(n).shuffle_groups) return lower_concat_shuffled(cx, n);
  const int64_t axis = normalize_axis(cx.attrs(n).i("axis", 1), static_cast<int64_t>(g.value(n.outputs[0]).shape.size()),
                                      cx.attrs(n), "axis");
  std::vector<memory::desc> mds;
  std::vector<memory> srcs;
  std::vector<int> ids;
  for (int in : n.inputs) {
    if (numel(g.value(in).shape) == 0) continue;
    srcs.push_back(cx.mem(in));
    mds.push_back(srcs.back().get_desc());
    ids.push_back(in);
  }
  // A concat of one tensor is that tensor (torch.cat([x]) opens each of DenseNet's dense blocks): an alias, as
  // detection counts it (a layout op, detection/kernel_configs.cpp), not a copy.
  if (srcs.size() == 1) return cx.bind_alias(n.outputs[0], srcs[0], ids[0]);
  dnnl::concat::primitive_desc pd(static_cast<int>(axis), mds, cx.engine());
  if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
    return lower_concat_by_reorders(cx, n, static_cast<size_t>(axis), srcs, pd.dst_desc());
  if (const memory::desc plain = canonical_md(pd.dst_desc()); plain != pd.dst_desc())
    pd = dnnl::concat::primitive_desc(plain, static_cast<int>(axis), mds, cx.engine());
  std::unordered_map<int, memory> args;
  for (size_t i = 0; i < srcs.size(); ++i) args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = srcs[i];
  args[DNNL_ARG_DST] = cx.new_output(n.outputs[0], pd.dst_desc());
  cx.add_step(dnnl::concat(pd), std::move(args), cx.step_info(pd, n, "concat"));
}

const OpRegistration concat_ops({
    {.name = "Concat", .lower = lower_concat},
});

}  // namespace

}  // namespace nnmeter::onednn
