// A small dense linear system, for the least-squares fits of a few dozen unknowns (power-law regressors, the
// composition term's kernel scales): a library would add a dependency for twenty lines.
#pragma once

#include <string>
#include <vector>

namespace nnmeter {

// Solves a·w = b (Gaussian elimination with partial pivoting). A singular system → Error "<what>: singular system".
std::vector<double> solve_linear(std::vector<std::vector<double>> a, std::vector<double> b, const std::string& what);

}  // namespace nnmeter
