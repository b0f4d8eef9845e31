"""The reference networks (nn_meter.networks) are what torch.onnx.export writes: each architecture's torchvision
counterpart, exported by Debian's torch, has the same kernels with the same configs as the network nn-meter
writes — at the published width and at torchvision's other widths."""
import collections
import json

import onnx
import pytest

import nn_meter

# Rules that fuse across BN, activations and adds, so that detection walks every kind of unit.
RULES = {name: {"obey": True} for name in ("BF_conv_relu", "BF_conv_relu6", "BF_conv_bn", "BF_dwconv_relu",
                                           "BF_dwconv_relu6", "BF_conv_hswish", "BF_conv_swish", "BF_dwconv_swish",
                                           "BF_add_relu")}


def kernels(path):
    return collections.Counter((k["kind"], k["kernel"] or k["op"], json.dumps(k["config"], sort_keys=True))
                               for k in nn_meter.detect_kernels(str(path), RULES))


def test_sets_list_and_export_resumes(tmp_path):
    sets = {s["name"]: s for s in nn_meter.networks.list_sets()}
    assert len(sets["evaluation"]["networks"]) == 55 and len(sets["calibration-135"]["networks"]) == 135
    scored = {n["file"] for n in sets["evaluation"]["networks"]}
    assert not scored & {n["file"] for n in sets["calibration-135"]["networks"]}
    files = nn_meter.networks.export("main-job", tmp_path / "m", progress=False)
    assert [f.rsplit("/", 1)[1] for f in files] == [n["file"] for n in sets["main-job"]["networks"]]
    first = open(files[0], "rb").read()
    assert nn_meter.networks.export("main-job", tmp_path / "m", progress=False) == files
    assert open(files[0], "rb").read() == first
    with pytest.raises(nn_meter.NNMeterError, match="unknown network set 'nope'.*calibration-135"):
        nn_meter.networks.export("nope", tmp_path / "x")
    with pytest.raises(nn_meter.NNMeterError, match="resolution must be in"):
        nn_meter.networks.write("resnet18", tmp_path / "r.onnx", resolution=8)
    # detect_kernels takes the rules as a dict, a fusion_rules.json or a predictor folder.
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "fusion_rules.json").write_text(json.dumps(RULES))
    assert nn_meter.detect_kernels(files[1], tmp_path / "p") == nn_meter.detect_kernels(files[1], RULES)


def test_sample_writes_per_layer_variants_of_a_family(tmp_path):
    families = nn_meter.networks.list_sample_families()
    assert "ofa_mobilenet_v3" in families and "resnet" in families
    files = nn_meter.networks.sample("ofa_mobilenet_v3", tmp_path / "v", count=3, seed=9, progress=False)
    assert len(files) == 3 and all("ofa_mobilenet_v3__s9n" in f for f in files)
    # Three subnets of the space: their kernels differ.
    assert len({json.dumps(sorted(kernels(f).items())) for f in files}) == 3
    # A larger count keeps the files there and adds to them.
    again = nn_meter.networks.sample("ofa_mobilenet_v3", tmp_path / "v", count=4, seed=9, progress=False)
    assert again[:3] == files and len(again) == 4
    with pytest.raises(nn_meter.NNMeterError, match="unknown network family 'lenet'.*proxylessnas"):
        nn_meter.networks.sample("lenet", tmp_path / "x")
    with pytest.raises(ValueError, match="seed must be in"):
        nn_meter.networks.sample("resnet", tmp_path / "x", seed=-1)


def test_every_architecture_has_the_kernels_of_its_torchvision_export(tmp_path):
    torch = pytest.importorskip("torch")
    models = pytest.importorskip("torchvision.models")
    # (architecture, width, resolution, torchvision constructor). AlexNet and VGG at 224, where torchvision's
    # adaptive pooling meets its own output size; the rest at 128 to keep the test short.
    cases = [(arch, 1.0, 128, getattr(models, arch)) for arch in nn_meter.networks.list_architectures()
             if arch not in ("mobilenet_v1", "alexnet", "vgg11_bn", "googlenet", "preact_resnet18", "shufflenet_v1_g3")]
    cases += [("googlenet", 1.0, 128, lambda: models.googlenet(aux_logits=False, init_weights=False)),
              ("alexnet", 1.0, 224, models.alexnet), ("vgg11_bn", 1.0, 224, models.vgg11_bn),
              ("mobilenet_v2", 0.5, 128, lambda: models.mobilenet_v2(width_mult=0.5)),
              ("mnasnet1_0", 0.5, 128, models.mnasnet0_5),
              ("shufflenet_v2_x1_0", 0.5, 128, models.shufflenet_v2_x0_5),
              ("shufflenet_v2_x1_0", 1.5, 128, models.shufflenet_v2_x1_5)]
    # The two torchvision does not ship, after their papers' reference code (torch_counterparts.py).
    import torch_counterparts as tc
    cases += [("preact_resnet18", 1.0, 128, tc.PreActResNet18), ("preact_resnet18", 0.75, 128, lambda: tc.PreActResNet18(0.75)),
              ("shufflenet_v1_g3", 1.0, 128, tc.ShuffleNetV1), ("shufflenet_v1_g3", 1.25, 128, lambda: tc.ShuffleNetV1(1.25))]
    assert len({c[0] for c in cases}) == len(nn_meter.networks.list_architectures()) - 1  # all but MobileNet v1
    torch.manual_seed(0)
    for arch, width, res, make in cases:
        ours = nn_meter.networks.write(arch, tmp_path / "ours.onnx", resolution=res, width=width)
        theirs = tmp_path / "torch.onnx"
        with torch.no_grad():
            nn_meter.torch_to_onnx(make().eval(), (1, 3, res, res), path=theirs)
        a, b = kernels(theirs), kernels(ours)
        assert a == b, f"{arch} x{width} at {res}: torch only {a - b}, nn-meter only {b - a}"
        # The exporter's graph keeps no BN behind a conv, as ours.
        assert "BatchNormalization" not in {n.op_type for n in onnx.load(ours).graph.node} or arch in (
            "densenet121", "preact_resnet18")
