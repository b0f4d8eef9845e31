// Fine-grained sampling: channel numbers from [floor(0.4 C), floor(1.2 C)], everything else kept.
#include <gtest/gtest.h>

#include <set>

#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"
#include "sampling/builtin_samplers.h"

namespace nnmeter {
namespace {

std::unique_ptr<ConfigSampler> sampler_for(const std::string& name) {
  for (auto& info : builtin_kernels())
    if (info.name == name) return std::move(info.create(Json::object()).sampler);
  throw std::runtime_error("no builtin kernel " + name);
}

TEST(FinegrainedSampling, ConvStaysInTheSeedsRange) {
  // The seed's example: CIN 24 -> [9, 28], COUT 64 -> [25, 76].
  const Json base = {{"HW", 56}, {"CIN", 24}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 1}};
  auto out = sampler_for("conv-bn-relu")->finegrained_config_sampling(10, {base}, 9);
  ASSERT_EQ(out.size(), 10u);
  std::set<int64_t> cins, couts;
  for (const auto& c : out) {
    EXPECT_EQ(c["HW"], 56);
    EXPECT_EQ(c["KERNEL_SIZE"], 3);
    EXPECT_EQ(c["STRIDES"], 1);
    cins.insert(c["CIN"].get<int64_t>());
    couts.insert(c["COUT"].get<int64_t>());
    EXPECT_GE(c["CIN"], 9);
    EXPECT_LE(c["CIN"], 28);
    EXPECT_GE(c["COUT"], 25);
    EXPECT_LE(c["COUT"], 76);
  }
  EXPECT_EQ(cins.size(), 10u);  // drawn without replacement
  EXPECT_EQ(couts.size(), 10u);
}

TEST(FinegrainedSampling, RangeCoversBothEndsAndNeverZero) {
  EXPECT_EQ(sampling::finegrained_range(24), (std::pair<int64_t, int64_t>{9, 28}));
  EXPECT_EQ(sampling::finegrained_range(1), (std::pair<int64_t, int64_t>{1, 1}));
  EXPECT_EQ(sampling::finegrained_range(2), (std::pair<int64_t, int64_t>{1, 2}));
  // A small range is returned whole: all of [9, 28] for M = 100.
  auto out = sampler_for("relu")->finegrained_config_sampling(100, {{{"HW", 7}, {"CIN", 24}}}, 1);
  std::set<int64_t> cins;
  for (const auto& c : out) cins.insert(c["CIN"].get<int64_t>());
  EXPECT_EQ(cins.size(), 20u);
  EXPECT_EQ(*cins.begin(), 9);
  EXPECT_EQ(*cins.rbegin(), 28);
  for (const auto& c : sampler_for("relu")->finegrained_config_sampling(5, {{{"HW", 7}, {"CIN", 1}}}, 1))
    EXPECT_EQ(c["CIN"], 1);
}

TEST(FinegrainedSampling, FamiliesChangeOnlyTheirChannels) {
  auto dw = sampler_for("dwconv-bn-relu")->finegrained_config_sampling(
      4, {{{"HW", 28}, {"CIN", 50}, {"COUT", 50}, {"KERNEL_SIZE", 5}, {"STRIDES", 2}}}, 2);
  ASSERT_EQ(dw.size(), 4u);
  for (const auto& c : dw) {
    EXPECT_FALSE(c.contains("COUT"));
    EXPECT_EQ(c["KERNEL_SIZE"], 5);
    EXPECT_GE(c["CIN"], 20);
    EXPECT_LE(c["CIN"], 60);
  }
  auto pool = sampler_for("avgpool")->finegrained_config_sampling(3, {{{"HW", 28}, {"CIN", 50}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}}}, 2);
  for (const auto& c : pool) {
    EXPECT_EQ(c["POOL_STRIDES"], 2);
    EXPECT_FALSE(c.contains("STRIDES"));
  }
  for (const auto& c : sampler_for("split")->finegrained_config_sampling(30, {{{"HW", 7}, {"CIN", 30}}}, 2))
    EXPECT_EQ(c["CIN"].get<int>() % 2, 0);
  // A shuffle of three groups keeps them, in whole groups of channels, and every config builds.
  auto shuffle = find_kernel(Registry(), "channelshuffle").create(Json::object());
  const auto shuffles = shuffle.sampler->finegrained_config_sampling(30, {{{"HW", 7}, {"CIN", 45}, {"GROUPS", 3}}}, 2);
  ASSERT_EQ(shuffles.size(), 30u);
  for (const auto& c : shuffles) {
    EXPECT_EQ(c["GROUPS"], 3);
    EXPECT_EQ(c["CIN"].get<int>() % 3, 0) << c.dump();
    EXPECT_NO_THROW(shuffle.kernel->build_onnx(c, 1)) << c.dump();
  }
  auto concat = sampler_for("concat")->finegrained_config_sampling(
      5, {{{"HW", 7}, {"CIN1", 10}, {"CIN2", 100}, {"CIN3", 0}, {"CIN4", 0}}}, 2);
  ASSERT_EQ(concat.size(), 5u);
  for (const auto& c : concat) {
    EXPECT_EQ(c["CIN3"], 0);
    EXPECT_GE(c["CIN2"], 40);
    EXPECT_LE(c["CIN1"], 12);
  }
  auto fc = sampler_for("fc")->finegrained_config_sampling(3, {{{"CIN", 1024}, {"COUT", 1000}}}, 2);
  for (const auto& c : fc) EXPECT_GE(c["COUT"], 400);
}

TEST(FinegrainedSampling, BadInputs) {
  auto s = sampler_for("conv-bn-relu");
  EXPECT_THROW(s->finegrained_config_sampling(0, {{{"HW", 7}}}, 1), Error);
  EXPECT_THROW(s->finegrained_config_sampling(3, {{{"HW", 7}, {"CIN", 4}}}, 1), Error);  // no COUT etc.
  EXPECT_THROW(s->finegrained_config_sampling(3, {{{"HW", 7}, {"CIN", -4}, {"COUT", 4}, {"KERNEL_SIZE", 1}, {"STRIDES", 1}}}, 1),
               Error);
}

}  // namespace
}  // namespace nnmeter
