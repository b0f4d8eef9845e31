// Where this copy of libnnmeter lives: the programs and files installed or built with it (the nn-meter
// binary that hosts workers, the Python package's plugin host) are found relative to it, so any process
// that loads the library (nn-meter, Python, a downstream program) finds the same ones.
#pragma once

#include "nnmeter/common.h"

namespace nnmeter {

// The folder of the loaded libnnmeter (<build> in a build tree, <prefix>/lib when installed); empty if
// the loader cannot tell.
fs::path library_dir();

}  // namespace nnmeter
