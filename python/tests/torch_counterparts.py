"""PyTorch definitions of the reference architectures torchvision does not ship, following their papers and
reference code, so that test_networks.py can check nn-Meter's writing of them against torch's export. Imported
only where torch is there."""
import torch
from torch import nn
import torch.nn.functional as F


def _scaled(channels, width):
    """nn-Meter's width multiplier (src/networks/layers.cpp, LayerBuilder::scaled)."""
    if width == 1.0:
        return channels
    v = channels * width
    n = max(8, int(v + 4) // 8 * 8)
    return n + 8 if n < 0.9 * v else n


def _bn_relu(c):
    return nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(inplace=True))


class _PreActBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.pre = _bn_relu(cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.mid = _bn_relu(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride, bias=False) if stride != 1 or cin != cout else None

    def forward(self, x):
        out = self.pre(x)
        shortcut = self.shortcut(out) if self.shortcut is not None else x
        return self.conv2(self.mid(self.conv1(out))) + shortcut


class PreActResNet18(nn.Module):
    """He et al. 2016, "Identity Mappings in Deep Residual Networks": BN and ReLU before each conv."""

    def __init__(self, width=1.0, classes=1000):
        super().__init__()
        w = [_scaled(c, width) for c in (64, 128, 256, 512)]
        self.stem = nn.Sequential(nn.Conv2d(3, w[0], 7, 2, 3, bias=False), *_bn_relu(w[0]), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], w[0]
        for i, c in enumerate(w):
            for j in range(2):
                blocks.append(_PreActBlock(cin, c, 2 if i > 0 and j == 0 else 1))
                cin = c
        self.blocks = nn.Sequential(*blocks)
        self.post = _bn_relu(cin)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.post(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def _shuffle(x, groups):
    b, c, h, w = x.shape
    return x.view(b, groups, c // groups, h, w).transpose(1, 2).contiguous().view(b, -1, h, w)


class _ShuffleV1Unit(nn.Module):
    def __init__(self, cin, cout, stride, groups, first):
        super().__init__()
        self.stride, self.groups = stride, groups
        outputs, mid = (cout - cin if stride == 2 else cout), cout // 4
        self.conv1 = nn.Sequential(nn.Conv2d(cin, mid, 1, groups=1 if first else groups, bias=False), *_bn_relu(mid))
        self.dw = nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False), nn.BatchNorm2d(mid))
        self.conv2 = nn.Sequential(nn.Conv2d(mid, outputs, 1, groups=groups, bias=False), nn.BatchNorm2d(outputs))
        self.proj = nn.AvgPool2d(3, 2, 1) if stride == 2 else None

    def forward(self, x):
        y = self.conv2(self.dw(_shuffle(self.conv1(x), self.groups)))
        return F.relu(x + y) if self.stride == 1 else torch.cat((self.proj(x), F.relu(y)), 1)


class ShuffleNetV1(nn.Module):
    """Zhang et al. 2018, ShuffleNet, as megvii's reference code builds it (3 groups): grouped 1x1 convs around a
    channel shuffle and a depthwise conv; a stride-2 unit concatenates a 3x3 average pool of its input."""

    def __init__(self, width=1.0, groups=3, classes=1000):
        super().__init__()
        c1 = max(12, int(240 * width / 12 + 0.5) * 12)
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), *_bn_relu(24), nn.MaxPool2d(3, 2, 1))
        units, cin = [], 24
        for i, (c, n) in enumerate(zip((c1, 2 * c1, 4 * c1), (4, 8, 4))):
            for j in range(n):
                units.append(_ShuffleV1Unit(cin, c, 2 if j == 0 else 1, groups, i == 0 and j == 0))
                cin = c
        self.units = nn.Sequential(*units)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.units(self.stem(x)), 1), 1))
