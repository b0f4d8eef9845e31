// nn-Meter's latency strings and the statistics a backend's profile reports.
#include <gtest/gtest.h>

#include "nnmeter/common.h"
#include "nnmeter/latency.h"

namespace nnmeter {
namespace {

TEST(Latency, ParsesAndFormatsNnMeterStrings) {
  const Latency l = Latency::parse("37.53 +- 0.314");
  EXPECT_DOUBLE_EQ(l.value_ms, 37.53);
  EXPECT_DOUBLE_EQ(l.std, 0.314);
  EXPECT_EQ(l.str(), "37.53 +- 0.314");
  EXPECT_EQ(Latency::parse(l.str()).str(), l.str());
  EXPECT_DOUBLE_EQ(Latency::parse("12").value_ms, 12.0);
  for (const char* bad : {"", "abc", "1 +- x", "nan +- 1", "-3 +- 1", "1 +- 2 +- 3"})
    EXPECT_THROW(Latency::parse(bad), Error) << bad;
}

TEST(Latency, AdditionCombinesDeviationsAndComparisonIsNotStrict) {
  const Latency sum = Latency{1.0, 3.0} + Latency{2.0, 4.0};
  EXPECT_DOUBLE_EQ(sum.value_ms, 3.0);
  EXPECT_DOUBLE_EQ(sum.std, 5.0);
  EXPECT_TRUE((Latency{1.0, 0} <= Latency{1.0, 0}));  // nn-Meter implemented <= as <
  EXPECT_DOUBLE_EQ((Latency{2.0, 1.0} * 3).std, 3.0);
}

TEST(LatencyStats, MedianMeanStdMinMax) {
  const auto s = LatencyStats::from_samples({4.0, 1.0, 3.0, 2.0});
  EXPECT_EQ(s.count, 4);
  EXPECT_DOUBLE_EQ(s.median, 2.5);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 4.0);
  EXPECT_NEAR(s.std, 1.2909944, 1e-6);
  EXPECT_NEAR(s.cv(), 1.2909944 / 2.5, 1e-6);
  EXPECT_DOUBLE_EQ(s.latency().value_ms, 2.5);
}

}  // namespace
}  // namespace nnmeter
