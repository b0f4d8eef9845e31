#include "sampling/builtin_samplers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include <spdlog/spdlog.h>

#include "common/rng.h"
#include "kernels/config_check.h"
#include "nnmeter/workspace.h"
#include "sampling/prior_lib.h"

namespace nnmeter::sampling {

using kernels::Family;

namespace {

// Value sets nn-Meter snaps sampled values to (data_sampler/prior_distribution_sampler.py).
const std::vector<int64_t> kConvHw = {1, 3, 7, 8, 13, 14, 27, 28, 32, 56, 112, 224};
const std::vector<int64_t> kHw = {1, 3, 7, 14, 28, 56, 112, 224};
const std::vector<int64_t> kKs = {1, 3, 5, 7};
const std::vector<int64_t> kConvStrides = {1, 2, 4};
const std::vector<int64_t> kStrides = {1, 2};
const std::vector<int64_t> kPoolHw = {14, 28, 56, 112, 224};
const std::vector<int64_t> kPoolKs = {2, 3};
const std::vector<int64_t> kConcatHw = {7, 14, 28, 56};

// `hw`, or when `over(hw)` the largest of the ascending `hws` below it that is not (the smallest if all are).
int64_t largest_hw_within(int64_t hw, const std::vector<int64_t>& hws, const std::function<bool(int64_t)>& over) {
  for (auto smaller = hws.rbegin(); over(hw) && smaller != hws.rend(); ++smaller) hw = std::min(hw, *smaller);
  return hw;
}

// Fixed shares of frequent values: int(share * r) copies of each value but the last, which takes the
// remainder so the list has exactly r entries.
std::vector<int64_t> frequent(int r, const std::vector<std::pair<int64_t, double>>& shares) {
  std::vector<int64_t> out;
  for (size_t i = 0; i + 1 < shares.size(); ++i)
    out.insert(out.end(), static_cast<size_t>(shares[i].second * r), shares[i].first);
  out.insert(out.end(), static_cast<size_t>(r) - out.size(), shares.back().first);
  return out;
}

// `n1` snapped draws from `column` followed by the frequent values for the remaining n - n1 slots.
std::vector<int64_t> drawn_then_frequent(const std::vector<double>& column, int n, int n1,
                                         const std::vector<int64_t>& valid,
                                         const std::vector<std::pair<int64_t, double>>& shares, Rng& rng) {
  std::vector<int64_t> v = sample_from_distribution(column, n1, rng);
  snap_to(v, valid);
  std::vector<int64_t> rest = frequent(n - n1, shares);
  v.insert(v.end(), rest.begin(), rest.end());
  rng.shuffle(v);
  return v;
}

// An empirical column repeated until it has n entries, snapped and shuffled (nn-Meter tiles pooling's ks
// and stride columns instead of sampling them).
std::vector<int64_t> tiled(const std::vector<double>& column, int n, const std::vector<int64_t>& valid, Rng& rng) {
  std::vector<int64_t> v;
  while (static_cast<int>(v.size()) < n)
    for (double x : column) v.push_back(static_cast<int64_t>(x));
  snap_to(v, valid);
  rng.shuffle(v);
  v.resize(static_cast<size_t>(n));
  return v;
}

double conv_flops(const KernelConfig& c, bool depthwise) {
  const double hw = c["HW"].get<double>(), cin = c["CIN"].get<double>(), k = c["KERNEL_SIZE"].get<double>(),
               s = c["STRIDES"].get<double>(), groups = c.value("GROUPS", 1.0);
  const double params = depthwise ? cin * (k * k + 1) : c["COUT"].get<double>() * (k * k * cin / groups + 1);
  return 2 * (hw / s) * (hw / s) * params;
}

void sort_by_flops(std::vector<KernelConfig>& configs, bool depthwise) {
  std::stable_sort(configs.begin(), configs.end(), [depthwise](const KernelConfig& a, const KernelConfig& b) {
    return conv_flops(a, depthwise) < conv_flops(b, depthwise);
  });
}

void sort_fc(std::vector<KernelConfig>::iterator first, std::vector<KernelConfig>::iterator last) {
  auto flops = [](const KernelConfig& c) { return (2 * c["CIN"].get<double>() + 1) * c["COUT"].get<double>(); };
  std::stable_sort(first, last, [&](const KernelConfig& a, const KernelConfig& b) { return flops(a) < flops(b); });
}

int64_t make_even(int64_t c) { return c % 2 == 0 ? c : c + 1; }

// Channels as NAS spaces and torchvision's mobile models round them (make_divisible with divisor 8): to the
// nearest multiple of 8, at least 8, never more than 10 % below the drawn value.
int64_t make_divisible(int64_t c) {
  int64_t v = std::max<int64_t>(8, (c + 4) / 8 * 8);
  if (10 * v < 9 * c) v += 8;
  return std::min<int64_t>(v, kernels::check::kMaxChannels / 8 * 8);
}

// The channel keys of a sampled config (0 marks an absent concat input and stays 0).
bool is_channel_key(const std::string& key) { return key == "COUT" || key.rfind("CIN", 0) == 0; }

class BuiltinSampler : public ConfigSampler {
 public:
  BuiltinSampler(Family family, std::string kernel, const PredictorBuildConfig& build)
      : family_(family),
        kernel_(std::move(kernel)),
        prior_dir_(build.prior_config_lib),
        row_share_(build.prior_rows),
        row_exclude_(build.prior_rows_exclude),
        aligned_share_(build.aligned_channels),
        stem_share_(build.stem_samples),
        resolutions_(build.input_resolutions),
        widths_(build.width_multipliers) {}

  std::vector<KernelConfig> prior_config_sampling(int n, uint64_t seed) override {
    if (n <= 0) throw Error("sample_num must be positive, got " + std::to_string(n));
    Rng rng(seed);
    // ALIGNED_CHANNELS draws from its own stream, so it changes nothing but the channels of the positions it
    // picks: the other samples stay the ones of the seed.
    Rng align_rng(seed ^ 0x9e3779b97f4a7c15ULL);
    std::vector<KernelConfig> out = family_prior(n, rng, align_rng);
    // INPUT_RESOLUTIONS draws from its own stream too: without it the samples are nn-Meter's for the seed.
    Rng resolution_rng(seed ^ 0xc2b2ae3d27d4eb4fULL);
    scale_to_resolutions(out, resolution_rng);
    // Conv sampling sorts by FLOPs "for better profiling" (small kernels first), as nn-Meter does.
    if (family_ == Family::Conv || family_ == Family::DwConv || family_ == Family::GConv)
      sort_by_flops(out, family_ == Family::DwConv);
    return out;
  }

  std::vector<KernelConfig> finegrained_config_sampling(int n, const std::vector<KernelConfig>& configs,
                                                        uint64_t seed) override {
    if (n <= 0) throw Error("the fine-grained sample number must be positive, got " + std::to_string(n));
    Rng rng(seed);
    std::vector<KernelConfig> out;
    for (const auto& cfg : configs) {
      auto more = around(cfg, n, rng);
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }

 private:
  std::vector<KernelConfig> family_prior(int n, Rng& rng, Rng& align_rng) const {
    switch (family_) {
      case Family::Conv: return conv_prior(n, rng, align_rng);
      case Family::DwConv: return dwconv_prior(n, rng, align_rng);
      case Family::GConv: return gconv_prior(n, rng);
      case Family::Pooling: return pooling_prior(n, rng, align_rng);
      case Family::Fc: return fc_prior(n, rng, align_rng);
      case Family::Concat: return concat_prior(n, rng, align_rng);
      case Family::HwCin: return hwcin_prior(n, rng, align_rng);
      case Family::CinEven: {
        auto configs = hwcin_prior(n, rng, align_rng);
        for (auto& c : configs) c["CIN"] = make_even(c["CIN"].get<int64_t>());
        return configs;
      }
      case Family::Tokens: return tokens_prior(n, rng);
      case Family::Linear: return linear_prior(n, rng);
      case Family::MatMul: return matmul_prior(n, rng);
      case Family::GlobalAvgPool: {
        auto configs = hwcin_prior(n, rng, align_rng);
        std::vector<int64_t> hws(static_cast<size_t>(n / 2 + 1), 3);
        hws.insert(hws.end(), static_cast<size_t>(n / 2 + 1), 7);
        rng.shuffle(hws);
        for (size_t i = 0; i < configs.size(); ++i) configs[i]["HW"] = hws[i];
        return configs;
      }
    }
    return {};
  }

  PriorTable table(const std::string& file, const std::vector<std::string>& columns) const {
    return load_prior_table(file, prior_dir_, columns);
  }

  std::vector<KernelConfig> conv_prior(int n, Rng& rng, Rng& align_rng) const {
    PriorTable t = table("conv.csv", {"input_h", "cin", "cout", "ks", "stride"});
    auto cins = sample_from_distribution(t.column("cin"), n, rng);
    auto couts = sample_from_distribution(t.column("cout"), n, rng);
    const int n1 = static_cast<int>(0.7 * n);
    auto hws = drawn_then_frequent(t.column("input_h"), n, n1, kConvHw, {{112, 0.2}, {56, 0.4}, {28, 0.4}}, rng);
    auto kss = drawn_then_frequent(t.column("ks"), n, n1, kKs, {{5, 0.4}, {7, 0.6}}, rng);
    auto ss = drawn_then_frequent(t.column("stride"), n, n1, kConvStrides, {{2, 0.4}, {1, 0.6}}, rng);
    std::vector<KernelConfig> out;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i)
      out.push_back({{"HW", hws[i]}, {"CIN", cins[i]}, {"COUT", couts[i]}, {"KERNEL_SIZE", kss[i]}, {"STRIDES", ss[i]}});
    align_channels(out, align_rng);
    within_largest_layer(out, t);
    mix_in_rows(out, "conv.csv",
                {{"input_h", "HW"}, {"cin", "CIN"}, {"cout", "COUT"}, {"ks", "KERNEL_SIZE"}, {"stride", "STRIDES"}}, rng);
    add_stems(out, rng);
    return out;
  }

  // HW, CIN, COUT and KERNEL_SIZE drawn apart multiply into layers no network has: the few samples larger than the
  // prior library's largest layer took most of the kernel's measuring time, while the regressor retrained without
  // them predicted the main job's conv layers as well or better (docs/accuracy.md). Such a sample gets a smaller
  // HW, as the grouped convs' do; its other keys and every other sample stay the seed's.
  static void within_largest_layer(std::vector<KernelConfig>& out, const PriorTable& t) {
    auto macs = [](double hw, double cin, double cout, double k, double s) { return (hw / s) * (hw / s) * cin * cout * k * k; };
    double largest = 0;
    for (size_t r = 0; r < t.rows(); ++r)
      largest = std::max(largest, macs(t.column("input_h")[r], t.column("cin")[r], t.column("cout")[r], t.column("ks")[r],
                                       t.column("stride")[r]));
    for (KernelConfig& c : out) {
      auto over = [&](int64_t hw) {
        return macs(static_cast<double>(hw), c["CIN"].get<double>(), c["COUT"].get<double>(), c["KERNEL_SIZE"].get<double>(),
                    c["STRIDES"].get<double>()) > largest;
      };
      c["HW"] = largest_hw_within(c["HW"].get<int64_t>(), kConvHw, over);
    }
  }

  // STEM_SAMPLES: a network's first conv reads the 3-channel image at full resolution, and its speed per FLOP is
  // unlike any other layer's. Column-wise draws give no such layer and PRIOR_ROWS rarely one (the library has few
  // distinct stems): a build without one predicted real stems far too slow, and the whole networks too slow with
  // them (bench/RESULTS-main-job.md). That share of the samples becomes stems at the resolutions networks are run at,
  // at positions of a stream of its own.
  //
  // Stems come in a few forms, and a form no sample has is extrapolated: AlexNet's 11x11 stride-4 stem came out
  // far too slow without a sample of its form, close with one (docs/accuracy.md). So each form is
  // drawn once before any is drawn twice; the rest follow the forms' weights (their share among the families we know).
  void add_stems(std::vector<KernelConfig>& out, Rng& rng) const {
    struct Form {
      int64_t kernel_size, stride;
      uint64_t weight;  // of 16
    };
    static const std::vector<Form> kForms = {
        {3, 2, 7},   // MobileNets, EfficientNets, MnasNet, RegNets, ShuffleNets
        {7, 2, 4},   // ResNets, ResNeXts, GoogLeNet, DenseNets
        {3, 1, 2},   // VGG keeps HW
        {5, 2, 1},
        {11, 4, 1},  // AlexNet
        {4, 4, 1},   // ConvNeXt's and Swin's patchify stems
    };
    static const std::vector<int64_t> kStemHw = {96, 128, 160, 192, 224, 256, 288}, kStemCout = {16, 24, 32, 48, 64, 96};
    const auto k = static_cast<int>(std::lround(stem_share_ * static_cast<double>(out.size())));
    if (k == 0) return;
    Rng stem_rng(rng.next());
    size_t drawn = 0;
    for (int64_t at : sample_in_range(0, static_cast<int64_t>(out.size()) - 1, k, stem_rng)) {
      const uint64_t hw = stem_rng.below(kStemHw.size()), cout = stem_rng.below(kStemCout.size());
      size_t form = drawn++;
      if (form >= kForms.size()) {
        uint64_t w = stem_rng.below(16);
        for (form = 0; w >= kForms[form].weight; ++form) w -= kForms[form].weight;
      }
      out[static_cast<size_t>(at)] = {{"HW", kStemHw[hw]},
                                      {"CIN", 3},
                                      {"COUT", kStemCout[cout]},
                                      {"KERNEL_SIZE", kForms[form].kernel_size},
                                      {"STRIDES", kForms[form].stride}};
    }
  }

  std::vector<KernelConfig> dwconv_prior(int n, Rng& rng, Rng& align_rng) const {
    PriorTable t = table("dwconv.csv", {"input_h", "cin", "ks", "stride"});
    auto cins = sample_from_distribution(t.column("cin"), n, rng);
    const int n1 = static_cast<int>(0.8 * n);
    auto hws = drawn_then_frequent(t.column("input_h"), n, n1, kHw, {{112, 0.4}, {56, 0.4}, {28, 0.2}}, rng);
    auto kss = drawn_then_frequent(t.column("ks"), n, n1, kKs, {{5, 0.4}, {7, 0.6}}, rng);
    auto ss = drawn_then_frequent(t.column("stride"), n, n1, kStrides, {{2, 0.5}, {1, 0.5}}, rng);
    std::vector<KernelConfig> out;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i)
      out.push_back({{"HW", hws[i]}, {"CIN", cins[i]}, {"KERNEL_SIZE", kss[i]}, {"STRIDES", ss[i]}});
    align_channels(out, align_rng);
    mix_in_rows(out, "dwconv.csv", {{"input_h", "HW"}, {"cin", "CIN"}, {"ks", "KERNEL_SIZE"}, {"stride", "STRIDES"}}, rng);
    return out;
  }

  // Ours: grouped convs. Apart from ResNeXt's 16 rows the prior library has none, and the grouped families are
  // held out of every set to judge the predictors on networks unlike their samples (bench/RESULTS-accuracy.md),
  // so every sample is drawn: HW and CIN from the conv columns, then a group width, CIN rounded to whole groups.
  // Channels are whole groups already, so ALIGNED_CHANNELS and PRIOR_ROWS leave these samples alone.
  std::vector<KernelConfig> gconv_prior(int n, Rng& rng) const {
    // Groups of 2 channels ran far slower per FLOP than those of 16 or more on onednn_cpu, and no torchvision
    // network has them: such samples taught the regressor outliers. Groups of 6-15 channels off a multiple of 8
    // (ShuffleNet v1's narrow widths) run a slower gemm path; drawn among these samples they made the regressor
    // over-predict RegNet's grouped convs, so they stay out until a feature tells the paths apart
    // (docs/accuracy.md).
    static const std::vector<int64_t> kGroupWidths = {4, 8, 16, 24, 32, 48, 64, 128};
    static const std::vector<int64_t> kFewGroups = {2, 3, 4, 8};
    static constexpr int64_t kMaxGroupedActivation = 56 * 56 * 256;
    PriorTable t = table("conv.csv", {"input_h", "cin"});
    auto cins = sample_from_distribution(t.column("cin"), n, rng);
    auto hws = drawn_then_frequent(t.column("input_h"), n, static_cast<int>(0.7 * n), kHw,
                                   {{56, 0.3}, {28, 0.4}, {14, 0.3}}, rng);
    std::vector<int64_t> kss = frequent(n, {{1, 0.15}, {5, 0.15}, {3, 0.7}}), ss = frequent(n, {{2, 0.3}, {1, 0.7}});
    rng.shuffle(kss);
    rng.shuffle(ss);
    std::vector<KernelConfig> out;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      int64_t groups = 0, cin = 0, cout = 0, ks = kss[i];
      if (i % 3 == 2) {
        // One sample in three is a few wide groups: ShuffleNet v1's 1x1 convs of 3 groups (240 → 60 → 240
        // channels) were over-predicted by a regressor whose samples were all many narrow groups
        // (docs/cli-sampling.md). Groups of at least 16 channels, a multiple of 4, keep to the fast path (the
        // paragraph above).
        groups = kFewGroups[rng.below(kFewGroups.size())];
        const int64_t width = std::clamp<int64_t>((cins[i] / groups + 2) / 4 * 4, 16, kernels::check::kMaxChannels / 4 / groups);
        cin = groups * width;
        const int64_t ratio = static_cast<int64_t>(rng.below(3));  // narrowing by 4, even, widening by 4
        cout = ratio == 0 ? std::max<int64_t>(groups * 4, cin / 4 / (groups * 4) * (groups * 4)) : ratio == 1 ? cin : 4 * cin;
        if (rng.below(2) == 0) ks = 1;
      } else {
        const int64_t width = kGroupWidths[rng.below(kGroupWidths.size())];
        groups = std::clamp<int64_t>((cins[i] + width / 2) / width, 2, kernels::check::kMaxChannels / 2 / width);
        cin = groups * width;
        cout = rng.below(4) == 0 ? 2 * cin : cin;  // mostly CIN → CIN, as ResNeXt-style blocks have them
      }
      // HW and CIN are drawn apart, so a wide layer could come out at 224 x 224: the few samples of a build beyond
      // this bound took most of the kernel's measuring time (docs/cli-sampling.md). torchvision's grouped layers
      // stay within it (ResNeXt-101 32x8d: 256 channels at 56 x 56); a wider layer gets a smaller HW.
      const int64_t widest = std::max(cin, cout);
      const int64_t hw = largest_hw_within(hws[i], kHw, [&](int64_t h) { return h * h * widest > kMaxGroupedActivation; });
      out.push_back({{"HW", hw}, {"CIN", cin}, {"COUT", cout}, {"KERNEL_SIZE", ks}, {"STRIDES", ss[i]},
                     {"GROUPS", groups}});
    }
    return out;
  }

  std::vector<KernelConfig> pooling_prior(int n, Rng& rng, Rng& align_rng) const {
    PriorTable t = table("pooling.csv", {"input_h", "cin", "ks", "stride"});
    auto cins = sample_from_distribution(t.column("cin"), n, rng);
    auto hws = sample_from_distribution(t.column("input_h"), n, rng);
    snap_to(hws, kPoolHw);
    auto kss = tiled(t.column("ks"), n, kPoolKs, rng);
    auto ss = tiled(t.column("stride"), n, kStrides, rng);
    std::vector<KernelConfig> out;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i)
      out.push_back({{"HW", hws[i]}, {"CIN", cins[i]}, {"KERNEL_SIZE", kss[i]}, {"POOL_STRIDES", ss[i]}});
    align_channels(out, align_rng);
    mix_in_rows(out, "pooling.csv", {{"input_h", "HW"}, {"cin", "CIN"}, {"ks", "KERNEL_SIZE"}, {"stride", "POOL_STRIDES"}},
                rng);
    return out;
  }

  std::vector<KernelConfig> fc_prior(int n, Rng& rng, Rng& align_rng) const {
    PriorTable t = table("fc.csv", {"cin", "cout"});
    const int fixed = n / 2;
    auto cins = sample_from_distribution(t.column("cin"), n, rng);
    auto couts = sample_from_distribution(t.column("cout"), n - fixed, rng);
    std::vector<KernelConfig> out;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      int64_t cout = static_cast<int>(i) < fixed ? 1000 : couts[i - static_cast<size_t>(fixed)];
      out.push_back({{"CIN", cins[i]}, {"COUT", cout}});
    }
    align_channels(out, align_rng);
    mix_in_rows(out, "fc.csv", {{"cin", "CIN"}, {"cout", "COUT"}}, rng);
    sort_fc(out.begin(), out.begin() + fixed);
    sort_fc(out.begin() + fixed, out.end());
    return out;
  }

  std::vector<KernelConfig> concat_prior(int n, Rng& rng, Rng& align_rng) const {
    PriorTable t = table("conv.csv", {"input_h", "cin"});
    auto hws = sample_from_distribution(t.column("input_h"), n, rng);
    snap_to(hws, kConcatHw);
    std::vector<std::vector<int64_t>> cins;
    for (int k = 0; k < 4; ++k) cins.push_back(sample_from_distribution(t.column("cin"), n, rng));
    std::vector<int64_t> ns = frequent(n, {{4, 0.4}, {3, 0.2}, {2, 0.4}});
    rng.shuffle(ns);
    std::vector<KernelConfig> out;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      KernelConfig c = {{"HW", hws[i]}};
      for (int k = 0; k < 4; ++k) c["CIN" + std::to_string(k + 1)] = k < ns[i] ? cins[static_cast<size_t>(k)][i] : 0;
      out.push_back(std::move(c));
    }
    align_channels(out, align_rng);
    return out;
  }

  std::vector<KernelConfig> hwcin_prior(int n, Rng& rng, Rng& align_rng) const {
    PriorTable t = table("conv.csv", {"input_h", "cin"});
    auto cins = sample_from_distribution(t.column("cin"), n, rng);
    const int n1 = static_cast<int>(0.8 * n);
    auto hws = drawn_then_frequent(t.column("input_h"), n, n1, kHw, {{112, 0.4}, {56, 0.4}, {28, 0.2}}, rng);
    std::vector<KernelConfig> out;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) out.push_back({{"HW", hws[i]}, {"CIN", cins[i]}});
    align_channels(out, align_rng);
    return out;
  }

  // Ours: the transformer kernels, from the layers of real transformers (data/prior_config_lib/tokens.csv and
  // attention.csv). Every other sample is a real layer as it is; the rest draw each column on its own as
  // nn-Meter draws the CNN columns, which fills the sizes between the real ones (a NAS space's widths and
  // sequence lengths). Real layers are few and exact; a histogram of 40 bins blurs the small values most
  // transformers have (49-token windows, 197-token ViTs).
  template <typename Make>
  std::vector<KernelConfig> real_or_drawn(int n, const std::string& file, const std::vector<std::string>& columns,
                                          Rng& rng, Make make) const {
    const PriorTable t = table(file, columns);
    std::vector<std::vector<int64_t>> drawn;
    for (const auto& c : columns) drawn.push_back(sample_from_distribution(t.column(c), n, rng));
    std::vector<KernelConfig> out;
    std::vector<int64_t> v(columns.size());
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      const size_t row = i % 2 == 0 ? rng.below(t.rows()) : SIZE_MAX;
      for (size_t k = 0; k < columns.size(); ++k)
        v[k] = row == SIZE_MAX ? drawn[k][i] : static_cast<int64_t>(t.column(columns[k])[row]);
      out.push_back(make(v, rng));
    }
    return out;
  }

  static int64_t clamp_tokens(int64_t t) { return std::clamp<int64_t>(t, 1, kernels::check::kMaxTokens); }
  // Column draws are independent, so their product can far exceed any real layer: the largest real tensor here
  // is Swin-B's window scores at 384 (64 windows · 4 heads · 144², 5.3 M elements). A sample's count of rows
  // (T, or B) shrinks until its largest tensor holds at most 2^23 elements (32 MB).
  static int64_t rows_within(int64_t rows, int64_t per_row) {
    constexpr int64_t kMaxSampledElements = int64_t{1} << 23;
    return std::clamp<int64_t>(kMaxSampledElements / std::max<int64_t>(per_row, 1), 1, clamp_tokens(rows));
  }

  // layernorm and gelu: a block's token tensor (gelu at the MLP's width); softmax: attention's scores, a row
  // per query of every head of every sequence, over the sequence's keys.
  std::vector<KernelConfig> tokens_prior(int n, Rng& rng) const {
    if (kernel_ == "softmax")
      return real_or_drawn(n, "attention.csv", {"sequences", "heads", "tokens"}, rng, [](const auto& v, Rng&) {
        return KernelConfig{{"T", rows_within(v[0] * v[1] * v[2], v[2])}, {"CIN", v[2]}};
      });
    const char* width = kernel_ == "gelu" ? "hidden" : "channels";
    return real_or_drawn(n, "tokens.csv", {"tokens", width}, rng,
                         [](const auto& v, Rng&) { return KernelConfig{{"T", rows_within(v[0], v[1])}, {"CIN", v[1]}}; });
  }

  // A block's Linear layers: QKV (C → 3C), the attention projection (C → C) and the MLP's two (C → hidden →
  // C); linear-gelu is the MLP's first with its GELU.
  std::vector<KernelConfig> linear_prior(int n, Rng& rng) const {
    const bool mlp_in = kernel_ == "linear-gelu";
    return real_or_drawn(n, "tokens.csv", {"tokens", "channels", "hidden"}, rng, [mlp_in](const auto& v, Rng& r) {
      // Drawn columns can give an MLP narrower than its block; real MLPs are 2 or 4 times as wide.
      const int64_t c = v[1], h = v[2] >= c ? v[2] : c * (r.below(2) == 0 ? 2 : 4);
      const std::pair<int64_t, int64_t> shapes[] = {{c, h}, {c, 3 * c}, {c, c}, {h, c}};
      const auto& [cin, cout] = shapes[mlp_in ? 0 : r.below(4)];
      return KernelConfig{{"T", rows_within(v[0], std::max(cin, cout))}, {"CIN", cin}, {"COUT", cout}};
    });
  }

  // Attention's two matmuls per head: Q·Kᵀ ([T, d] × [d, T]) and A·V ([T, T] × [T, d]).
  std::vector<KernelConfig> matmul_prior(int n, Rng& rng) const {
    return real_or_drawn(n, "attention.csv", {"sequences", "heads", "tokens", "head_dim"}, rng, [](const auto& v, Rng& r) {
      const int64_t t = v[2], d = v[3];
      const bool scores = r.below(2) == 0;
      return KernelConfig{{"B", rows_within(v[0] * v[1], t * std::max(t, d))}, {"M", t}, {"K", scores ? d : t}, {"N", scores ? t : d}};
    });
  }

  // ALIGNED_CHANNELS: a share of the column-wise samples get all their channel counts rounded to multiples of
  // 8, as real networks have them. Engines block channels by their vector width, so aligned channels run
  // faster per FLOP than the random ones column-wise draws give, and the predictors learnt from random
  // channels over-predicted real models' aligned convs (bench/RESULTS-accuracy.md).
  void align_channels(std::vector<KernelConfig>& out, Rng& align_rng) const {
    if (aligned_share_ <= 0 || out.empty()) return;
    const auto k = static_cast<int>(std::lround(aligned_share_ * static_cast<double>(out.size())));
    if (k == 0) return;
    for (int64_t at : sample_in_range(0, static_cast<int64_t>(out.size()) - 1, k, align_rng))
      for (auto& [key, value] : out[static_cast<size_t>(at)].items())
        if (is_channel_key(key) && value.get<int64_t>() > 0) value = make_divisible(value.get<int64_t>());
  }

  // INPUT_RESOLUTIONS: the prior library's layers (and the value sets HW snaps to) are those of networks at a
  // 224x224 input, so without it the predictors see no HW between those steps: a network at 128 or 160 has
  // feature maps of 64/32/16/8/4 or 80/40/20/10/5 the regressors can only guess at. Each sample's HW becomes
  // the one its layer has in a network at a resolution drawn from the list, ceil(HW * r / 224) as strided
  // layers round. (On onednn_cpu it made no difference beyond the noise, docs/accuracy.md: opt-in.)
  void scale_to_resolutions(std::vector<KernelConfig>& out, Rng& resolution_rng) const {
    if (resolutions_.empty()) return;
    constexpr int64_t kPriorResolution = 224;
    for (auto& c : out) {
      if (!c.contains("HW")) continue;
      const int64_t r = resolutions_[resolution_rng.below(resolutions_.size())];
      const int64_t hw = c["HW"].get<int64_t>();
      c["HW"] = std::max<int64_t>(1, (hw * r + kPriorResolution - 1) / kPriorResolution);
    }
  }

  // PRIOR_ROWS: a share of the samples are whole rows of the prior library (layers of real CNNs) in place of
  // column-wise draws. Drawing each column on its own rarely yields what real networks have (a 3-channel stem
  // at full resolution, channels that grow as HW shrinks), and the predictors over-predicted exactly those
  // (bench/RESULTS-accuracy.md). Random positions are replaced, so the other samples stay the ones nn-Meter's
  // sampling gives for the seed; PRIOR_ROWS_EXCLUDE drops the rows of named models (to evaluate on them).
  void mix_in_rows(std::vector<KernelConfig>& out, const std::string& file,
                   const std::vector<std::pair<std::string, std::string>>& columns, Rng& rng) const {
    if (row_share_ <= 0 || out.empty()) return;
    std::vector<std::string> required;
    for (const auto& [column, key] : columns) required.push_back(column);
    const bool grouped = file == "conv.csv";  // the conv kernels have no groups: ResNeXt's grouped rows do not fit
    if (grouped) required.push_back("groups");
    const PriorTable t = table(file, required);
    std::vector<KernelConfig> rows;
    std::set<std::string> seen;
    for (size_t r = 0; r < t.rows(); ++r) {
      if (!t.models().empty() && row_exclude_.count(t.models()[r])) continue;
      if (grouped && t.column("groups")[r] != 1) continue;
      KernelConfig c = Json::object();
      for (const auto& [column, key] : columns) c[key] = static_cast<int64_t>(t.column(column)[r]);
      if (seen.insert(c.dump()).second) rows.push_back(std::move(c));
    }
    // Feature-map channels scale with a network's width; fc rows keep theirs (a classifier's 1000 outputs).
    const bool at_other_widths = !widths_.empty() && file != "fc.csv";
    if (at_other_widths) rows = at_widths(rows);
    Rng rows_rng(rng.next());
    rows_rng.shuffle(rows);
    const auto wanted = static_cast<size_t>(std::lround(row_share_ * static_cast<double>(out.size())));
    const size_t k = std::min(wanted, rows.size());
    if (k == 0) return;
    const auto at = sample_in_range(0, static_cast<int64_t>(out.size()) - 1, static_cast<int>(k), rows_rng);
    for (size_t i = 0; i < k; ++i) out[static_cast<size_t>(at[i])] = rows[i];
    spdlog::info("{}: {} of {} prior samples are layers of real CNNs from the prior library's {} (PRIOR_ROWS {}{})", kernel_,
                 k, out.size(), file, row_share_, at_other_widths ? ", at WIDTH_MULTIPLIERS" : "");
  }

  // WIDTH_MULTIPLIERS: every real row at every width of the list (channels × w rounded as make_divisible
  // rounds them; an image's 3 input channels stay). A row is a layer at its network's one width, while a NAS
  // space or a width-multiplied network has the same layer at channel counts between and around the rows.
  std::vector<KernelConfig> at_widths(const std::vector<KernelConfig>& rows) const {
    std::vector<KernelConfig> out;
    std::set<std::string> seen;
    for (const auto& row : rows)
      for (const double w : widths_) {
        KernelConfig c = row;
        if (w != 1.0)
          for (auto& [key, value] : c.items())
            if (is_channel_key(key) && value.get<int64_t>() > 3)
              value = make_divisible(static_cast<int64_t>(std::llround(static_cast<double>(value.get<int64_t>()) * w)));
        if (seen.insert(c.dump()).second) out.push_back(std::move(c));
      }
    return out;
  }

  // A config value to sample around, within the builtin kernels' limits.
  int64_t key(const KernelConfig& c, const std::string& name, int64_t lo = 1) const {
    int64_t hi = kernels::check::kMaxChannels;
    if (name == "HW") hi = kernels::check::kMaxHw;
    if (name == "KERNEL_SIZE") hi = kernels::check::kMaxKernelSize;
    if (name == "STRIDES" || name == "POOL_STRIDES") hi = kernels::check::kMaxStride;
    if (name == "T" || name == "B" || name == "M" || name == "K" || name == "N") hi = kernels::check::kMaxTokens;
    return kernels::check::get_int(c, kernel_, name, lo, hi);
  }

  // The fine-grained configs around one large-error config: only channel numbers change.
  std::vector<KernelConfig> around(const KernelConfig& cfg, int m, Rng& rng) const {
    std::vector<KernelConfig> out;
    auto channel = [&](const std::string& name) {
      auto [lo, hi] = finegrained_range(key(cfg, name));
      return sample_in_range(lo, hi, m, rng);
    };
    // `base` with two of its values drawn together around the config's.
    auto vary_two = [&](const KernelConfig& base, const char* a, const char* b) {
      const auto as = channel(a), bs = channel(b);
      for (size_t i = 0; i < std::min(as.size(), bs.size()); ++i) {
        KernelConfig c = base;
        c[a] = as[i];
        c[b] = bs[i];
        out.push_back(std::move(c));
      }
      return out;
    };
    switch (family_) {
      case Family::GConv: {
        // The groups stay; CIN and COUT move in whole groups.
        KernelConfig base = cfg;
        for (const char* k : {"HW", "KERNEL_SIZE", "STRIDES"}) base[k] = key(cfg, k);
        const int64_t groups = key(cfg, "GROUPS", 2);
        vary_two(base, "CIN", "COUT");
        for (auto& c : out)
          for (const char* k : {"CIN", "COUT"})
            c[k] = std::max(groups, (c[k].get<int64_t>() + groups / 2) / groups * groups);
        return out;
      }
      case Family::MatMul: {
        // The heads and the queries stay; the widths either side of the product change.
        KernelConfig base = cfg;
        for (const char* k : {"B", "M"}) base[k] = key(cfg, k);
        return vary_two(base, "K", "N");
      }
      case Family::Conv:
      case Family::Linear:
      case Family::Fc: {
        KernelConfig base = cfg;
        if (family_ == Family::Linear) base["T"] = key(cfg, "T");
        if (family_ == Family::Conv)
          for (const char* k : {"HW", "KERNEL_SIZE", "STRIDES"}) base[k] = key(cfg, k);
        return vary_two(base, "CIN", "COUT");
      }
      case Family::Concat: {
        std::vector<std::vector<int64_t>> lists(4);
        size_t count = SIZE_MAX;
        key(cfg, "HW");
        for (size_t k = 0; k < 4; ++k) {
          std::string name = "CIN" + std::to_string(k + 1);
          if (!cfg.contains(name) || key(cfg, name, 0) == 0) continue;
          lists[k] = channel(name);
          count = std::min(count, lists[k].size());
        }
        if (count == SIZE_MAX) throw Error("kernel 'concat' config needs CIN1 and CIN2, got " + cfg.dump());
        for (size_t i = 0; i < count; ++i) {
          KernelConfig c = cfg;
          for (size_t k = 0; k < 4; ++k)
            if (!lists[k].empty()) c["CIN" + std::to_string(k + 1)] = lists[k][i];
          out.push_back(std::move(c));
        }
        return out;
      }
      case Family::DwConv:
      case Family::Pooling:
      case Family::HwCin:
      case Family::CinEven:
      case Family::Tokens:
      case Family::GlobalAvgPool: {
        KernelConfig base = cfg;
        if (family_ == Family::Tokens)
          base["T"] = key(cfg, "T");
        else
          base["HW"] = key(cfg, "HW");
        if (family_ == Family::DwConv) {
          for (const char* k : {"KERNEL_SIZE", "STRIDES"}) base[k] = key(cfg, k);
          base.erase("COUT");  // depthwise: COUT follows CIN
        }
        if (family_ == Family::Pooling) {
          base["KERNEL_SIZE"] = key(cfg, "KERNEL_SIZE");
          base["POOL_STRIDES"] = key(cfg, cfg.contains("POOL_STRIDES") ? "POOL_STRIDES" : "STRIDES");
          base.erase("STRIDES");
          base.erase("COUT");
        }
        // CIN moves in whole channel groups: two for split, se and a shuffle, or the shuffle's GROUPS.
        int64_t groups = 1;
        if (family_ == Family::CinEven) groups = cfg.contains("GROUPS") ? key(cfg, "GROUPS", 2) : 2;
        for (int64_t cin : channel("CIN")) {
          KernelConfig c = base;
          c["CIN"] = std::max(groups, (cin + groups / 2) / groups * groups);
          out.push_back(std::move(c));
        }
        return out;
      }
    }
    return out;
  }

  Family family_;
  std::string kernel_;
  std::optional<fs::path> prior_dir_;
  double row_share_ = 0;
  std::set<std::string> row_exclude_;
  double aligned_share_ = 0;
  double stem_share_ = 0;
  std::vector<int64_t> resolutions_;
  std::vector<double> widths_;
};

}  // namespace

std::pair<int64_t, int64_t> finegrained_range(int64_t c) {
  const int64_t lo = std::max<int64_t>(1, (c * 4) / 10);
  const int64_t hi = std::max<int64_t>(lo, (c * 12) / 10);
  return {lo, hi};
}

std::vector<int64_t> sample_in_range(int64_t lo, int64_t hi, int m, Rng& rng) {
  const int64_t size = hi - lo + 1;
  std::vector<int64_t> out;
  if (size <= m) {
    for (int64_t v = lo; v <= hi; ++v) out.push_back(v);
    rng.shuffle(out);
    return out;
  }
  // Floyd's algorithm: m distinct values without materializing the range, then a shuffle for random order.
  std::set<int64_t> chosen;
  for (int64_t j = size - m; j < size; ++j) {
    const int64_t t = static_cast<int64_t>(rng.below(static_cast<uint64_t>(j + 1)));
    chosen.insert(chosen.count(t) ? j : t);
  }
  for (int64_t v : chosen) out.push_back(lo + v);
  rng.shuffle(out);
  return out;
}

std::unique_ptr<ConfigSampler> make_sampler(Family family, const std::string& kernel_name,
                                            const Json& predictorbuild_config) {
  return std::make_unique<BuiltinSampler>(family, kernel_name, PredictorBuildConfig::from_json(predictorbuild_config));
}

}  // namespace nnmeter::sampling
