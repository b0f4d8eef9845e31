// Prior sampling: distributions follow the prior CSV columns (statistically, fixed seed), value sets and
// frequent-value shares match nn-Meter, exact counts, no zero values, reproducibility, CSV errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "kernels/config_check.h"
#include "nnmeter/kernel.h"
#include "nnmeter/registry.h"
#include "sampling/prior_lib.h"
#include "support/test_support.h"

namespace nnmeter {
namespace {

using test::error_of;

KernelSuite suite_for(const std::string& name, const Json& pbc = Json::object()) {
  for (auto& info : builtin_kernels())
    if (info.name == name) return info.create(pbc);
  throw std::runtime_error("no builtin kernel " + name);
}

std::vector<double> csv_column(const std::string& file, const std::string& column) {
  return sampling::load_prior_table(file, std::nullopt, {column}).column(column);
}

// Share of values in each of the 40 equal-width bins over [lo, hi].
std::vector<double> bin_shares(const std::vector<double>& values, double lo, double hi) {
  std::vector<double> shares(40, 0.0);
  for (double v : values) shares[std::min<size_t>(39, static_cast<size_t>((v - lo) / ((hi - lo) / 40)))] += 1;
  for (double& s : shares) s /= static_cast<double>(values.size());
  return shares;
}

// Inverse-CDF sampling reproduces the column's histogram: every bin's share within 0.025 (about 5 sigma
// at n = 6000) and the mean within one bin width.
void expect_follows_column(const std::vector<double>& sampled, const std::vector<double>& column) {
  const auto [lo, hi] = std::minmax_element(column.begin(), column.end());
  auto a = bin_shares(sampled, *lo, *hi), b = bin_shares(column, *lo, *hi);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.025) << "bin " << i;
  double ma = 0, mb = 0;
  for (double v : sampled) ma += v;
  for (double v : column) mb += v;
  ma /= static_cast<double>(sampled.size());
  mb /= static_cast<double>(column.size());
  EXPECT_NEAR(ma, mb, (*hi - *lo) / 40);
  for (double v : sampled) {
    EXPECT_GE(v, *lo);
    EXPECT_LE(v, *hi);
  }
}

std::vector<double> values_of(const std::vector<KernelConfig>& configs, const std::string& key) {
  std::vector<double> out;
  for (const auto& c : configs) out.push_back(c.at(key).get<double>());
  return out;
}

double share(const std::vector<KernelConfig>& configs, const std::string& key, int64_t value) {
  double n = 0;
  for (const auto& c : configs) n += c.at(key).get<int64_t>() == value;
  return n / static_cast<double>(configs.size());
}

TEST(PriorSampling, ConvChannelsFollowThePriorColumns) {
  auto configs = suite_for("conv-bn-relu").sampler->prior_config_sampling(6000, 11);
  ASSERT_EQ(configs.size(), 6000u);
  expect_follows_column(values_of(configs, "CIN"), csv_column("conv.csv", "cin"));
  expect_follows_column(values_of(configs, "COUT"), csv_column("conv.csv", "cout"));
}

TEST(PriorSampling, DwconvPoolingAndFcFollowTheirColumns) {
  auto dw = suite_for("dwconv-bn-relu").sampler->prior_config_sampling(6000, 12);
  expect_follows_column(values_of(dw, "CIN"), csv_column("dwconv.csv", "cin"));
  auto pool = suite_for("maxpool").sampler->prior_config_sampling(6000, 13);
  expect_follows_column(values_of(pool, "CIN"), csv_column("pooling.csv", "cin"));
  // KS and strides are the tiled pooling columns: 27/54 kernel 2, 9/54 stride 1.
  EXPECT_NEAR(share(pool, "KERNEL_SIZE", 2), 0.5, 0.01);
  EXPECT_NEAR(share(pool, "POOL_STRIDES", 1), 9.0 / 54, 0.01);
  auto fc = suite_for("fc").sampler->prior_config_sampling(6000, 14);
  expect_follows_column(values_of(fc, "CIN"), csv_column("fc.csv", "cin"));
  EXPECT_GE(share(fc, "COUT", 1000), 0.5);  // the fixed half, plus drawn values that happen to be 1000
}

TEST(PriorSampling, ConvValueSetsAndFrequentShares) {
  const int n = 2000;
  auto configs = suite_for("conv-bn-relu").sampler->prior_config_sampling(n, 5);
  const std::set<int64_t> hw = {1, 3, 7, 8, 13, 14, 27, 28, 32, 56, 112, 224}, ks = {1, 3, 5, 7}, s = {1, 2, 4};
  for (const auto& c : configs) {
    EXPECT_TRUE(hw.count(c["HW"].get<int64_t>())) << c.dump();
    EXPECT_TRUE(ks.count(c["KERNEL_SIZE"].get<int64_t>())) << c.dump();
    EXPECT_TRUE(s.count(c["STRIDES"].get<int64_t>())) << c.dump();
  }
  // 30 % of the configs are frequent values: KS 7 for 60 % of them, KS 5 for 40 %; the prior column has
  // almost no 5 or 7 (27 of 1251 rows), so the shares show up nearly unchanged.
  const double r = n - static_cast<int>(0.7 * n);
  EXPECT_NEAR(share(configs, "KERNEL_SIZE", 7) * n, 0.6 * r + 0.7 * n * 23 / 1251.0, 0.05 * r);
  EXPECT_NEAR(share(configs, "KERNEL_SIZE", 5) * n, 0.4 * r, 0.05 * r);
  // HW 112 for 20 % of them, less the wide ones the largest layer's bound takes lower (the test below).
  EXPECT_GE(share(configs, "HW", 112) * n, 0.15 * r);
  // Sorted by FLOPs for profiling.
  auto flops = [](const Json& c) {
    double hw = c["HW"], cin = c["CIN"], cout = c["COUT"], k = c["KERNEL_SIZE"], st = c["STRIDES"];
    return (hw / st) * (hw / st) * cout * (k * k * cin + 1);
  };
  for (size_t i = 1; i < configs.size(); ++i) EXPECT_LE(flops(configs[i - 1]), flops(configs[i]));
}

TEST(PriorSampling, EverySamplerReturnsExactlyNPositiveConfigs) {
  for (const auto& info : builtin_kernels()) {
    auto suite = info.create(Json::object());
    for (int n : {1, 2, 7, 10, 13, 101}) {
      auto configs = suite.sampler->prior_config_sampling(n, static_cast<uint64_t>(n));
      ASSERT_EQ(configs.size(), static_cast<size_t>(n)) << info.name << " n=" << n;
      for (const auto& c : configs) {
        for (const auto& [key, value] : c.items()) {
          ASSERT_TRUE(value.is_number_integer()) << info.name << " " << c.dump();
          const bool optional_input = info.name == "concat" && (key == "CIN3" || key == "CIN4");
          EXPECT_GE(value.get<int64_t>(), optional_input ? 0 : 1) << info.name << " " << c.dump();
        }
        EXPECT_NO_THROW(suite.kernel->input_tensor_shape(c)) << info.name << " " << c.dump();
      }
    }
  }
}

TEST(PriorSampling, DrawnConvsAreNoLargerThanTheLibrarysLargestLayer) {
  const auto t = sampling::load_prior_table("conv.csv", std::nullopt, {"input_h", "cin", "cout", "ks", "stride"});
  auto macs = [](double hw, double cin, double cout, double k, double s) { return (hw / s) * (hw / s) * cin * cout * k * k; };
  double largest = 0;
  for (size_t r = 0; r < t.rows(); ++r)
    largest = std::max(largest, macs(t.column("input_h")[r], t.column("cin")[r], t.column("cout")[r], t.column("ks")[r],
                                     t.column("stride")[r]));
  int at224 = 0;
  for (const auto& c : suite_for("conv-bn-relu").sampler->prior_config_sampling(2000, 5)) {
    EXPECT_LE(macs(c["HW"], c["CIN"], c["COUT"], c["KERNEL_SIZE"], c["STRIDES"]), largest) << c.dump();
    at224 += c["HW"] == 224;
  }
  EXPECT_GE(at224, 10);  // the bound narrows the largest layers, not every layer at 224
}

TEST(PriorSampling, GroupedConvsAreWholeGroupsAndNoRealLayer) {
  const auto configs = suite_for("gconv-bn-relu").sampler->prior_config_sampling(400, 5);
  std::set<int64_t> widths;
  int at56 = 0, few_wide = 0, narrowing = 0, widening = 0, three_groups_1x1 = 0;
  for (const auto& c : configs) {
    const int64_t g = c["GROUPS"], cin = c["CIN"], cout = c["COUT"];
    EXPECT_GE(g, 2) << c.dump();
    EXPECT_EQ(cin % g, 0) << c.dump();
    EXPECT_EQ(cout % g, 0) << c.dump();
    widths.insert(cin / g);
    const int64_t hw = c["HW"];
    EXPECT_LE(hw * hw * std::max(cin, cout), 56 * 56 * 256) << c.dump() << " is wider than torchvision's grouped layers";
    if (hw == 56) ++at56;
    if (g <= 8 && cin / g >= 16) {
      ++few_wide;
      narrowing += cout * 4 <= cin;
      widening += cout == 4 * cin;
      three_groups_1x1 += g == 3 && c["KERNEL_SIZE"] == 1;
    }
  }
  EXPECT_GE(widths.size(), 6u);  // narrow (RegNet-like) and wide (ResNeXt-like) groups alike
  // A third are a few wide groups, narrowing and widening by 4 among them: ShuffleNet v1's 1x1 convs.
  EXPECT_GE(few_wide, 120);
  EXPECT_GE(narrowing, 30);
  EXPECT_GE(widening, 30);
  EXPECT_GE(three_groups_1x1, 10);
  EXPECT_GE(at56, 25);           // the bound narrows the wide layers, not every layer
  // No real layer is mixed in and no channel is re-rounded: the grouped families stay held out, groups whole.
  EXPECT_EQ(suite_for("gconv-bn-relu", {{"PRIOR_ROWS", 0.5}, {"ALIGNED_CHANNELS", 1.0}})
                .sampler->prior_config_sampling(400, 5),
            configs);
  // Fine-grained samples keep the groups and move the channels in whole groups.
  for (const auto& c : suite_for("gconv-bn-relu").sampler->finegrained_config_sampling(5, {configs[100]}, 3)) {
    EXPECT_EQ(c["GROUPS"], configs[100]["GROUPS"]);
    EXPECT_EQ(c["CIN"].get<int64_t>() % c["GROUPS"].get<int64_t>(), 0) << c.dump();
    EXPECT_EQ(c["COUT"].get<int64_t>() % c["GROUPS"].get<int64_t>(), 0) << c.dump();
  }
}

// STEM_SAMPLES: that share of the conv samples becomes 3-channel stems at input resolutions; the others stay the
// samples of the seed.
std::vector<KernelConfig> stems_among(int n) {
  const auto plain = suite_for("conv-bn-relu").sampler->prior_config_sampling(n, 7);
  const auto with = suite_for("conv-bn-relu", {{"STEM_SAMPLES", 0.0625}}).sampler->prior_config_sampling(n, 7);
  EXPECT_EQ(with.size(), plain.size());
  std::multiset<std::string> left;
  for (const auto& c : plain) left.insert(c.dump());
  std::vector<KernelConfig> stems;
  for (const auto& c : with)
    if (const auto it = left.find(c.dump()); it != left.end()) left.erase(it);
    else stems.push_back(c);
  return stems;
}

std::set<std::pair<int64_t, int64_t>> stem_forms(const std::vector<KernelConfig>& stems) {
  std::set<std::pair<int64_t, int64_t>> forms;
  for (const auto& c : stems) forms.insert({c["KERNEL_SIZE"].get<int64_t>(), c["STRIDES"].get<int64_t>()});
  return forms;
}

TEST(PriorSampling, StemSamplesReplaceAShareWithStems) {
  const auto stems = stems_among(320);
  EXPECT_EQ(stems.size(), 20u);  // 320 / 16
  for (const auto& c : stems) {
    EXPECT_EQ(c["CIN"], 3) << c.dump();
    EXPECT_GE(c["HW"].get<int64_t>(), 96) << c.dump();
  }
  // Every form of stem is among them, AlexNet's 11x11 stride 4 and the 4x4 patchify stem included.
  const std::set<std::pair<int64_t, int64_t>> all = {{3, 2}, {7, 2}, {3, 1}, {5, 2}, {11, 4}, {4, 4}};
  EXPECT_EQ(stem_forms(stems), all);
  // A build too small for one stem of each form gets the commonest first.
  const std::set<std::pair<int64_t, int64_t>> commonest = {{3, 2}, {7, 2}};
  EXPECT_EQ(stem_forms(stems_among(32)), commonest);
  // Past one of each, the forms follow their weights: mostly 3x3 stride 2 (7 of 16), AlexNet's seldom (1 of 16).
  std::map<std::pair<int64_t, int64_t>, double> share;
  const auto many = stems_among(3200);
  for (const auto& c : many) share[{c["KERNEL_SIZE"].get<int64_t>(), c["STRIDES"].get<int64_t>()}] += 1.0 / many.size();
  EXPECT_NEAR((share[{3, 2}]), 7.0 / 16, 0.08);
  EXPECT_NEAR((share[{7, 2}]), 4.0 / 16, 0.08);
  EXPECT_NEAR((share[{11, 4}]), 1.0 / 16, 0.05);
}

TEST(PriorSampling, FamilySpecificRules) {
  for (const char* k : {"split", "channelshuffle", "se"})
    for (const auto& c : suite_for(k).sampler->prior_config_sampling(300, 3)) EXPECT_EQ(c["CIN"].get<int>() % 2, 0);
  auto gap = suite_for("global-avgpool").sampler->prior_config_sampling(301, 3);
  EXPECT_NEAR(share(gap, "HW", 3), 0.5, 0.05);
  EXPECT_NEAR(share(gap, "HW", 7), 0.5, 0.05);
  auto concat = suite_for("concat").sampler->prior_config_sampling(1000, 3);
  EXPECT_NEAR(share(concat, "CIN4", 0), 0.6, 1e-9);  // 40 % have four inputs
  EXPECT_NEAR(share(concat, "CIN3", 0), 0.4, 1e-9);  // 20 % three, 40 % two
  for (const auto& c : concat) EXPECT_TRUE(c["CIN3"] != 0 || c["CIN4"] == 0) << c.dump();
}

// The transformer kernels: every other sample is a real layer of tokens.csv / attention.csv as it is, the rest
// draw the columns; no tensor of a sample exceeds 2^23 elements however the draws combine.
TEST(PriorSampling, TransformerKernelsMixRealLayersAndDrawnColumns) {
  std::set<std::pair<int64_t, int64_t>> real_tokens;  // (tokens, channels)
  const auto t = sampling::load_prior_table("tokens.csv", std::nullopt, {"tokens", "channels", "hidden"});
  for (size_t r = 0; r < t.rows(); ++r)
    real_tokens.insert({static_cast<int64_t>(t.column("tokens")[r]), static_cast<int64_t>(t.column("channels")[r])});
  const auto ln = suite_for("layernorm").sampler->prior_config_sampling(400, 5);
  for (size_t i = 0; i < ln.size(); i += 2)
    EXPECT_TRUE(real_tokens.count({ln[i]["T"].get<int64_t>(), ln[i]["CIN"].get<int64_t>()})) << ln[i].dump();
  size_t drawn_real = 0;
  for (size_t i = 1; i < ln.size(); i += 2) drawn_real += real_tokens.count({ln[i]["T"].get<int64_t>(), ln[i]["CIN"].get<int64_t>()});
  EXPECT_LT(drawn_real, 20u) << "column-wise draws should fill sizes between the real layers";

  constexpr int64_t kMax = int64_t{1} << 23;
  for (const char* k : {"layernorm", "gelu", "softmax"})
    for (const auto& c : suite_for(k).sampler->prior_config_sampling(500, 9))
      EXPECT_LE(c["T"].get<int64_t>() * c["CIN"].get<int64_t>(), kMax) << k << " " << c.dump();
  std::set<std::string> shapes;
  for (const auto& c : suite_for("linear").sampler->prior_config_sampling(500, 9)) {
    const int64_t cin = c["CIN"].get<int64_t>(), cout = c["COUT"].get<int64_t>();
    EXPECT_LE(c["T"].get<int64_t>() * std::max(cin, cout), kMax) << c.dump();
    shapes.insert(cout == 3 * cin ? "qkv" : cout == cin ? "proj" : cout > cin ? "mlp-in" : "mlp-out");
  }
  EXPECT_EQ(shapes, (std::set<std::string>{"mlp-in", "mlp-out", "proj", "qkv"}));
  for (const auto& c : suite_for("linear-gelu").sampler->prior_config_sampling(100, 9))
    EXPECT_GT(c["COUT"].get<int64_t>(), c["CIN"].get<int64_t>()) << "the MLP's first Linear widens: " << c.dump();
  int scores = 0;
  for (const auto& c : suite_for("matmul").sampler->prior_config_sampling(500, 9)) {
    const int64_t b = c["B"].get<int64_t>(), m = c["M"].get<int64_t>(), k = c["K"].get<int64_t>(), n = c["N"].get<int64_t>();
    EXPECT_LE(b * std::max({m * k, k * n, m * n}), kMax) << c.dump();
    EXPECT_TRUE(n == m || k == m) << "Q·Kᵀ is [T, d] × [d, T], A·V [T, T] × [T, d]: " << c.dump();
    scores += n == m && k != m;
  }
  EXPECT_GT(scores, 150);
  EXPECT_LT(scores, 350);
}

TEST(PriorSampling, SeededAndReproducible) {
  auto s = suite_for("conv-bn-relu").sampler;
  EXPECT_EQ(s->prior_config_sampling(50, 42), s->prior_config_sampling(50, 42));
  EXPECT_NE(s->prior_config_sampling(50, 42), s->prior_config_sampling(50, 43));
  EXPECT_THROW(s->prior_config_sampling(0, 1), Error);
  EXPECT_THROW(s->prior_config_sampling(-3, 1), Error);
}

// PRIOR_ROWS: that share of the samples are whole rows of the library (real layers), at random positions; the
// other samples are exactly the column-wise ones of the same seed; excluded models' rows and ResNeXt's
// grouped rows never appear.
TEST(PriorSampling, PriorRowsReplaceAShareWithRealLayers) {
  const auto plain = suite_for("conv-bn-relu").sampler->prior_config_sampling(200, 7);
  const auto mixed = suite_for("conv-bn-relu", {{"PRIOR_ROWS", 0.3}, {"PRIOR_ROWS_EXCLUDE", {"alexnet"}}})
                         .sampler->prior_config_sampling(200, 7);
  ASSERT_EQ(mixed.size(), 200u);
  const auto t = sampling::load_prior_table("conv.csv", std::nullopt, {"input_h", "cin", "cout", "ks", "stride", "groups"});
  std::set<std::string> real, excluded_or_grouped;
  for (size_t r = 0; r < t.rows(); ++r) {
    const KernelConfig c = {{"HW", t.column("input_h")[r]},    {"CIN", t.column("cin")[r]},
                            {"COUT", t.column("cout")[r]},     {"KERNEL_SIZE", t.column("ks")[r]},
                            {"STRIDES", t.column("stride")[r]}};
    const KernelConfig as_int = {{"HW", c["HW"].get<int64_t>()},       {"CIN", c["CIN"].get<int64_t>()},
                                 {"COUT", c["COUT"].get<int64_t>()},   {"KERNEL_SIZE", c["KERNEL_SIZE"].get<int64_t>()},
                                 {"STRIDES", c["STRIDES"].get<int64_t>()}};
    (t.models()[r] == "alexnet" || t.column("groups")[r] != 1 ? excluded_or_grouped : real).insert(as_int.dump());
  }
  std::multiset<std::string> plain_set;
  for (const auto& c : plain) plain_set.insert(c.dump());
  size_t from_rows = 0, kept = 0;
  for (const auto& c : mixed) {
    if (auto it = plain_set.find(c.dump()); it != plain_set.end()) {
      plain_set.erase(it);
      ++kept;
    } else {
      EXPECT_TRUE(real.count(c.dump())) << c.dump();
      ++from_rows;
    }
    if (!real.count(c.dump())) {
      EXPECT_FALSE(excluded_or_grouped.count(c.dump())) << c.dump();
    }
  }
  // 60 positions replaced (a real row may equal a column-wise draw of another position, hence the ranges).
  EXPECT_EQ(kept + from_rows, 200u);
  EXPECT_GE(kept, 140u);
  EXPECT_GE(from_rows, 50u);
  std::set<std::string> distinct_rows;
  for (const auto& c : mixed)
    if (real.count(c.dump())) distinct_rows.insert(c.dump());
  EXPECT_GE(distinct_rows.size(), from_rows);  // rows are drawn without repetition
  // Stems (CIN 3) are in the library; 60 real rows out of ~1,000 distinct make at least one likely but not
  // certain, so the whole library is asked for instead.
  const auto all_rows = suite_for("conv-bn-relu", {{"PRIOR_ROWS", 1.0}}).sampler->prior_config_sampling(2000, 1);
  EXPECT_GE(std::count_if(all_rows.begin(), all_rows.end(), [](const KernelConfig& c) { return c["CIN"] == 3; }), 4);
  EXPECT_EQ(suite_for("conv-bn-relu", {{"PRIOR_ROWS", 0.3}}).sampler->prior_config_sampling(200, 7),
            suite_for("conv-bn-relu", {{"PRIOR_ROWS", 0.3}}).sampler->prior_config_sampling(200, 7));
  for (const char* kernel : {"dwconv-bn-relu", "maxpool", "fc"})
    EXPECT_EQ(suite_for(kernel, {{"PRIOR_ROWS", 0.5}}).sampler->prior_config_sampling(40, 3).size(), 40u) << kernel;
}

TEST(PriorSampling, OverrideFolderIsReadAtRunTime) {
  test::TempDir dir;
  // A one-row library: every draw is that row's value.
  test::write_text(dir / "conv.csv", "model,input_h,input_w,cin,cout,ks,stride,groups\nm,7,7,40,50,3,1,1\n");
  auto s = suite_for("conv-bn-relu", {{"PRIOR_CONFIG_LIB", dir.path().string()}}).sampler;
  for (const auto& c : s->prior_config_sampling(20, 1)) {
    EXPECT_EQ(c["CIN"], 40);
    EXPECT_EQ(c["COUT"], 50);
  }
}

TEST(PriorSampling, UnreadableOrBrokenPriorCsvIsAOneLineError) {
  test::TempDir dir;
  auto missing = suite_for("conv-bn-relu", {{"PRIOR_CONFIG_LIB", (dir / "nope").string()}}).sampler;
  std::string msg = error_of([&] { missing->prior_config_sampling(5, 1); });
  EXPECT_NE(msg.find("cannot read prior config CSV"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nope"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);

  test::write_text(dir / "fc.csv", "model,cin\nm,5\n");
  auto no_column = suite_for("fc", {{"PRIOR_CONFIG_LIB", dir.path().string()}}).sampler;
  msg = error_of([&] { no_column->prior_config_sampling(5, 1); });
  EXPECT_NE(msg.find("has no column 'cout'"), std::string::npos) << msg;

  test::write_text(dir / "pooling.csv", "model,input_h,input_w,cin,cout,ks,stride\nm,7,7,x,3,3,2\n");
  auto bad_value = suite_for("avgpool", {{"PRIOR_CONFIG_LIB", dir.path().string()}}).sampler;
  msg = error_of([&] { bad_value->prior_config_sampling(5, 1); });
  EXPECT_NE(msg.find("line 2"), std::string::npos) << msg;
}

// ALIGNED_CHANNELS: that share of the column-wise samples have every channel count rounded to a multiple of 8
// (make_divisible: nearest multiple, at least 8, never 10 % below), everything else of each sample and every
// other sample unchanged; real rows of PRIOR_ROWS are never rounded (a 3-channel stem stays 3).
TEST(PriorSampling, AlignedChannelsRoundAShareToMultiplesOfEight) {
  auto is_aligned = [](const KernelConfig& c) {
    for (const auto& [key, value] : c.items())
      if ((key == "COUT" || key.rfind("CIN", 0) == 0) && value.get<int64_t>() % 8 != 0) return false;
    return true;
  };
  for (const char* kernel : {"conv-bn-relu", "dwconv-bn-relu", "maxpool", "fc", "concat", "relu", "channelshuffle"}) {
    SCOPED_TRACE(kernel);
    const auto plain = suite_for(kernel).sampler->prior_config_sampling(400, 5);
    const auto aligned = suite_for(kernel, {{"ALIGNED_CHANNELS", 0.5}}).sampler->prior_config_sampling(400, 5);
    ASSERT_EQ(aligned.size(), plain.size());
    // Conv kernels are sorted by FLOPs, which rounding changes: compare them as multisets of their
    // non-channel values, the others position by position.
    auto without_channels = [](KernelConfig c) {
      for (const char* k : {"CIN", "COUT", "CIN1", "CIN2", "CIN3", "CIN4"}) c.erase(k);
      return c.dump();
    };
    std::multiset<std::string> rest_plain, rest_aligned;
    size_t plain_aligned = 0, now_aligned = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
      rest_plain.insert(without_channels(plain[i]));
      rest_aligned.insert(without_channels(aligned[i]));
      plain_aligned += is_aligned(plain[i]);
      now_aligned += is_aligned(aligned[i]);
    }
    EXPECT_EQ(rest_plain, rest_aligned);
    EXPECT_GE(now_aligned, plain_aligned + 150);  // 200 positions rounded, a few were aligned already
    for (const auto& c : aligned)
      for (const auto& [key, value] : c.items())
        if (key == "COUT" || key.rfind("CIN", 0) == 0) {
          EXPECT_LE(value.get<int64_t>(), kernels::check::kMaxChannels);
        }
  }
  // The rounding of one value: nearest multiple of 8, at least 8, not more than 10 % down.
  const auto all = suite_for("relu", {{"ALIGNED_CHANNELS", 1.0}}).sampler->prior_config_sampling(300, 9);
  const auto none = suite_for("relu").sampler->prior_config_sampling(300, 9);
  for (size_t i = 0; i < all.size(); ++i) {
    const int64_t before = none[i]["CIN"].get<int64_t>(), after = all[i]["CIN"].get<int64_t>();
    EXPECT_EQ(after % 8, 0);
    EXPECT_GE(after, 8);
    EXPECT_GE(10 * after, 9 * before) << before << " -> " << after;
    EXPECT_LE(after, std::max<int64_t>(16, before + 12)) << before << " -> " << after;
  }
  // With PRIOR_ROWS, real rows keep their channels: the whole library asked for holds 3-channel stems.
  const auto rows = suite_for("conv-bn-relu", {{"PRIOR_ROWS", 1.0}, {"ALIGNED_CHANNELS", 1.0}})
                        .sampler->prior_config_sampling(2000, 1);
  EXPECT_GE(std::count_if(rows.begin(), rows.end(), [](const KernelConfig& c) { return c["CIN"] == 3; }), 4);
  EXPECT_EQ(suite_for("fc", {{"ALIGNED_CHANNELS", 0.3}}).sampler->prior_config_sampling(40, 3),
            suite_for("fc", {{"ALIGNED_CHANNELS", 0.3}}).sampler->prior_config_sampling(40, 3));
}

// WIDTH_MULTIPLIERS: the real rows of PRIOR_ROWS at the widths of the list (channels × w rounded to multiples
// of 8 as make_divisible rounds; a 3-channel image input stays 3); width 1 alone is PRIOR_ROWS unchanged, and
// fc rows (a classifier's outputs) are not scaled.
TEST(PriorSampling, WidthMultipliersPutRealRowsAtOtherWidths) {
  auto rounded = [](int64_t c, double w) {
    if (c <= 3) return c;
    const auto scaled = static_cast<int64_t>(std::llround(static_cast<double>(c) * w));
    int64_t v = std::max<int64_t>(8, (scaled + 4) / 8 * 8);
    return 10 * v < 9 * scaled ? v + 8 : v;
  };
  // The library's ungrouped conv rows (~430 distinct), and each at half width.
  const auto t = sampling::load_prior_table("conv.csv", std::nullopt, {"input_h", "cin", "cout", "ks", "stride", "groups"});
  std::set<std::string> at_one, at_half;
  for (size_t r = 0; r < t.rows(); ++r) {
    if (t.column("groups")[r] != 1) continue;
    auto col = [&](const char* name) { return static_cast<int64_t>(t.column(name)[r]); };
    KernelConfig c = {{"HW", col("input_h")}, {"CIN", col("cin")}, {"COUT", col("cout")}, {"KERNEL_SIZE", col("ks")},
                      {"STRIDES", col("stride")}};
    at_one.insert(c.dump());
    for (const char* k : {"CIN", "COUT"}) {
      c[k] = rounded(c[k].get<int64_t>(), 0.5);
    }
    at_half.insert(c.dump());
  }
  ASSERT_GT(at_one.size(), 400u);
  // 300 samples, all rows: every one a real row at half width, channels multiples of 8 but the stems' 3.
  const auto half = suite_for("conv-bn-relu", {{"PRIOR_ROWS", 1.0}, {"WIDTH_MULTIPLIERS", {0.5}}})
                        .sampler->prior_config_sampling(300, 2);
  size_t stems = 0;
  for (const auto& c : half) {
    EXPECT_EQ(at_half.count(c.dump()), 1u) << c.dump();
    stems += c["CIN"] == 3;
    for (const char* k : {"CIN", "COUT"}) {
      if (c[k].get<int64_t>() > 3) {
        EXPECT_EQ(c[k].get<int64_t>() % 8, 0) << c.dump();
      }
    }
  }
  EXPECT_GE(stems, 4u);
  // Two widths: the pool doubles, and both widths are drawn.
  const auto mixed = suite_for("conv-bn-relu", {{"PRIOR_ROWS", 1.0}, {"WIDTH_MULTIPLIERS", {0.5, 1.0}}})
                         .sampler->prior_config_sampling(300, 2);
  size_t from_half = 0, from_one = 0;
  for (const auto& c : mixed) {
    EXPECT_TRUE(at_half.count(c.dump()) > 0 || at_one.count(c.dump()) > 0) << c.dump();
    from_half += at_half.count(c.dump()) > 0 && at_one.count(c.dump()) == 0;
    from_one += at_one.count(c.dump()) > 0 && at_half.count(c.dump()) == 0;
  }
  EXPECT_GT(from_half, 80u);
  EXPECT_GT(from_one, 80u);
  EXPECT_EQ(suite_for("conv-bn-relu", {{"PRIOR_ROWS", 0.3}, {"WIDTH_MULTIPLIERS", {1.0}}}).sampler->prior_config_sampling(200, 7),
            suite_for("conv-bn-relu", {{"PRIOR_ROWS", 0.3}}).sampler->prior_config_sampling(200, 7));
  EXPECT_EQ(suite_for("fc", {{"PRIOR_ROWS", 0.5}, {"WIDTH_MULTIPLIERS", {0.5}}}).sampler->prior_config_sampling(40, 3),
            suite_for("fc", {{"PRIOR_ROWS", 0.5}}).sampler->prior_config_sampling(40, 3));
  // Depthwise rows scale too (their only channel count).
  const auto dw = suite_for("dwconv-bn-relu", {{"PRIOR_ROWS", 1.0}, {"WIDTH_MULTIPLIERS", {0.75}}}).sampler->prior_config_sampling(20, 2);
  for (const auto& c : dw) EXPECT_EQ(c["CIN"].get<int64_t>() % 8, 0) << c.dump();
}

// INPUT_RESOLUTIONS: each sample's HW becomes its layer's HW in a network at a resolution drawn from the list,
// ceil(HW * r / 224); nothing else changes, and without the key the samples are nn-Meter's.
TEST(PriorSampling, InputResolutionsScaleHwToNetworksAtThoseInputs) {
  auto scaled = [](KernelConfig c, int64_t r) {
    if (c.contains("HW")) c["HW"] = (c["HW"].get<int64_t>() * r + 223) / 224;
    return c.dump();
  };
  for (const char* kernel : {"conv-bn-relu", "dwconv-bn-relu", "maxpool", "relu", "concat", "global-avgpool", "fc"}) {
    SCOPED_TRACE(kernel);
    const auto plain = suite_for(kernel).sampler->prior_config_sampling(400, 5);
    // One resolution: exactly the plain samples at 128 (conv kernels re-sorted by FLOPs, so as multisets).
    const auto at128 = suite_for(kernel, {{"INPUT_RESOLUTIONS", Json::array({128})}}).sampler->prior_config_sampling(400, 5);
    std::multiset<std::string> want, got;
    for (const auto& c : plain) want.insert(scaled(c, 128));
    for (const auto& c : at128) got.insert(c.dump());
    EXPECT_EQ(got, want);
    // Two: every sample is at one of them, each resolution taking about half.
    const auto mixed = suite_for(kernel, {{"INPUT_RESOLUTIONS", Json::array({160, 224})}}).sampler->prior_config_sampling(400, 5);
    std::multiset<std::string> at160, at224;
    size_t movable = 0;  // samples whose HW differs at 160 (a 3 stays 3)
    for (const auto& c : plain) {
      at160.insert(scaled(c, 160));
      at224.insert(c.dump());
      movable += scaled(c, 160) != c.dump();
    }
    size_t changed = 0;
    for (const auto& c : mixed) {
      const std::string text = c.dump();
      EXPECT_TRUE(at160.count(text) > 0 || at224.count(text) > 0) << text;
      changed += at224.count(text) == 0;
    }
    if (std::string(kernel) == "fc") {
      EXPECT_EQ(mixed, plain);  // no HW
    } else {
      EXPECT_GT(movable, 80u);
      EXPECT_GT(changed, movable * 3 / 10);
      EXPECT_LT(changed, movable * 7 / 10);
    }
  }
  // The feature maps of a ResNet at 128: 112 -> 64, 56 -> 32, 7 -> 4, and 1 stays 1.
  const auto convs = suite_for("conv-bn-relu", {{"INPUT_RESOLUTIONS", Json::array({128})}}).sampler->prior_config_sampling(2000, 1);
  std::set<int64_t> hws;
  for (const auto& c : convs) hws.insert(c["HW"].get<int64_t>());
  for (int64_t hw : {1, 4, 32, 64, 128}) EXPECT_EQ(hws.count(hw), 1u) << hw;
  for (int64_t hw : {7, 56, 112, 224}) EXPECT_EQ(hws.count(hw), 0u) << hw;
}

}  // namespace
}  // namespace nnmeter
