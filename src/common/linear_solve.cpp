#include "common/linear_solve.h"

#include <cmath>
#include <utility>

#include "nnmeter/common.h"

namespace nnmeter {

std::vector<double> solve_linear(std::vector<std::vector<double>> a, std::vector<double> b, const std::string& what) {
  const size_t n = b.size();
  for (size_t col = 0; col < n; ++col) {
    size_t pivot = col;
    for (size_t r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    if (std::fabs(a[col][col]) < 1e-300) throw Error(what + ": singular system");
    for (size_t r = col + 1; r < n; ++r) {
      const double f = a[r][col] / a[col][col];
      for (size_t c = col; c < n; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> w(n);
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t c = i + 1; c < n; ++c) s -= a[i][c] * w[c];
    w[i] = s / a[i][i];
  }
  return w;
}

}  // namespace nnmeter
