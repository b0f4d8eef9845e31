"""Transformers as torch.onnx.export writes them (Debian's torch and torchvision, not a graph of ours): every node of
a ViT, a Swin, a ConvNeXt, a BERT-style encoder and a MobileViT-style hybrid lands in a kernel the builder has, with
the configs the exports imply, and nothing is left uncovered."""
import collections

import pytest

import nn_meter

torch = pytest.importorskip("torch")
tv = pytest.importorskip("torchvision")

RULES = {"BF_linear_gelu": {"obey": True}, "BF_conv_swish": {"obey": True}, "BF_conv_relu": {"obey": True}}


class Encoder(torch.nn.Module):
    """BERT-style: token embeddings in, a stack of post-norm encoder layers with GELU."""

    def __init__(self, width, heads, layers):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers)

    def forward(self, x):
        return self.encoder(x)


class MobileVitBlock(torch.nn.Module):
    """MobileViT-style: conv, unfold into 2x2 patches, a transformer over each patch pixel's sequence, fold back."""

    def __init__(self, channels, width):
        super().__init__()
        self.local = torch.nn.Sequential(torch.nn.Conv2d(channels, channels, 3, padding=1), torch.nn.SiLU(),
                                         torch.nn.Conv2d(channels, width, 1))
        layer = torch.nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0, activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.transformer = torch.nn.TransformerEncoder(layer, 1)
        self.project = torch.nn.Conv2d(width, channels, 1)

    def forward(self, x):
        y = self.local(x)
        n, c, h, w = y.shape
        y = y.reshape(n, c, h // 2, 2, w // 2, 2).permute(0, 3, 5, 2, 4, 1).reshape(n * 4, (h // 2) * (w // 2), c)
        y = self.transformer(y)
        y = y.reshape(n, 2, 2, h // 2, w // 2, c).permute(0, 5, 3, 1, 4, 2).reshape(n, c, h, w)
        return x + self.project(y)


def cases():
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    from torchvision.models.swin_transformer import SwinTransformer
    from torchvision.models.vision_transformer import VisionTransformer
    return {
        "vit": (VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64),
                (1, 3, 32, 32)),
        "swin": (SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2], window_size=[4, 4]),
                 (1, 3, 32, 32)),
        "convnext": (ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], stochastic_depth_prob=0.0),
                     (1, 3, 32, 32)),
        "bert": (Encoder(32, 2, 2), (1, 24, 32)),
        "mobilevit": (MobileVitBlock(8, 16), (1, 8, 16, 16)),
    }


def test_transformer_exports_are_covered_by_the_transformer_kernels(tmp_path):
    torch.manual_seed(0)
    found = {}
    for name, (module, shape) in cases().items():
        path = tmp_path / f"{name}.onnx"
        nn_meter.torch_to_onnx(module, shape, path=path)
        kernels = nn_meter.detect_kernels(str(path), RULES)
        unsupported = [f"{k['op']}: {k.get('reason', '')}" for k in kernels if k["kind"] == "unsupported"]
        assert not unsupported, name
        found[name] = collections.Counter(k["kernel"] for k in kernels if k["kind"] == "compute")
    for name in ("vit", "swin", "bert", "mobilevit"):
        assert {"layernorm", "linear", "linear-gelu", "matmul", "softmax"} <= set(found[name]), (name, found[name])
    assert {"layernorm", "linear-gelu", "linear"} <= set(found["convnext"]), found["convnext"]
    # A ViT layer: one LayerNorm before attention, one before the MLP; attention's two matmuls per layer.
    assert found["vit"]["layernorm"] == 2 * 2 + 1 and found["vit"]["matmul"] == 2 * 2


def test_both_gelu_forms_are_one_gelu_kernel(tmp_path):
    """nn.GELU() exports an erf chain of five ops, nn.GELU(approximate='tanh') a tanh chain of nine: each is one gelu
    kernel, or part of linear-gelu after a Linear when the backend fuses them."""
    for approximate, ops in (("none", 5), ("tanh", 9)):
        path = tmp_path / f"gelu_{approximate}.onnx"
        nn_meter.torch_to_onnx(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(approximate=approximate)),
                               (1, 10, 16), path=path)
        apart = [k for k in nn_meter.detect_kernels(str(path), {}) if k["kind"] == "compute"]
        assert [k["kernel"] for k in apart] == ["linear", "gelu"], approximate
        assert len(apart[1]["nodes"]) == ops and apart[1]["config"] == {"T": 10, "CIN": 32}, apart[1]
        fused = [k["kernel"] for k in nn_meter.detect_kernels(str(path), RULES) if k["kind"] == "compute"]
        assert fused == ["linear-gelu"], approximate


def test_vit_kernel_configs_follow_the_export(tmp_path):
    """ViT at 32² with 8² patches: 16 patches and the class token, 2 heads of 16."""
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    path = tmp_path / "vit.onnx"
    nn_meter.torch_to_onnx(VisionTransformer(image_size=32, patch_size=8, num_layers=1, num_heads=2, hidden_dim=32,
                                             mlp_dim=64), (1, 3, 32, 32), path=path)
    configs = collections.defaultdict(list)
    for k in nn_meter.detect_kernels(str(path), RULES):
        if k["kind"] == "compute":
            configs[k["kernel"]].append(k["config"])
    assert {"T": 17, "CIN": 32} in configs["layernorm"]
    assert configs["linear-gelu"] == [{"T": 17, "CIN": 32, "COUT": 64}]
    assert {"T": 17, "CIN": 64, "COUT": 32} in configs["linear"]  # the MLP's second Linear
    assert {"B": 2, "M": 17, "K": 16, "N": 17} in configs["matmul"]  # Q·Kᵀ per head
    assert {"B": 2, "M": 17, "K": 17, "N": 16} in configs["matmul"]  # A·V
    assert configs["softmax"] == [{"T": 2 * 17, "CIN": 17}]
