"""Networks as PyTorch exports them: transformers and hybrids (ViT/DeiT with torchvision's VisionTransformer,
ConvNeXt, a MobileViT-style hybrid, BERT-style encoders) and torchvision's own CNNs, built with the installed torch
and written by torch.onnx.export (nn_meter.torch_to_onnx), so that a predictor is judged on the graphs users'
exports have. Named sets, like the builtin CNN sets of nn_meter.networks (which are written by nn-Meter itself,
without torch):

    import nn_meter
    nn_meter.torch_networks.list_sets()                                   # [{"name": "transformers", ...}, ...]
    files = nn_meter.torch_networks.export("transformers", "models/")       # 24 ONNX files
    python3 -m nn_meter.torch_networks export transformers-calibration ws/transformer_calibration

The set `transformers` is the evaluation set of bench/RESULTS-transformers.md; `transformers-calibration` holds
other depths, widths and sizes of the same families, for CALIBRATION_NETWORKS (the preset transformers).
`torchvision-reference` and `torchvision-new` are torchvision's classification models themselves: variants of
the families the builtin CNN sets are made of, and families that no builtin set holds (grouped convolutions among
them), which the accuracy bench scores CNN predictors on (bench/RESULTS-accuracy.md)."""
import argparse
import os
import sys
import warnings

from .predictor import torch_to_onnx


def _vit(layers, width, resolution, patch=16):
    # DeiT's shapes: 64-wide heads, an MLP four times the width.
    return ("vit", dict(image_size=resolution, patch_size=patch, num_layers=layers, num_heads=width // 64,
                        hidden_dim=width, mlp_dim=4 * width), (1, 3, resolution, resolution))


def _convnext(variant, resolution):
    return ("convnext", dict(variant=variant), (1, 3, resolution, resolution))


def _mobilevit(variant, resolution):
    return ("mobilevit", dict(variant=variant), (1, 3, resolution, resolution))


def _bert(layers, width, tokens):
    return ("bert", dict(layers=layers, width=width, heads=width // 64), (1, tokens, width))


def _torchvision(family, model, resolution):
    return ("torchvision", dict(family=family, model=model), (1, 3, resolution, resolution))


def _name(kind, args, shape):
    # FAMILY__VARIANT: nn-meter evaluate and calibrate group the variants by family.
    if kind == "torchvision":
        return f"{args['family']}__{args['model']}_r{shape[-1]}"
    if kind == "vit":
        return f"vit__d{args['num_layers']}_w{args['hidden_dim']}_p{args['patch_size']}_r{shape[-1]}"
    if kind == "bert":
        return f"bert__l{args['layers']}_w{args['width']}_t{shape[1]}"
    return f"{kind}__{args['variant']}_r{shape[-1]}"


# The evaluation set of bench/RESULTS-transformers.md (ViT/DeiT at 3 depths x 2 widths x 2 resolutions,
# ConvNeXt-T/S at two resolutions, MobileViT-style hybrids, BERT-style encoders at 3 sequence lengths), sized so
# that each runs well under a second on one core, and a calibration set that shares no network with it.
_SETS = {
    "transformers": {
        "description": "24 transformers and hybrids to evaluate on: ViT/DeiT depth 4/8/12 x width 192/384 x 160/224, "
                       "ConvNeXt-T/S at 160/224, MobileViT-XXS/XS at 256, BERT-style 4 layers x 256/512 wide x "
                       "64/128/256 tokens",
        "networks": [_vit(d, w, r) for d in (4, 8, 12) for w in (192, 384) for r in (160, 224)]
                    + [_convnext(v, r) for v in ("tiny", "small") for r in (160, 224)]
                    + [_mobilevit(v, 256) for v in ("xxs", "xs")]
                    + [_bert(4, w, t) for w in (256, 512) for t in (64, 128, 256)],
    },
    "transformers-calibration": {
        "description": "12 other sizes of the same families, for the composition term: ViT depth 2/6 x width 256/320 "
                       "at 192, ConvNeXt-nano at 128/192, MobileViT-S at 192, BERT-style 2/6 layers x 128/384 wide "
                       "x 96/192 tokens, a ViT with 32-pixel patches",
        "networks": [_vit(d, w, 192) for d in (2, 6) for w in (256, 320)]
                    + [_vit(6, 384, 256, patch=32)]
                    + [_convnext("nano", r) for r in (128, 192)]
                    + [_mobilevit("s", 192)]
                    + [_bert(2, 128, 96), _bert(6, 128, 192), _bert(2, 384, 192), _bert(6, 384, 96)],
    },
    # torchvision's own exports of the builtin sets' families: five at the size the set evaluation has them (as
    # torch writes them, against nn-Meter's own writing of the same graphs: python/tests/test_networks.py), five
    # variants no builtin set has.
    "torchvision-reference": {
        "description": "10 torchvision models of the builtin sets' families: MobileNetV2, MobileNetV3-small, "
                       "MnasNet 0.5, EfficientNet-B1 at 240, ShuffleNetV2 x0.5, ResNet-18/34, SqueezeNet 1.0, "
                       "GoogLeNet, DenseNet-121",
        "networks": [_torchvision("mobilenet_v2", "mobilenet_v2", 224),
                     _torchvision("mobilenet_v3", "mobilenet_v3_small", 224),
                     _torchvision("mnasnet", "mnasnet0_5", 224),
                     _torchvision("efficientnet", "efficientnet_b1", 240),
                     _torchvision("shufflenet_v2", "shufflenet_v2_x0_5", 224),
                     _torchvision("resnet", "resnet18", 224), _torchvision("resnet", "resnet34", 224),
                     _torchvision("squeezenet", "squeezenet1_0", 224), _torchvision("googlenet", "googlenet", 224),
                     _torchvision("densenet", "densenet121", 224)],
    },
    "torchvision-new": {
        "description": "8 torchvision models of 6 families no builtin set holds: ResNeXt-50 32x4d, RegNetX and "
                       "RegNetY 400MF/800MF-1.6GF (grouped convolutions), EfficientNetV2-S, Inception v3 at 299, "
                       "Wide ResNet-50-2 at 160",
        "networks": [_torchvision("resnext", "resnext50_32x4d", 224),
                     _torchvision("regnet_x", "regnet_x_400mf", 224), _torchvision("regnet_x", "regnet_x_1_6gf", 224),
                     _torchvision("regnet_y", "regnet_y_400mf", 224), _torchvision("regnet_y", "regnet_y_800mf", 224),
                     _torchvision("efficientnet_v2", "efficientnet_v2_s", 224),
                     _torchvision("inception", "inception_v3", 299),
                     _torchvision("wide_resnet", "wide_resnet50_2", 160)],
    },
}


def list_sets():
    """Every set: name, description and its networks (name, family, input shape)."""
    return [{"name": name, "description": s["description"],
             "networks": [{"name": _name(*n), "family": _name(*n).split("__")[0], "input_shape": list(n[2])}
                          for n in s["networks"]]}
            for name, s in _SETS.items()]


def _find(name):
    for s in _SETS.values():
        for kind, args, shape in s["networks"]:
            if _name(kind, args, shape) == name:
                return kind, args, shape
    raise ValueError(f"no set holds a network named '{name}' (python3 -m nn_meter.torch_networks list)")


def network(name):
    """The torch.nn.Module of a network of the sets (list_sets()), initialised with seed 0 and in eval mode, and
    its input shape."""
    kind, args, shape = _find(name)
    try:
        import torch
        from . import _torch_models
    except ImportError:
        raise ImportError("nn_meter.torch_networks needs PyTorch and torchvision "
                          "(Debian: apt-get install python3-torch python3-torchvision)") from None
    torch.manual_seed(0)
    if kind == "torchvision":
        import torchvision
        # Inception v3's auxiliary classifier is a training-time head: eval mode skips it, so leave it unbuilt.
        extra = {"aux_logits": False, "init_weights": False} if args["model"] == "inception_v3" else {}
        module = getattr(torchvision.models, args["model"])(**extra)
    elif kind == "vit":
        from torchvision.models.vision_transformer import VisionTransformer
        module = VisionTransformer(**args)
    elif kind == "convnext":
        module = _torch_models.convnext(args["variant"])
    elif kind == "mobilevit":
        module = _torch_models.MobileViT(args["variant"])
    else:
        module = _torch_models.BertEncoder(args["layers"], args["width"], args["heads"])
    return module.eval(), shape


def export(set_name, out_dir, opset_version=13, progress=None):
    """Writes every network of `set_name` into `out_dir` as <name>.onnx with nn_meter.torch_to_onnx, each
    atomically (a file already there is kept, so an interrupted export resumes), and returns their paths in the
    set's order."""
    if set_name not in _SETS:
        raise ValueError(f"unknown set '{set_name}' (sets: {', '.join(_SETS)})")
    if progress is None:
        progress = sys.stderr.isatty()
    os.makedirs(out_dir, exist_ok=True)
    names = [_name(*n) for n in _SETS[set_name]["networks"]]
    paths = []
    for i, name in enumerate(names, 1):
        path = os.path.join(os.fspath(out_dir), name + ".onnx")
        if not os.path.exists(path):
            if progress:
                print(f"\r(nn-Meter) exporting {set_name}: {i}/{len(names)} {name}", end="", file=sys.stderr, flush=True)
            module, shape = network(name)
            # The tracer's warnings about these modules' shape asserts are known and harmless: quiet them.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch_to_onnx(module, shape, opset_version=opset_version, path=path)
        paths.append(path)
    if progress:
        print(file=sys.stderr)
    return paths


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nn_meter.torch_networks",
                                 description="PyTorch exports of transformers, hybrids and torchvision's CNNs, in named sets.")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the sets and their networks")
    e = sub.add_parser("export", help="write a set's networks as ONNX into a folder (resumes)")
    e.add_argument("set")
    e.add_argument("out_dir")
    e.add_argument("--opset", type=int, default=13)
    a = ap.parse_args(argv)
    try:
        if a.command == "list":
            for s in list_sets():
                print(f"{s['name']}: {s['description']}")
                for n in s["networks"]:
                    print(f"  {n['name']}  {n['family']}  {'x'.join(map(str, n['input_shape']))}")
        else:
            for path in export(a.set, a.out_dir, a.opset):
                print(path)
    except (ValueError, ImportError, OSError) as err:
        sys.exit(f"(nn-Meter) error: {err}")


if __name__ == "__main__":
    main()
