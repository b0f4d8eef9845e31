"""Transformer and hybrid networks as PyTorch exports them: ViT/DeiT (torchvision's VisionTransformer), ConvNeXt
(torchvision), a MobileViT-style hybrid and BERT-style encoders, built with the installed torch and written by
torch.onnx.export (nn_meter.torch_to_onnx), so that a predictor is judged on the graphs users' exports have.
Named sets, like the builtin CNN sets of nn_meter.networks (which are written by nn-Meter itself, without torch):

    import nn_meter
    nn_meter.torch_networks.list_sets()                                   # [{"name": "transformers", ...}, ...]
    files = nn_meter.torch_networks.export("transformers", "models/")       # 24 ONNX files
    python3 -m nn_meter.torch_networks export transformers-calibration ws/transformer_calibration

The set `transformers` is the evaluation set of bench/RESULTS-transformers.md; `transformers-calibration` holds
other depths, widths and sizes of the same families, for CALIBRATION_NETWORKS (the preset transformers)."""
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


def _name(kind, args, shape):
    # FAMILY__VARIANT: nn-meter evaluate and calibrate group the variants by family.
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
}


def list_sets():
    """Every set: name, description and its networks (name, family, input shape)."""
    return [{"name": name, "description": s["description"],
             "networks": [{"name": _name(*n), "family": n[0], "input_shape": list(n[2])} for n in s["networks"]]}
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
    if kind == "vit":
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
                                 description="PyTorch exports of transformers and hybrids, in named sets.")
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
