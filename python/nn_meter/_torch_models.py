"""The torch modules behind nn_meter.torch_networks that torchvision does not ship: ConvNeXt at any size (its
own block), a MobileViT-style hybrid and a BERT-style encoder. Imported only when torch is there."""
import torch
from torch import nn
from torchvision.models.convnext import CNBlockConfig, ConvNeXt

# ConvNeXt's stage widths and depths (tiny and small as torchvision builds them; nano as timm's convnext_nano).
_CONVNEXT = {"nano": ((80, 160, 320, 640), (2, 2, 8, 2)),
             "tiny": ((96, 192, 384, 768), (3, 3, 9, 3)),
             "small": ((96, 192, 384, 768), (3, 3, 27, 3))}


def convnext(variant):
    dims, depths = _CONVNEXT[variant]
    stages = [CNBlockConfig(d, dims[i + 1] if i + 1 < len(dims) else None, n) for i, (d, n) in enumerate(zip(dims, depths))]
    return ConvNeXt(stages, stochastic_depth_prob=0.0)


def _conv_bn(cin, cout, kernel, stride=1, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return nn.Sequential(*layers, nn.SiLU()) if act else nn.Sequential(*layers)


class _InvertedResidual(nn.Module):
    """MobileNetV2's block with SiLU, as MobileViT uses it."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.block = nn.Sequential(_conv_bn(cin, hidden, 1), _conv_bn(hidden, hidden, 3, stride, groups=hidden),
                                   _conv_bn(hidden, cout, 1, act=False))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class _MobileViTBlock(nn.Module):
    """Local 3x3 and 1x1 convs, 2x2 patches unfolded into sequences for pre-norm transformer layers, folded back,
    projected and fused with the input by a 3x3 conv over their concatenation. The layers' MLP uses GELU where
    the paper's uses SiLU."""

    def __init__(self, channels, width, layers, heads=4):
        super().__init__()
        self.local = nn.Sequential(_conv_bn(channels, channels, 3), nn.Conv2d(channels, width, 1, bias=False))
        layer = nn.TransformerEncoderLayer(width, heads, 2 * width, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.transformer = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(width)
        self.project = _conv_bn(width, channels, 1)
        self.fuse = _conv_bn(2 * channels, channels, 3)

    def forward(self, x):
        y = self.local(x)
        n, c, h, w = y.shape
        y = y.reshape(n, c, h // 2, 2, w // 2, 2).permute(0, 3, 5, 2, 4, 1).reshape(n * 4, (h // 2) * (w // 2), c)
        y = self.norm(self.transformer(y))
        y = y.reshape(n, 2, 2, h // 2, w // 2, c).permute(0, 5, 3, 1, 4, 2).reshape(n, c, h, w)
        return self.fuse(torch.cat([x, self.project(y)], 1))


# MobileViT v1's channels (stem, stages 1-5, last conv), the transformer widths and depths of stages 3-5, the
# MV2 expansion (Mehta & Rastegari 2022, table 4).
_MOBILEVIT = {"xxs": ((16, 16, 24, 48, 64, 80, 320), (64, 80, 96), 2),
              "xs": ((16, 32, 48, 64, 80, 96, 384), (96, 120, 144), 4),
              "s": ((16, 32, 64, 96, 128, 160, 640), (144, 192, 240), 4)}


class MobileViT(nn.Module):
    def __init__(self, variant, classes=1000):
        super().__init__()
        c, widths, expand = _MOBILEVIT[variant]
        layers = [_conv_bn(3, c[0], 3, 2), _InvertedResidual(c[0], c[1], 1, expand),
                  _InvertedResidual(c[1], c[2], 2, expand), _InvertedResidual(c[2], c[2], 1, expand),
                  _InvertedResidual(c[2], c[2], 1, expand)]
        for i, depth in enumerate((2, 4, 3)):
            layers += [_InvertedResidual(c[i + 2], c[i + 3], 2, expand), _MobileViTBlock(c[i + 3], widths[i], depth)]
        layers += [_conv_bn(c[5], c[6], 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c[6], classes)]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


class BertEncoder(nn.Module):
    """BERT's encoder on token embeddings: the embeddings' LayerNorm, then post-norm layers with GELU."""

    def __init__(self, layers, width, heads):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)

    def forward(self, x):
        return self.encoder(self.norm(x))
