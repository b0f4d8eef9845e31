#include "networks/architectures.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cmath>
#include <functional>

#include "networks/layers.h"

namespace nnmeter::networks {

namespace {

using S = std::string;

S cbr(LayerBuilder& b, const S& x, int64_t c, int64_t k, int64_t s = 1, int64_t g = 1) { return b.relu(b.conv_bn(x, c, k, s, g)); }
S cbr6(LayerBuilder& b, const S& x, int64_t c, int64_t k, int64_t s = 1, int64_t g = 1) { return b.relu6(b.conv_bn(x, c, k, s, g)); }
S head(LayerBuilder& b, const S& x, int64_t classes = 1000) { return b.gemm(b.flatten(b.global_avgpool(x)), classes); }
int64_t ch(LayerBuilder& b, const S& x) { return b.shape(x)[1]; }

int64_t make_divisible(double v, int64_t d = 8) {
  int64_t n = std::max<int64_t>(d, static_cast<int64_t>(v + d / 2.0) / d * d);
  if (static_cast<double>(n) < 0.9 * v) n += d;
  return n;
}

S mobilenet_v1(LayerBuilder& b, S x) {
  x = cbr(b, x, b.scaled(32), 3, 2);
  std::vector<std::pair<int64_t, int64_t>> cfg = {{64, 1}, {128, 2}, {128, 1}, {256, 2}, {256, 1}, {512, 2}};
  for (int64_t i = 0, n = b.depth(5); i < n; ++i) cfg.emplace_back(512, 1);
  cfg.insert(cfg.end(), {{1024, 2}, {1024, 1}});
  for (auto [c, s] : cfg) x = cbr(b, cbr(b, x, ch(b, x), b.pick(3, {3, 5}), s, ch(b, x)), b.scaled(c), 1);
  return head(b, x);
}

S mobilenet_v2(LayerBuilder& b, S x) {
  x = cbr6(b, x, b.scaled(32), 3, 2);
  const int64_t cfg[][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2}, {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  for (const auto& r : cfg)
    for (int64_t i = 0, n = b.depth(r[2]); i < n; ++i) {
      const int64_t t = r[0] == 1 ? 1 : b.pick(r[0], {3, 4, 6});
      const int64_t s = i == 0 ? r[3] : 1, in = ch(b, x), hidden = in * t, out = b.scaled(r[1]);
      S y = t == 1 ? x : cbr6(b, x, hidden, 1);
      y = b.conv_bn(cbr6(b, y, hidden, b.pick(3, {3, 5, 7}), s, hidden), out, 1);
      x = s == 1 && in == out ? b.add(x, y) : y;
    }
  return head(b, cbr6(b, x, std::max<int64_t>(1280, b.scaled(1280)), 1));
}

S se_block(LayerBuilder& b, const S& x, int64_t squeeze, bool hard) {
  const int64_t c = ch(b, x);
  S s = b.global_avgpool(x);
  s = b.conv(s, squeeze, 1, 1, 0, 1, true);
  s = hard ? b.relu(s) : b.swish(s);
  s = b.conv(s, c, 1, 1, 0, 1, true);
  s = hard ? b.hardsigmoid(s) : b.sigmoid(s);
  return b.mul(x, s);
}

S mobilenet_v3_large(LayerBuilder& b, S x) {
  x = b.hardswish(b.conv_bn(x, b.scaled(16), 3, 2));
  struct L { int64_t k, exp, out; bool se, hs; int64_t s; };
  const L cfg[] = {{3, 16, 16, false, false, 1},  {3, 64, 24, false, false, 2},  {3, 72, 24, false, false, 1},
                   {5, 72, 40, true, false, 2},   {5, 120, 40, true, false, 1},  {5, 120, 40, true, false, 1},
                   {3, 240, 80, false, true, 2},  {3, 200, 80, false, true, 1},  {3, 184, 80, false, true, 1},
                   {3, 184, 80, false, true, 1},  {3, 480, 112, true, true, 1},  {3, 672, 112, true, true, 1},
                   {5, 672, 160, true, true, 2},  {5, 960, 160, true, true, 1},  {5, 960, 160, true, true, 1}};
  int64_t last_out = 16;
  for (const auto& l : cfg) {
    // A variant drops some of the blocks a stage repeats (stride 1, the width it already has).
    const bool repeat = l.s == 1 && l.out == last_out;
    last_out = l.out;
    if (repeat && b.pick(1, {0, 1, 1}) == 0) continue;
    const int64_t in = ch(b, x), exp = b.scaled(l.exp), out = b.scaled(l.out);
    auto act = [&](const S& v) { return l.hs ? b.hardswish(v) : b.relu(v); };
    S y = exp == in ? x : act(b.conv_bn(x, exp, 1));
    y = act(b.conv_bn(y, exp, b.pick(l.k, {3, 5, 7}), l.s, exp));
    if (b.coin(l.se)) y = se_block(b, y, make_divisible(static_cast<double>(exp) / 4), true);
    y = b.conv_bn(y, out, 1);
    x = l.s == 1 && in == out ? b.add(x, y) : y;
  }
  x = b.hardswish(b.conv_bn(x, b.scaled(960), 1));
  x = b.hardswish(b.gemm(b.flatten(b.global_avgpool(x)), 1280));
  return b.gemm(x, 1000);
}

S resnet(LayerBuilder& b, S x, bool bottleneck, const std::vector<int>& blocks) {
  x = b.maxpool(cbr(b, x, b.scaled(64), 7, 2), 3, 2, 1);
  for (size_t stage = 0; stage < blocks.size(); ++stage)
    for (int64_t i = 0, n = b.depth(blocks[stage]); i < n; ++i) {
      const int64_t width = b.scaled(64 << stage);
      const int64_t s = stage > 0 && i == 0 ? 2 : 1, out = bottleneck ? width * 4 : width;
      S y = bottleneck ? b.conv_bn(cbr(b, cbr(b, x, width, 1), width, 3, s), out, 1) : b.conv_bn(cbr(b, x, width, 3, s), out, 3);
      const S identity = s != 1 || ch(b, x) != out ? b.conv_bn(x, out, 1, s) : x;
      x = b.relu(b.add(y, identity));
    }
  return head(b, x);
}

S fire(LayerBuilder& b, const S& x, int64_t sq, int64_t e1, int64_t e3) {
  sq = b.scaled(sq), e1 = b.scaled(e1), e3 = b.scaled(e3);
  const S s = b.relu(b.conv(x, sq, 1, 1, 0, 1, true));
  return b.concat({b.relu(b.conv(s, e1, 1, 1, 0, 1, true)), b.relu(b.conv(s, e3, 3, 1, 1, 1, true))});
}

S squeezenet(LayerBuilder& b, S x) {
  x = b.maxpool(b.relu(b.conv(x, b.scaled(64), 3, 2, 0, 1, true)), 3, 2, 0, true);
  x = b.maxpool(fire(b, fire(b, x, 16, 64, 64), 16, 64, 64), 3, 2, 0, true);
  x = b.maxpool(fire(b, fire(b, x, 32, 128, 128), 32, 128, 128), 3, 2, 0, true);
  x = fire(b, fire(b, fire(b, fire(b, x, 48, 192, 192), 48, 192, 192), 64, 256, 256), 64, 256, 256);
  return b.flatten(b.global_avgpool(b.relu(b.conv(x, 1000, 1, 1, 0, 1, true))));
}

// ShuffleNetV2's stage and last widths: torchvision's for its x0.5, x1.0, x1.5 and x2.0; other widths scale
// x1.0's to even channel counts.
std::array<int64_t, 4> shufflenet_widths(double width) {
  if (width == 0.5) return {48, 96, 192, 1024};
  if (width == 1.5) return {176, 352, 704, 1024};
  if (width == 2.0) return {244, 488, 976, 2048};
  auto even = [&](double c) { return std::max<int64_t>(2, std::llround(c * width / 2) * 2); };
  return {even(116), even(232), even(464), width > 1.5 ? 2048 : 1024};
}

S shufflenet_v2(LayerBuilder& b, S x, double width) {
  x = b.maxpool(cbr(b, x, 24, 3, 2), 3, 2, 1);
  auto widths = shufflenet_widths(width);
  if (b.variant())
    for (auto& w : widths) w = b.scaled(w);
  const int repeats[] = {4, 8, 4};
  for (int st = 0; st < 3; ++st)
    for (int64_t i = 0, n = b.depth(repeats[st]); i < n; ++i) {
      const int64_t bf = widths[st] / 2, k = b.pick(3, {3, 5, 7});
      S out;
      if (i == 0) {
        const int64_t in = ch(b, x);
        const S b1 = cbr(b, b.conv_bn(x, in, k, 2, in), bf, 1);
        const S b2 = cbr(b, b.conv_bn(cbr(b, x, bf, 1), bf, k, 2, bf), bf, 1);
        out = b.concat({b1, b2});
      } else {
        const auto [left, right] = b.chunk2(x);
        const S b2 = cbr(b, b.conv_bn(cbr(b, right, bf, 1), bf, k, 1, bf), bf, 1);
        out = b.concat({left, b2});
      }
      x = b.channel_shuffle(out, 2);
    }
  return b.gemm(b.reduce_mean_hw(cbr(b, x, widths[3], 1), false), 1000);
}

// ShuffleNet v1 with 3 groups (Zhang et al. 2018; megvii's reference implementation): grouped 1x1 convs around a
// channel shuffle and a 3x3 depthwise conv; a stride-2 unit concatenates a 3x3 average pool of its input. Stage
// widths 240/480/960 at width 1, other widths in multiples of 12 so that every grouped conv divides by 3.
S shufflenet_v1(LayerBuilder& b, S x) {
  constexpr int64_t groups = 3;
  const int64_t c1 = std::max<int64_t>(12, std::llround(240 * b.width() / 12) * 12);
  x = b.maxpool(cbr(b, x, 24, 3, 2), 3, 2, 1);
  const int repeats[] = {4, 8, 4};
  for (int st = 0; st < 3; ++st) {
    // A variant's stage is still wider than the one before: its first unit adds out - in channels to its input.
    const int64_t declared = 240 << st;
    const int64_t c = b.variant() ? std::max<int64_t>(ch(b, x) + 12, std::llround(declared * b.factor(declared) / 12) * 12)
                                  : c1 << st;
    for (int64_t i = 0, n = b.depth(repeats[st]); i < n; ++i) {
      const int64_t in = ch(b, x), out = c, s = i == 0 ? 2 : 1, mid = out / 4;
      S y = b.channel_shuffle(cbr(b, x, mid, 1, 1, st == 0 && i == 0 ? 1 : groups), groups);
      y = b.conv_bn(b.conv_bn(y, mid, 3, s, mid), s == 2 ? out - in : out, 1, 1, groups);
      x = s == 1 ? b.relu(b.add(x, y)) : b.concat({b.padded_avgpool(x, 3, 2, 1), b.relu(y)});
    }
  }
  return head(b, x);
}

// Pre-activation ResNet-18 (He et al. 2016, "Identity Mappings in Deep Residual Networks"): BN and ReLU before
// each conv. The exporter folds the BN behind a block's first conv into it; the one after the residual add
// stays a BatchNormalization of its own.
S preact_resnet18(LayerBuilder& b, S x) {
  x = b.maxpool(cbr(b, x, b.scaled(64), 7, 2), 3, 2, 1);
  for (int stage = 0; stage < 4; ++stage)
    for (int64_t i = 0, n = b.depth(2); i < n; ++i) {
      const int64_t out = b.scaled(64 << stage), s = stage > 0 && i == 0 ? 2 : 1;
      const S pre = b.relu(b.batchnorm(x));
      const S shortcut = s != 1 || ch(b, x) != out ? b.conv(pre, out, 1, s) : x;
      x = b.add(b.conv(cbr(b, pre, out, 3, s), out, 3), shortcut);
    }
  return head(b, b.relu(b.batchnorm(x)));
}

S mnasnet(LayerBuilder& b, S x) {
  const int64_t stem = b.scaled(32);
  x = b.conv_bn(cbr(b, cbr(b, x, stem, 3, 2), stem, 3, 1, stem), b.scaled(16), 1);
  const int64_t cfg[][5] = {{3, 3, 2, 3, 24}, {3, 5, 2, 3, 40}, {6, 5, 2, 3, 80}, {6, 3, 1, 2, 96}, {6, 5, 2, 4, 192}, {6, 3, 1, 1, 320}};
  for (const auto& r : cfg)
    for (int64_t i = 0, n = b.depth(r[3]); i < n; ++i) {
      const int64_t s = i == 0 ? r[2] : 1, in = ch(b, x), mid = in * b.pick(r[0], {3, 6}), out = b.scaled(r[4]);
      const S y = b.conv_bn(cbr(b, cbr(b, x, mid, 1), mid, b.pick(r[1], {3, 5, 7}), s, mid), out, 1);
      x = s == 1 && in == out ? b.add(x, y) : y;
    }
  return b.gemm(b.reduce_mean_hw(cbr(b, x, 1280, 1), false), 1000);
}

S inception(LayerBuilder& b, const S& x, int64_t c1, int64_t c3r, int64_t c3, int64_t c5r, int64_t c5, int64_t pp) {
  c1 = b.scaled(c1), c3r = b.scaled(c3r), c3 = b.scaled(c3), c5r = b.scaled(c5r), c5 = b.scaled(c5), pp = b.scaled(pp);
  return b.concat({cbr(b, x, c1, 1), cbr(b, cbr(b, x, c3r, 1), c3, 3), cbr(b, cbr(b, x, c5r, 1), c5, 3),
                   cbr(b, b.maxpool(x, 3, 1, 1, true), pp, 1)});
}

S googlenet(LayerBuilder& b, S x) {
  x = b.maxpool(cbr(b, x, b.scaled(64), 7, 2), 3, 2, 0, true);
  x = b.maxpool(cbr(b, cbr(b, x, b.scaled(64), 1), b.scaled(192), 3), 3, 2, 0, true);
  x = inception(b, inception(b, x, 64, 96, 128, 16, 32, 32), 128, 128, 192, 32, 96, 64);
  x = b.maxpool(x, 3, 2, 0, true);
  x = inception(b, x, 192, 96, 208, 16, 48, 64);
  x = inception(b, x, 160, 112, 224, 24, 64, 64);
  x = inception(b, x, 128, 128, 256, 24, 64, 64);
  x = inception(b, x, 112, 144, 288, 32, 64, 64);
  x = inception(b, x, 256, 160, 320, 32, 128, 128);
  x = b.maxpool(x, 2, 2, 0, true);
  x = inception(b, inception(b, x, 256, 160, 320, 32, 128, 128), 384, 192, 384, 48, 128, 128);
  return head(b, x);
}

S densenet121(LayerBuilder& b, S x) {
  x = b.maxpool(cbr(b, x, b.scaled(64), 7, 2), 3, 2, 1);
  const int blocks[] = {6, 12, 24, 16};
  const int64_t growth = b.scaled(32);
  for (int bi = 0; bi < 4; ++bi) {
    std::vector<S> features{x};
    for (int64_t i = 0, n = b.depth(blocks[bi]); i < n; ++i) {
      const S in = b.concat(features);  // torch.cat of a one-tensor list too, as DenseNet's first layer exports
      const S y = b.conv(cbr(b, b.relu(b.batchnorm(in)), 4 * growth, 1), growth, 3);
      features.push_back(y);
    }
    x = b.concat(features);
    if (bi < 3) x = b.padded_avgpool(b.conv(b.relu(b.batchnorm(x)), ch(b, x) / 2, 1), 2, 2);
  }
  return head(b, b.relu(b.batchnorm(x)));
}

S efficientnet_b0(LayerBuilder& b, S x) {
  x = b.swish(b.conv_bn(x, b.scaled(32), 3, 2));
  const int64_t cfg[][5] = {{1, 3, 1, 16, 1}, {6, 3, 2, 24, 2}, {6, 5, 2, 40, 2}, {6, 3, 2, 80, 3},
                            {6, 5, 1, 112, 3}, {6, 5, 2, 192, 4}, {6, 3, 1, 320, 1}};
  for (const auto& r : cfg)
    for (int64_t i = 0, n = b.depth(r[4]); i < n; ++i) {
      const int64_t t = r[0] == 1 ? 1 : b.pick(r[0], {3, 4, 6});
      const int64_t s = i == 0 ? r[2] : 1, in = ch(b, x), mid = in * t, out = b.scaled(r[3]);
      S y = t == 1 ? x : b.swish(b.conv_bn(x, mid, 1));
      y = b.swish(b.conv_bn(y, mid, b.pick(r[1], {3, 5, 7}), s, mid));
      if (b.coin(true)) y = se_block(b, y, std::max<int64_t>(1, in / 4), false);
      y = b.conv_bn(y, out, 1);
      x = s == 1 && in == out ? b.add(x, y) : y;
    }
  return head(b, b.swish(b.conv_bn(x, b.scaled(1280), 1)));
}

// AlexNet as torchvision builds it; the classifier's 9216x4096 Linear makes it memory-bound. Its
// AdaptiveAvgPool2d(6) meets a 6x6 input at 224 and is exported as a 1x1 AveragePool; the classifier is sized
// for the input resolution.
S alexnet(LayerBuilder& b, S x) {
  x = b.maxpool(b.relu(b.conv(x, b.scaled(64), 11, 4, 2, 1, true)), 3, 2);
  x = b.maxpool(b.relu(b.conv(x, b.scaled(192), 5, 1, 2, 1, true)), 3, 2);
  for (int64_t c : {384, 256, 256}) x = b.relu(b.conv(x, b.scaled(c), 3, 1, 1, 1, true));
  x = b.flatten(b.avgpool(b.maxpool(x, 3, 2), 1, 1));
  return b.gemm(b.relu(b.gemm(b.relu(b.gemm(x, 4096)), 4096)), 1000);
}

// VGG-11 with batch norm, torchvision's vgg11_bn; its AdaptiveAvgPool2d(7) is a 1x1 AveragePool as at 224, and
// the classifier is sized for the input resolution.
S vgg11_bn(LayerBuilder& b, S x) {
  for (int64_t c : {64, -1, 128, -1, 256, 256, -1, 512, 512, -1, 512, 512, -1})
    x = c < 0 ? b.maxpool(x, 2, 2) : cbr(b, x, b.scaled(c), 3);
  return b.gemm(b.relu(b.gemm(b.relu(b.gemm(b.flatten(b.avgpool(x, 1, 1)), 4096)), 4096)), 1000);
}

// Once-for-all's MobileNetV3 space (Cai et al. 2020, OFA-MobileNetV3 at width 1.0): five stages of 2-4 blocks,
// each block's kernel 3/5/7 and expansion 3/4/6 its own; SE and the activation fixed per stage. Without a variant:
// the largest subnet (depth 4, kernel 7, expansion 6).
S ofa_mobilenet_v3(LayerBuilder& b, S x) {
  x = b.hardswish(b.conv_bn(x, 16, 3, 2));
  x = b.add(x, b.conv_bn(b.relu(b.conv_bn(x, 16, 3, 1, 16)), 16, 1));
  struct Stage { int64_t out; bool hs, se; int64_t s; };
  const Stage stages[] = {{24, false, false, 2}, {40, false, true, 2}, {80, true, false, 2}, {112, true, true, 1},
                          {160, true, true, 2}};
  for (const auto& st : stages)
    for (int64_t i = 0, n = b.pick(4, {2, 3, 4}); i < n; ++i) {
      const int64_t in = ch(b, x), s = i == 0 ? st.s : 1;
      const int64_t mid = make_divisible(static_cast<double>(in * b.pick(6, {3, 4, 6})));
      auto act = [&](const S& v) { return st.hs ? b.hardswish(v) : b.relu(v); };
      S y = act(b.conv_bn(act(b.conv_bn(x, mid, 1)), mid, b.pick(7, {3, 5, 7}), s, mid));
      if (st.se) y = se_block(b, y, make_divisible(static_cast<double>(mid) / 4), true);
      y = b.conv_bn(y, st.out, 1);
      x = s == 1 && in == st.out ? b.add(x, y) : y;
    }
  x = b.hardswish(b.conv_bn(x, 960, 1));
  x = b.hardswish(b.conv(b.global_avgpool(x), 1280, 1, 1, 0, 1, true));
  return b.gemm(b.flatten(x), 1000);
}

// ProxylessNAS's mobile space (Cai et al. 2019): six stages of up to four MBConv blocks (ReLU6), each block's kernel
// 3/5/7 and expansion 3/6 its own, or after a stage's first block no block at all (the zero op). Without a
// variant: every block at kernel 7, expansion 6.
S proxylessnas(LayerBuilder& b, S x) {
  x = cbr6(b, x, 32, 3, 2);
  x = b.conv_bn(cbr6(b, x, 32, 3, 1, 32), 16, 1);
  const int64_t stages[][3] = {{24, 2, 4}, {40, 2, 4}, {80, 2, 4}, {96, 1, 4}, {192, 2, 4}, {320, 1, 1}};
  for (const auto& st : stages)
    for (int64_t i = 0; i < st[2]; ++i) {
      // Choices 0-5: kernel 3/5/7 at expansion 3, then at 6; choice 6: the zero op.
      const int64_t choice = i == 0 ? b.pick(5, {0, 1, 2, 3, 4, 5}) : b.pick(5, {0, 1, 2, 3, 4, 5, 6});
      if (choice == 6) continue;
      const int64_t k = 3 + 2 * (choice % 3), in = ch(b, x), mid = in * (choice < 3 ? 3 : 6), s = i == 0 ? st[1] : 1;
      const S y = b.conv_bn(cbr6(b, cbr6(b, x, mid, 1), mid, k, s, mid), st[0], 1);
      x = s == 1 && in == st[0] ? b.add(x, y) : y;
    }
  return b.gemm(b.flatten(b.global_avgpool(cbr6(b, x, 1280, 1))), 1000);
}

struct Entry {
  std::string name;
  std::function<S(LayerBuilder&, S)> build;
  bool space = false;  // a NAS search space: sampled, in no builtin set
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> r = {
      {"mobilenet_v1", mobilenet_v1},
      {"mobilenet_v2", mobilenet_v2},
      {"mobilenet_v3_large", mobilenet_v3_large},
      {"resnet18", [](LayerBuilder& b, S x) { return resnet(b, x, false, {2, 2, 2, 2}); }},
      {"resnet34", [](LayerBuilder& b, S x) { return resnet(b, x, false, {3, 4, 6, 3}); }},
      {"resnet50", [](LayerBuilder& b, S x) { return resnet(b, x, true, {3, 4, 6, 3}); }},
      {"squeezenet1_1", squeezenet},
      {"shufflenet_v2_x1_0", [](LayerBuilder& b, S x) { return shufflenet_v2(b, x, b.width()); }},
      {"shufflenet_v1_g3", shufflenet_v1},
      {"preact_resnet18", preact_resnet18},
      {"mnasnet1_0", mnasnet},
      {"googlenet", googlenet},
      {"densenet121", densenet121},
      {"efficientnet_b0", efficientnet_b0},
      {"alexnet", alexnet},
      {"vgg11_bn", vgg11_bn},
      {"ofa_mobilenet_v3", ofa_mobilenet_v3, true},
      {"proxylessnas", proxylessnas, true}};
  return r;
}

std::vector<std::string> names(bool spaces) {
  std::vector<std::string> out;
  for (const auto& e : registry())
    if (e.space == spaces) out.push_back(e.name);
  return out;
}

}  // namespace

std::vector<std::string> architectures() { return names(false); }

std::vector<std::string> spaces() { return names(true); }

Network build(const std::string& name, int64_t resolution, double width, std::optional<uint64_t> variant, bool weights) {
  // The bounds keep every network's weights within memory (VGG's classifier grows with the input's area).
  if (!(width > 0 && width <= 4)) throw Error(fmt::format("network width must be in (0, 4], got {}", width));
  if (resolution < 32 || resolution > 512)
    throw Error(fmt::format("network resolution must be in [32, 512], got {}", resolution));
  for (const auto& e : registry()) {
    if (e.name != name) continue;
    LayerBuilder b(name, 13, 7);
    b.set_width(width);
    if (variant) b.set_variant(*variant);
    b.set_weights(weights);
    b.output(e.build(b, b.input("input", {1, 3, resolution, resolution})));
    return {name, b.model(), b.flops()};
  }
  throw Error(fmt::format("unknown architecture '{}' (known: {}, {})", name, fmt::join(architectures(), ", "),
                          fmt::join(spaces(), ", ")));
}

}  // namespace nnmeter::networks
