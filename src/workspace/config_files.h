// Reading a config file with inheritance, as MMDeploy's deploy configs do: `_base_: a.yaml` or
// `_base_: [a.yaml, b.yaml]` (paths relative to the file) loads the bases first, in order; later bases and
// then the file itself override earlier ones, mappings merged key by key at every depth, anything else
// replaced. So a lab with twenty phones keeps one base config and twenty small ones.
#pragma once

#include "nnmeter/common.h"

namespace nnmeter {

// Most files one config may pull in through `_base_`, itself included.
inline constexpr int kMaxConfigFiles = 64;

// The merged mapping of `file` and its bases, without `_base_`. A missing base, a cycle, a `_base_` that is
// not a path or list of paths, or a file that is not a mapping → one-line Error naming the file.
Json load_config_file(const fs::path& file);

}  // namespace nnmeter
