// Internal description of the builtin kernels. Each kernel family file (conv_kernels.cpp, ...) returns
// specs; sampling/builtin_suites.cpp turns them into KernelInfo entries with the family's sampler and parser.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "onnx_io/builder.h"
#include "nnmeter/kernel.h"

namespace nnmeter::kernels {

// The sampler/parser family a kernel belongs to (nn-Meter's sampler classes).
enum class Family { Conv, DwConv, Pooling, Fc, Concat, CinEven, HwCin, GlobalAvgPool,
                    // Ours, for transformers: [T, CIN] token tensors, nn.Linear on them, and a batched MatMul of
                    // two activations (attention's Q·Kᵀ and A·V).
                    Tokens, Linear, MatMul,
                    // Ours: a grouped conv, GROUPS in its config.
                    GConv };

struct BuiltinKernelSpec {
  std::string name;
  Family family;
  // Validates the config and returns the model inputs without the batch dimension.
  std::function<std::vector<Shape>(const KernelConfig&)> inputs;
  // Adds the kernel's nodes after the graph inputs and declares the graph outputs (with batch).
  std::function<void(onnx_io::GraphBuilder&, const std::vector<std::string>& inputs, const KernelConfig&, int64_t batch)>
      body;
};

std::vector<BuiltinKernelSpec> conv_kernel_specs();         // conv-*, dwconv-* (nn-Meter's 15)
std::vector<BuiltinKernelSpec> swish_conv_kernel_specs();   // conv-bn-swish, dwconv-bn-swish
std::vector<BuiltinKernelSpec> grouped_conv_kernel_specs(); // gconv-bn-relu
std::vector<BuiltinKernelSpec> pool_kernel_specs();         // maxpool, avgpool, global-avgpool
std::vector<BuiltinKernelSpec> structural_kernel_specs();   // fc, concat, split, channelshuffle, se
std::vector<BuiltinKernelSpec> elementwise_kernel_specs();  // bnrelu, bn, hswish, swish, relu, addrelu, add
std::vector<BuiltinKernelSpec> transformer_kernel_specs();  // layernorm, gelu, softmax, linear, linear-gelu, matmul

// Every builtin kernel: nn-Meter's 30 in its listing order, then ours.
std::vector<BuiltinKernelSpec> builtin_kernel_specs();

// The Kernel implementation shared by every builtin spec.
std::unique_ptr<Kernel> make_kernel(const BuiltinKernelSpec& spec);

inline Shape with_batch(int64_t batch, Shape s) {
  s.insert(s.begin(), batch);
  return s;
}

}  // namespace nnmeter::kernels
