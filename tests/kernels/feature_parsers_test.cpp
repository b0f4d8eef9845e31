// Builtin feature parsers: nn-Meter's needed_config lists and the FLOPs/params features.
#include <gtest/gtest.h>

#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"

namespace nnmeter {
namespace {

std::unique_ptr<FeatureParser> parser_for(const std::string& name) {
  for (auto& info : builtin_kernels())
    if (info.name == name) return info.create(Json::object()).parser;
  throw std::runtime_error("no builtin kernel " + name);
}

TEST(FeatureParsers, ConvAppendsFlopsAndParams) {
  auto p = parser_for("conv-bn-relu");
  EXPECT_EQ(p->needed_config(), (std::vector<std::string>{"HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES"}));
  // params = 64 * (9 * 24 + 1) = 13888; flops = 2 * 28 * 28 * 13888 (HW/S = 56/2).
  auto f = p->get_feature_by_config({{"HW", 56}, {"CIN", 24}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}});
  ASSERT_EQ(f.size(), 7u);
  EXPECT_DOUBLE_EQ(f[5], 2.0 * 28 * 28 * 13888 / 2e6);
  EXPECT_DOUBLE_EQ(f[6], 13888 / 1e6);
  EXPECT_EQ(p->get_config_by_feature(f),
            Json({{"HW", 56}, {"CIN", 24}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}}));
}

TEST(FeatureParsers, GroupedConvCountsOneGroupsInputsPerOutputChannel) {
  auto p = parser_for("gconv-bn-relu");
  EXPECT_EQ(p->needed_config(), (std::vector<std::string>{"HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES", "GROUPS"}));
  // params = 64 * (9 * 24 / 4 + 1) = 3520; flops = 2 * 28 * 28 * 3520.
  const Json c = {{"HW", 56}, {"CIN", 24}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}, {"GROUPS", 4}};
  auto f = p->get_feature_by_config(c);
  ASSERT_EQ(f.size(), 9u);
  EXPECT_DOUBLE_EQ(f[6], 2.0 * 28 * 28 * 3520 / 2e6);
  EXPECT_DOUBLE_EQ(f[7], 3520 / 1e6);
  EXPECT_DOUBLE_EQ(f[8], 6);  // the group width
  EXPECT_EQ(p->get_config_by_feature(f), c);
}

TEST(FeatureParsers, DwconvUsesCinAsCoutAndRealValuedStrides) {
  auto p = parser_for("dwconv-bn-relu");
  auto f = p->get_feature_by_config({{"HW", 7}, {"CIN", 10}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}});
  ASSERT_EQ(f.size(), 7u);
  EXPECT_EQ(f[2], 10);
  const double params = 10 * (9 + 1);
  EXPECT_DOUBLE_EQ(f[5], 2 * 3.5 * 3.5 * params / 2e6);  // 7/2 is not floored, as in nn-Meter
  EXPECT_DOUBLE_EQ(f[6], params / 1e6);
}

TEST(FeatureParsers, FcPoolingConcatAndElementwise) {
  auto fc = parser_for("fc")->get_feature_by_config({{"CIN", 1024}, {"COUT", 1000}});
  EXPECT_EQ(fc, (std::vector<double>{1024, 1000, 2049.0 * 1000 / 2e6, 2049.0 * 1000 / 1e6}));
  auto pool = parser_for("maxpool");
  EXPECT_EQ(pool->needed_config(), (std::vector<std::string>{"HW", "CIN", "COUT", "KERNEL_SIZE", "POOL_STRIDES"}));
  EXPECT_EQ(pool->get_feature_by_config({{"HW", 56}, {"CIN", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}}),
            (std::vector<double>{56, 64, 64, 3, 2}));
  // Concat appends the elements it copies (millions): HW² · ΣCIN.
  EXPECT_EQ(parser_for("concat")->get_feature_by_config({{"HW", 7}, {"CIN1", 3}, {"CIN2", 4}, {"CIN3", 0}}),
            (std::vector<double>{7, 3, 4, 0, 0, 49.0 * 7 / 1e6}));
  EXPECT_EQ(parser_for("concat")->get_feature_by_config({{"HW", 28}, {"CIN1", 64}, {"CIN2", 32}, {"CIN3", 16}, {"CIN4", 8}})
                .back(),
            28.0 * 28 * 120 / 1e6);
  EXPECT_EQ(parser_for("concat")->get_config_by_feature({7, 3, 4, 0, 0, 49.0 * 7 / 1e6}),
            Json({{"HW", 7}, {"CIN1", 3}, {"CIN2", 4}, {"CIN3", 0}, {"CIN4", 0}}));
  auto add = parser_for("add");
  EXPECT_EQ(add->get_feature_by_config({{"HW", 7}, {"CIN", 3}}), (std::vector<double>{7, 3, 3}));
  EXPECT_EQ(add->get_config_by_feature({7, 3, 3}), Json({{"HW", 7}, {"CIN", 3}}));
  for (const char* k : {"split", "channelshuffle", "se", "global-avgpool", "bnrelu", "bn", "hswish", "swish", "relu"})
    EXPECT_EQ(parser_for(k)->needed_config(), (std::vector<std::string>{"HW", "CIN"})) << k;
  // se appends the elements its pool and multiply touch and its two FCs' weights; channelshuffle, its family's
  // other kernel, appends nothing.
  auto se = parser_for("se");
  EXPECT_EQ(se->get_feature_by_config({{"HW", 7}, {"CIN", 960}}),
            (std::vector<double>{7, 960, (49.0 * 960 + 960.0 * 960 / 2) / 1e6}));
  EXPECT_EQ(se->get_config_by_feature({7, 960, 0.5078}), Json({{"HW", 7}, {"CIN", 960}}));
  EXPECT_THROW(se->get_config_by_feature({7, 960}), Error);
  EXPECT_EQ(parser_for("channelshuffle")->get_feature_by_config({{"HW", 7}, {"CIN", 960}}), (std::vector<double>{7, 960}));
}

TEST(FeatureParsers, TransformerKernelsAppendTheirSizeAndWork) {
  auto ln = parser_for("layernorm");
  EXPECT_EQ(ln->needed_config(), (std::vector<std::string>{"T", "CIN"}));
  EXPECT_EQ(ln->get_feature_by_config({{"T", 197}, {"CIN", 768}}), (std::vector<double>{197, 768, 197.0 * 768 / 1e6}));
  for (const char* k : {"gelu", "softmax"}) EXPECT_EQ(parser_for(k)->needed_config(), ln->needed_config()) << k;
  // linear: flops 2·T·CIN·COUT, params (CIN + 1)·COUT; no COUT is implied from CIN.
  auto linear = parser_for("linear");
  EXPECT_EQ(linear->get_feature_by_config({{"T", 197}, {"CIN", 192}, {"COUT", 768}}),
            (std::vector<double>{197, 192, 768, 2.0 * 197 * 192 * 768 / 2e6, 193.0 * 768 / 1e6}));
  EXPECT_THROW(linear->get_feature_by_config({{"T", 197}, {"CIN", 192}}), Error);
  EXPECT_EQ(parser_for("linear-gelu")->needed_config(), linear->needed_config());
  // matmul: flops 2·B·M·K·N and the elements of its three matrices.
  const auto f = parser_for("matmul")->get_feature_by_config({{"B", 12}, {"M", 197}, {"K", 64}, {"N", 197}});
  EXPECT_EQ(f, (std::vector<double>{12, 197, 64, 197, 2.0 * 12 * 197 * 64 * 197 / 2e6,
                                    12.0 * (197 * 64 + 64 * 197 + 197 * 197) / 1e6}));
  EXPECT_EQ(parser_for("matmul")->get_config_by_feature(f), Json({{"B", 12}, {"M", 197}, {"K", 64}, {"N", 197}}));
}

// Configs with every needed key are read without filling in implied keys; both ways give the same features.
TEST(FeatureParsers, ImpliedKeysGiveTheFeaturesOfExplicitOnes) {
  const Json dw = {{"HW", 7}, {"CIN", 10}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}};
  Json dw_explicit = dw;
  dw_explicit["COUT"] = 10;
  auto dwconv = parser_for("dwconv-bn-relu");
  EXPECT_EQ(dwconv->get_feature_by_config(dw), dwconv->get_feature_by_config(dw_explicit));
  auto pool = parser_for("avgpool");
  EXPECT_EQ(pool->get_feature_by_config({{"HW", 56}, {"CIN", 64}, {"KERNEL_SIZE", 3}, {"STRIDES", 2}}),
            pool->get_feature_by_config({{"HW", 56}, {"CIN", 64}, {"COUT", 64}, {"KERNEL_SIZE", 3}, {"POOL_STRIDES", 2}}));
  auto concat = parser_for("concat");
  EXPECT_EQ(concat->get_feature_by_config({{"HW", 7}, {"CIN1", 3}, {"CIN2", 4}}),
            concat->get_feature_by_config({{"HW", 7}, {"CIN1", 3}, {"CIN2", 4}, {"CIN3", 0}, {"CIN4", 0}}));
}

TEST(FeatureParsers, RejectMissingKeysAndWrongLengths) {
  auto p = parser_for("conv-bn-relu");
  EXPECT_THROW(p->get_feature_by_config({{"HW", 56}, {"CIN", 24}}), Error);
  EXPECT_THROW(p->get_config_by_feature({1, 2, 3}), Error);
}

}  // namespace
}  // namespace nnmeter
