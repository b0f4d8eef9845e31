"""Transformer exports of Debian's torch on onednn_cpu through the CLI: a small ViT, a BERT-style encoder and a
ConvNeXt block, each exported at opset 13 (LayerNorm and GELU as op chains) and 17 (LayerNormalization),
converted with `nn-meter backend onednn_cpu convert` and run with `run`. The outputs must match torch's own
within 1e-3 of their largest magnitude, and the plan must hold one layer normalization per LayerNorm and no
step for any part of a GELU chain but its one GELU."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
torchvision = pytest.importorskip("torchvision")
onnx = pytest.importorskip("onnx")
from onnx import numpy_helper  # noqa: E402

CLI = os.environ.get("NNMETER_CLI", "nn-meter")


class ConvNeXtBlock(nn.Module):
    """ConvNeXt's block: depthwise 7x7 conv, LayerNorm over channels (channels-last), Linear, GELU, Linear."""

    def __init__(self, dim=32):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1, self.act, self.pw2 = nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        return x + self.pw2(self.act(self.pw1(self.norm(y)))).permute(0, 3, 1, 2)


def vit():
    model = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                 hidden_dim=64, mlp_dim=128, num_classes=10)
    # torchvision zero-initializes the classifier head, which would make every output 0.
    nn.init.normal_(model.heads.head.weight)
    return model.eval()


def bert():
    # Eval mode, dropout as nn.TransformerEncoderLayer's default: exported with gradients on (below), the layers
    # skip the fast path Debian's torch cannot export (aten::_native_multi_head_attention), as
    # nn_meter.torch_to_onnx exports them; the numbers compared are eval mode's.
    layer = nn.TransformerEncoderLayer(64, 2, 128, activation="gelu", batch_first=True)
    return nn.TransformerEncoder(layer, 2).eval()


MODELS = {"vit": (vit, (1, 3, 32, 32), 5), "bert": (bert, (1, 16, 64), 4),
          "convnext": (lambda: ConvNeXtBlock().eval(), (1, 32, 14, 14), 1)}


def cli(*args, home):
    env = {"NN_METER_MACHINE_CHECK": "off", **os.environ, "NN_METER_HOME": str(home)}
    r = subprocess.run([CLI, *map(str, args)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"nn-meter {' '.join(map(str, args))} failed ({r.returncode}): {r.stderr}"
    return r


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_export_converts_and_matches_torch(tmp_path, name, opset):
    make, shape, layer_norms = MODELS[name]
    torch.manual_seed(0)
    model, x = make(), torch.randn(*shape)
    path = tmp_path / f"{name}{opset}.onnx"
    # Exported with gradients on: under no_grad nn.TransformerEncoder takes the fast path.
    torch.onnx.export(model, x, str(path), opset_version=opset, input_names=["x"], output_names=["y"])
    with torch.no_grad():
        want = model(x).numpy()
    exported = [n.op_type for n in onnx.load(str(path)).graph.node]
    assert ("LayerNormalization" in exported) == (opset == 17)
    home = tmp_path / "home"

    cli("backend", "onednn_cpu", "convert", "--onnx-path", path, "--work-dir", tmp_path / "work", home=home)
    plan = json.loads((tmp_path / "work" / f"{name}{opset}.plan.json").read_text())
    steps = plan["steps"]
    assert sum(s["primitive"] == "layer_normalization" for s in steps) == layer_norms, json.dumps(steps, indent=1)
    assert not any(s["primitive"] == "reduction" for s in steps), "a LayerNorm ran op by op"
    gelus = sum(s.get("as") == "GELU" or "gelu_erf" in s.get("post_ops", []) for s in steps)
    assert gelus == exported.count("Erf") and all(s.get("op") != "Erf" for s in steps)

    (tmp_path / "x.pb").write_bytes(numpy_helper.from_array(x.numpy(), "x").SerializeToString())
    cli("backend", "onednn_cpu", "run", "--onnx-path", path, "--input", tmp_path / "x.pb", "--output-dir", tmp_path, home=home)
    got = numpy_helper.to_array(onnx.load_tensor(str(tmp_path / "output_0.pb")))
    assert got.shape == want.shape and abs(want).max() > 0.1
    err = float(abs(got - want).max())
    print(f"{name} opset {opset}: max |onednn_cpu - torch| = {err:.3g} (largest output {abs(want).max():.3g})")
    assert err <= 1e-3 * float(abs(want).max()), err
