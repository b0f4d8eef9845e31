// GoogleTest checks of the CLI's failure contract.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>

#include "support/test_support.h"

namespace nnmeter::test {

// A non-zero exit with exactly one "(nn-Meter) " line on stderr that contains `expected`.
inline void expect_one_line_error(const CliResult& r, const std::string& expected) {
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.err, expected)) << "expected: " << expected << "\nstderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("(nn-Meter) ", 0), 0u) << r.err;
}

}  // namespace nnmeter::test
