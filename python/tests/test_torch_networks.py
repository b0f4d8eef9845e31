"""nn_meter.torch_networks: the transformer sets as PyTorch exports them, and nn_meter.torch_to_onnx's eval-mode
export of attention layers (Debian's torch 1.13 has no ONNX export of their fast path)."""
import collections
import os
import subprocess
import sys

import pytest

import nn_meter

torch = pytest.importorskip("torch")
pytest.importorskip("torchvision")
onnx = pytest.importorskip("onnx")

RULES = {"BF_linear_gelu": {"obey": True}, "BF_conv_swish": {"obey": True}, "BF_dwconv_swish": {"obey": True}}


def sets():
    return {s["name"]: s for s in nn_meter.torch_networks.list_sets()}


def test_the_evaluation_set_holds_what_the_transformer_bench_scores():
    networks = sets()["transformers"]["networks"]
    assert len(networks) == 24
    by_family = collections.defaultdict(list)
    for n in networks:
        assert n["name"].startswith(n["family"] + "__"), n  # evaluate groups them by family
        by_family[n["family"]].append(n)
    vits = {(n["name"].split("_")[2], n["name"].split("_")[3], n["input_shape"][-1]) for n in by_family["vit"]}
    assert len(vits) == 12 and {v[-1] for v in vits} == {160, 224}  # 3 depths x 2 widths x 2 resolutions
    assert len(by_family["convnext"]) == 4 and len(by_family["mobilevit"]) == 2
    assert sorted({n["input_shape"][1] for n in by_family["bert"]}) == [64, 128, 256]  # tokens


def test_no_network_is_in_both_sets():
    s = sets()
    assert {n["name"] for n in s["transformers"]["networks"]}.isdisjoint(
        n["name"] for n in s["transformers-calibration"]["networks"])
    assert len({n["family"] for n in s["transformers-calibration"]["networks"]}) == 4


def test_export_keeps_files_already_there(tmp_path):
    """An interrupted export resumes: a file already written is neither exported again nor rewritten."""
    names = [n["name"] for n in sets()["transformers-calibration"]["networks"]]
    for name in names:
        (tmp_path / f"{name}.onnx").write_bytes(b"kept")
    paths = nn_meter.torch_networks.export("transformers-calibration", tmp_path, progress=False)
    assert [os.path.basename(p) for p in paths] == [f"{n}.onnx" for n in names]
    assert all(open(p, "rb").read() == b"kept" for p in paths)


def test_unknown_names_are_one_line_errors(tmp_path):
    with pytest.raises(ValueError, match="unknown set 'vits'"):
        nn_meter.torch_networks.export("vits", tmp_path)
    with pytest.raises(ValueError, match="no set holds a network named 'vit__huge'"):
        nn_meter.torch_networks.network("vit__huge")
    r = subprocess.run([sys.executable, "-m", "nn_meter.torch_networks", "export", "vits", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and r.stderr.strip().splitlines() == [
        "(nn-Meter) error: unknown set 'vits' (sets: transformers, transformers-calibration, torchvision-reference, "
        "torchvision-new)"], r.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("name", ["vit__d2_w256_p16_r192", "convnext__nano_r128", "mobilevit__s_r192",
                                  "bert__l2_w128_t96"])
def test_every_family_exports_in_eval_form_and_is_covered(tmp_path, name):
    """Each family's export has no BatchNormalization or Dropout left (eval mode, BN folded), and every node
    lands in a kernel; a Linear's rows are tokens, so no fc is found but a classifier's."""
    module, shape = nn_meter.torch_networks.network(name)
    path = tmp_path / f"{name}.onnx"
    nn_meter.torch_to_onnx(module, shape, path=path)
    ops = {n.op_type for n in onnx.load(str(path)).graph.node}
    assert not ops & {"BatchNormalization", "Dropout"}, ops
    kernels = nn_meter.detect_kernels(str(path), RULES)
    assert not [k["op"] for k in kernels if k["kind"] == "unsupported"]
    fcs = [k["config"] for k in kernels if k.get("kernel") == "fc"]
    assert fcs == ([] if name.startswith("bert") else [{"CIN": fcs[0]["CIN"], "COUT": 1000}]), fcs


def test_attention_exports_in_eval_mode_even_with_frozen_weights(tmp_path):
    """nn.TransformerEncoder in eval mode with frozen weights would take the fast path that has no export; the
    export takes the plain ops and leaves the module's modes and requires_grad as they were."""
    layer = torch.nn.TransformerEncoderLayer(32, 2, 64, activation="gelu", batch_first=True)
    model = torch.nn.Sequential(torch.nn.TransformerEncoder(layer, 2))
    for p in model.parameters():
        p.requires_grad_(False)
    model.train()
    path = tmp_path / "frozen.onnx"
    nn_meter.torch_to_onnx(model, (1, 8, 32), path=path)
    ops = [n.op_type for n in onnx.load(str(path)).graph.node]
    assert "Dropout" not in ops and "Softmax" in ops, ops
    assert all(m.training for m in model.modules())
    assert not any(p.requires_grad for p in model.parameters())


def test_torchvision_sets_hold_reference_families_and_six_new_ones():
    """torchvision-reference is made of the builtin CNN sets' families; torchvision-new of at least six families
    no builtin architecture belongs to, grouped convolutions among them: what a CNN predictor has never seen."""
    s = sets()
    builtin = nn_meter.networks.list_architectures()
    reference = s["torchvision-reference"]["networks"]
    new = s["torchvision-new"]["networks"]
    assert all(any(arch.startswith(n["family"]) for arch in builtin) for n in reference), reference
    families = {n["family"] for n in new}
    assert len(families) >= 6 and {"resnext", "regnet_x", "regnet_y"} <= families
    assert not any(arch.startswith(f) for f in families for arch in builtin), families


def test_a_grouped_convolution_family_exports_covered(tmp_path):
    """RegNetX's grouped 3x3 convs reach detection with their groups, and every node of the export is covered."""
    module, shape = nn_meter.torch_networks.network("regnet_x__regnet_x_400mf_r224")
    path = str(tmp_path / "regnet.onnx")
    nn_meter.torch_to_onnx(module, shape, path=path)
    kernels = nn_meter.detect_kernels(path, RULES)
    assert not [k["op"] for k in kernels if k["kind"] == "unsupported"]
    groups = [k["config"]["GROUPS"] for k in kernels if k.get("config", {}).get("GROUPS", 1) > 1]
    assert len(groups) == 22 and min(groups) >= 2, groups
