// A conv kernel through the onednn_cpu backend vs the same oneDNN primitive called alone, both timed with
// the backend's measurement routine. The issue asks for >= 90 % of the standalone throughput.
// "backend_ms" is what Backend::profile records (no edge reorders); "inference_ms" adds the NCHW
// input/output reorders a one-kernel model pays when run for inference.
#include <fmt/format.h>
#include <omp.h>

#include <iostream>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/onednn/engine.h"
#include "backends/measure.h"
#include "backends/onednn/onednn_backend.h"
#include "networks/layers.h"

using namespace nnmeter;

namespace {

struct ConvCase {
  int64_t c, hw, cout, k, s;
};

double flops(const ConvCase& c) {
  const int64_t o = (c.hw + 2 * ((c.k - 1) / 2) - c.k) / c.s + 1;
  return 2.0 * static_cast<double>(c.cout * o * o * c.c * c.k * c.k);
}

backends::MeasureSettings settings(int threads) {
  backends::MeasureSettings s;
  s.threads = threads;
  s.runs = 50;
  s.rounds = 7;
  return s;
}

// The primitive exactly as the oneDNN examples build it: any formats, weights reordered once, input
// already in the primitive's layout.
double standalone_ms(const ConvCase& c, int threads) {
  using namespace dnnl;
  omp_set_num_threads(threads);
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  const int64_t pad = (c.k - 1) / 2, o = (c.hw + 2 * pad - c.k) / c.s + 1;
  auto any = [](memory::dims d) { return memory::desc(d, memory::data_type::f32, memory::format_tag::any); };
  convolution_forward::desc d(prop_kind::forward_inference, algorithm::convolution_direct, any({1, c.c, c.hw, c.hw}),
                              any({c.cout, c.c, c.k, c.k}), any({c.cout}), any({1, c.cout, o, o}), {c.s, c.s}, {0, 0},
                              {pad, pad}, {pad, pad});
  post_ops po;
  po.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
  primitive_attr attr;
  attr.set_post_ops(po);
  convolution_forward::primitive_desc pd(d, attr, eng);
  memory src(pd.src_desc(), eng), wei(pd.weights_desc(), eng), bias(pd.bias_desc(), eng), dst(pd.dst_desc(), eng);
  std::fill_n(static_cast<float*>(src.get_data_handle()), pd.src_desc().get_size() / 4, 0.5f);
  std::fill_n(static_cast<float*>(wei.get_data_handle()), pd.weights_desc().get_size() / 4, 0.01f);
  std::fill_n(static_cast<float*>(bias.get_data_handle()), pd.bias_desc().get_size() / 4, 0.1f);
  convolution_forward conv(pd);
  const auto m = backends::measure(
      [&] {
        conv.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, dst}});
        strm.wait();
      },
      settings(threads));
  return m.stats.median;
}

// The same conv as a one-node ONNX model through the engine, timed as Backend::profile times it
// (Pipeline::Profiling: input already in the conv's layout, output left in it) and, for comparison, as
// inference runs it (NCHW in and out, edge reorders included).
Json backend_ms(const ConvCase& c, int threads) {
  networks::LayerBuilder b("conv", 13, 1);
  const auto x = b.input("x", {1, c.c, c.hw, c.hw});
  b.output(b.relu(b.conv(x, c.cout, c.k, c.s, -1, 1, true)));
  onednn::Engine engine(onednn::load_graph(b.model(), "conv"), onednn::EngineOptions{threads});
  engine.set_inputs(onednn::random_inputs(engine));
  engine.prepare_profiling();
  const auto m = backends::measure([&] { engine.execute(onednn::Pipeline::Profiling); }, settings(threads));
  const auto inference = backends::measure([&] { engine.execute(onednn::Pipeline::Inference); }, settings(threads));
  const Json timed = engine.plan(onednn::Pipeline::Profiling);
  return {{"median_ms", m.stats.median},
          {"inference_ms", inference.stats.median},
          {"primitives", timed["primitives"]},
          {"reorders", timed["reorders"]},
          {"excluded_edge_reorders", timed["excluded_edge_reorders"].size()}};
}

}  // namespace

int main() {
  const ConvCase cases[] = {{64, 56, 64, 3, 1}, {128, 28, 128, 3, 1}, {256, 14, 256, 3, 1}, {32, 112, 64, 1, 1}, {64, 56, 128, 3, 2}};
  for (int threads : {1, 2})
    for (const auto& c : cases) {
      const double alone = standalone_ms(c, threads);
      const Json through = backend_ms(c, threads);
      const double ms = through["median_ms"].get<double>();
      const Json row{{"conv", fmt::format("{}x{}x{} -> {} k{} s{}", c.hw, c.hw, c.c, c.cout, c.k, c.s)},
                     {"threads", threads},
                     {"mflop", flops(c) / 1e6},
                     {"standalone_ms", alone},
                     {"backend_ms", ms},
                     {"standalone_gflops", flops(c) / alone / 1e6},
                     {"backend_gflops", flops(c) / ms / 1e6},
                     {"ratio", alone / ms},
                     {"backend_primitives", through["primitives"]},
                     {"backend_reorders", through["reorders"]},
                     {"excluded_edge_reorders", through["excluded_edge_reorders"]},
                     {"inference_ms", through["inference_ms"]},
                     {"inference_ratio", alone / through["inference_ms"].get<double>()}};
      std::cout << row.dump() << std::endl;
    }
  return 0;
}
