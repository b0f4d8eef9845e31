// The builtin config samplers, one per kernel family (nn-Meter's ConvSampler, DwConvSampler, ...).
//
// Prior sampling follows nn-Meter (inverse-CDF draws from the prior CSV columns, snapping to valid value
// sets, fixed shares of frequent values) but always returns exactly sample_num configs: where nn-Meter's
// int() rounding of the shares dropped items, the last share takes the remainder.
//
// Fine-grained sampling draws channel numbers from [floor(0.4*C), floor(1.2*C)] (inclusive, at least 1),
// the range the nn-Meter documentation gives; nn-Meter's code uses 0.5 as the lower factor, excludes the
// upper bound and can produce 0.
#pragma once

#include <memory>

#include "kernels/builtin.h"
#include "common/rng.h"

namespace nnmeter::sampling {

std::unique_ptr<ConfigSampler> make_sampler(kernels::Family family, const std::string& kernel_name,
                                            const Json& predictorbuild_config);

// Up to `m` distinct integers of [lo, hi] in random order (all of them, shuffled, if the range is small).
std::vector<int64_t> sample_in_range(int64_t lo, int64_t hi, int m, Rng& rng);
// [floor(0.4*c), floor(1.2*c)], never below 1.
std::pair<int64_t, int64_t> finegrained_range(int64_t c);

}  // namespace nnmeter::sampling
