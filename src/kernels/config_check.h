// Validation of kernel configs, shared by the builtin kernels, samplers and parsers. Every failure is an
// Error with one line naming the kernel, the key and the accepted range.
//
// "Absurd" limits: the prior library tops out at HW 224, 2160 channels and kernel 7; the limits below are
// roughly ten times that, so any real network layer passes and typos (CIN 10^7) do not allocate gigabytes.
// SAME padding never pads more than 3 pixels per side in nn-Meter's kernels (kernel 7), so a kernel may be
// at most HW + 6 wide; a larger one would mostly convolve padding.
#pragma once

#include <optional>
#include <string>

#include "nnmeter/kernel.h"

namespace nnmeter::kernels::check {

inline constexpr int64_t kMaxHw = 2048;
inline constexpr int64_t kMaxChannels = 32768;
// A patch embedding is a conv whose stride is its kernel: 16 in ViT/DeiT, 32 in ViT-B/32.
inline constexpr int64_t kMaxKernelSize = 32;
inline constexpr int64_t kMaxStride = 32;
inline constexpr int64_t kMaxSamePadPerSide = 3;
inline constexpr int64_t kMaxBatch = 4096;
// Token counts, and the matrix dimensions of a batched matmul: a 384² Swin's first stage has 9,216 tokens,
// a long-sequence encoder 4,096; sixteen times that still leaves room.
inline constexpr int64_t kMaxTokens = 65536;
// One float32 tensor (input, output or weight) may hold at most 2^28 elements (1 GiB).
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 28;

// Reads `key` as an integer in [lo, hi]. JSON floats with an integral value (28.0) are accepted because
// feature vectors round-trip through doubles; strings, booleans and fractions are not.
int64_t get_int(const KernelConfig& config, const std::string& kernel, const std::string& key, int64_t lo, int64_t hi);
// Same, but a missing key yields nullopt.
std::optional<int64_t> get_optional_int(const KernelConfig& config, const std::string& kernel, const std::string& key,
                                        int64_t lo, int64_t hi);

int64_t hw(const KernelConfig& c, const std::string& kernel);
int64_t channels(const KernelConfig& c, const std::string& kernel, const std::string& key);
// T, and a batched matmul's B, M, K and N.
int64_t tokens(const KernelConfig& c, const std::string& kernel, const std::string& key);
// KERNEL_SIZE, checked against HW with the padding rule above.
int64_t kernel_size(const KernelConfig& c, const std::string& kernel, int64_t hw);
int64_t stride(const KernelConfig& c, const std::string& kernel, const std::string& key);

void check_batch(int64_t batch);
// Throws if batch * prod(shape) exceeds kMaxTensorElements; `what` names the tensor.
void check_tensor(const std::string& kernel, const std::string& what, int64_t batch, const Shape& shape);

}  // namespace nnmeter::kernels::check
