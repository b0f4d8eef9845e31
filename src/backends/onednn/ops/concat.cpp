// Concat, with the ShuffleNet channel shuffle (and the Split after it) the passes merge into it.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

using DType = HostTensor::DType;

std::vector<Shape> concat_shape(const ShapeContext& cx) {
  Shape out = cx.in(0);
  const int64_t axis = normalize_axis(cx.attrs.i("axis", 1), static_cast<int64_t>(out.size()), cx.attrs, "axis");
  out[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < cx.n.inputs.size(); ++i) {
    const Shape& s = cx.in(i);
    if (s.size() != out.size()) cx.attrs.fail("axis", "inputs have different ranks");
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis && s[d] != out[d])
        cx.attrs.fail("axis", fmt::format("inputs {} and {} differ outside the concat axis", shape_str(cx.in(0)), shape_str(s)));
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  return {out};
}

bool fold_concat(const FoldContext& cx, std::vector<HostTensor>& out) {
  const auto& first = cx.c(0);
  const auto rank = static_cast<int64_t>(first.dims.size());
  const int64_t axis = normalize_axis(cx.attrs.i("axis", 0), rank, cx.attrs, "axis");
  HostTensor r;
  r.dtype = first.dtype;
  r.dims = first.dims;
  r.dims[static_cast<size_t>(axis)] = 0;
  const int64_t outer = numel(Shape(first.dims.begin(), first.dims.begin() + axis));
  std::vector<std::vector<double>> parts(static_cast<size_t>(outer));
  for (size_t i = 0; i < cx.in.size(); ++i) {
    const auto& t = cx.c(i);
    if (t.dims.size() != first.dims.size()) cx.attrs.fail("axis", "inputs have different ranks");
    r.dims[static_cast<size_t>(axis)] += t.dims[static_cast<size_t>(axis)];
    const int64_t chunk = outer ? t.numel() / std::max<int64_t>(outer, 1) : 0;
    for (int64_t o = 0; o < outer; ++o)
      parts[static_cast<size_t>(o)].insert(parts[static_cast<size_t>(o)].end(), t.data.begin() + o * chunk,
                                           t.data.begin() + (o + 1) * chunk);
    if (t.dtype == DType::F32) r.dtype = DType::F32;
  }
  for (auto& p : parts) r.data.insert(r.data.end(), p.begin(), p.end());
  return emit(out, std::move(r));
}

// Concat, channel shuffle and Split in one pass: part j of g fills channels j, j + g, j + 2g, ... of
// the shuffled tensor, whose channel ranges are the outputs; they keep the first part's dimension order.
void lower_concat_shuffled(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const auto groups = n.shuffle_groups;
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
  std::vector<memory::desc> candidates{picked};
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
  if (n.shuffle_groups) return lower_concat_shuffled(cx, n);
  const Graph& g = cx.graph();
  const int64_t axis = normalize_axis(cx.attrs(n).i("axis", 1), static_cast<int64_t>(g.value(n.outputs[0]).shape.size()),
                                      cx.attrs(n), "axis");
  std::vector<memory::desc> mds;
  std::vector<memory> srcs;
  for (int in : n.inputs) {
    if (numel(g.value(in).shape) == 0) continue;
    srcs.push_back(cx.mem(in));
    mds.push_back(srcs.back().get_desc());
  }
  const dnnl::concat::primitive_desc pd(static_cast<int>(axis), mds, cx.engine());
  if (std::string(pd.impl_info_str()).rfind("ref", 0) == 0)
    return lower_concat_by_reorders(cx, n, static_cast<size_t>(axis), srcs, pd.dst_desc());
  std::unordered_map<int, memory> args;
  for (size_t i = 0; i < srcs.size(); ++i) args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = srcs[i];
  args[DNNL_ARG_DST] = cx.new_output(n.outputs[0], pd.dst_desc());
  cx.add_step(dnnl::concat(pd), std::move(args), step_info(pd, n, "concat"));
}

const OpRegistration concat_ops({
    {.name = "Concat", .attributes = {"axis"}, .shape = concat_shape, .fold = fold_concat, .lower = lower_concat},
});

}  // namespace

}  // namespace nnmeter::onednn
