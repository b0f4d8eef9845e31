// The rank agreements every accuracy figure reports next to its ±5/±10 % shares.
#include "common/accuracy.h"

#include <gtest/gtest.h>

namespace nnmeter {
namespace {

TEST(RankAgreement, KendallAndSpearmanOnKnownLists) {
  const std::vector<double> a = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(*accuracy::kendall_tau(a, a), 1.0);
  EXPECT_DOUBLE_EQ(*accuracy::kendall_tau(a, {50, 40, 30, 20, 10}), -1.0);
  // 7 concordant, 3 discordant pairs; ranks differ by 2, 1, 1, 1, 1.
  EXPECT_DOUBLE_EQ(*accuracy::kendall_tau(a, {3, 1, 2, 5, 4}), 0.4);
  EXPECT_DOUBLE_EQ(*accuracy::spearman(a, {3, 1, 2, 5, 4}), 0.6);
  // Ties (τ-b; mean ranks): 5 concordant pairs, one tied in the first list only.
  EXPECT_NEAR(*accuracy::kendall_tau({1, 2, 2, 3}, {1, 3, 2, 4}), 5.0 / std::sqrt(30.0), 1e-12);
  EXPECT_NEAR(*accuracy::spearman({1, 2, 2, 3}, {1, 3, 2, 4}), 4.5 / std::sqrt(22.5), 1e-12);
  // Nothing to rank: one item, or a list of ties.
  EXPECT_FALSE(accuracy::kendall_tau({1}, {2}));
  EXPECT_FALSE(accuracy::spearman({1}, {2}));
  EXPECT_FALSE(accuracy::kendall_tau({1, 1, 1}, {1, 2, 3}));
  EXPECT_FALSE(accuracy::spearman({1, 1, 1}, {1, 2, 3}));
}

}  // namespace
}  // namespace nnmeter
