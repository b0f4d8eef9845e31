// Ops that only change how a tensor is seen: reshapes are views of the producer's bytes where the
// layout allows, else of a plain copy; Identity, Dropout and Cast (to float) pass the tensor through.
#include "backends/onednn/ops/op.h"

namespace nnmeter::onednn {

namespace {

void lower_reshape(Lowering& cx, const Node& n) {
  const Graph& g = cx.graph();
  const memory& src = cx.mem(n.inputs[0]);
  const auto to = to_dims(g.value(n.outputs[0]).shape);
  const auto strides = viewable(src.get_desc()) ? reshape_strides(src.get_desc().dims(), strides_of(src.get_desc()), to)
                                                : std::nullopt;
  if (!strides) {
    cx.bind_alias(n.outputs[0], cx.alias(cx.as_plain(n.inputs[0]), g.value(n.outputs[0]).shape), n.inputs[0]);
    return;
  }
  cx.bind_alias(n.outputs[0], memory(memory::desc(to, memory::data_type::f32, *strides), cx.engine(), src.get_data_handle()),
                n.inputs[0]);
}

void lower_passthrough(Lowering& cx, const Node& n) { cx.bind_alias(n.outputs[0], cx.mem(n.inputs[0]), n.inputs[0]); }

const OpRegistration shape_ops({
    {.name = "Flatten", .lower = lower_reshape},
    {.name = "Reshape", .lower = lower_reshape},
    {.name = "Squeeze", .lower = lower_reshape},
    {.name = "Unsqueeze", .lower = lower_reshape},
    {.name = "Identity", .lower = lower_passthrough},
    {.name = "Dropout", .lower = lower_passthrough},
    {.name = "Cast", .lower = lower_passthrough},
});

}  // namespace

}  // namespace nnmeter::onednn
