"""The predictor side: load a registered predictor, predict every model form, batch and kernel-table calls,
and bad input as one-line Python exceptions."""
import json
import os

import numpy as np
import onnx
import pytest

import nn_meter
from conftest import make_workspace, run_cli
from models import conv_relu_add

KERNELS_YAML = "".join(f"  {k}:\n    INIT_SAMPLE_NUM: 12\n    FINEGRAINED_SAMPLE_NUM: 2\n    ITERATION: 1\n"
                       f"    ERROR_THRESHOLD: 0.1\n" for k in ("conv-bn-relu", "add", "relu", "global-avgpool"))


@pytest.fixture(scope="module")
def registered(tmp_path_factory):
    """A small predictor built with the Python builder API, registered in a private home."""
    tmp = tmp_path_factory.mktemp("predictor")
    home = tmp / "home"
    old = os.environ.get("NN_METER_HOME")
    os.environ["NN_METER_HOME"] = str(home)
    try:
        ws = make_workspace(tmp / "ws", home, KERNELS_YAML)
        from nn_meter.builder import build_latency_predictor, builder_config
        builder_config.init(str(ws))
        summaries = build_latency_predictor("onednn_cpu", predictor_name="tiny", ruletest=False)
        assert sorted(s["kernel"] for s in summaries) == ["add", "conv-bn-relu", "global-avgpool", "relu"]
        folder = ws / "predictor_build" / "predictor"
        # Known fusion rules instead of a measured rule test: detection is then the same on every machine.
        (folder / "fusion_rules.json").write_text(json.dumps({"BF_conv_relu": {"obey": True}}))
        run_cli("register", "--predictor", folder / "meta.yaml", home=home)
        yield home, ws
    finally:
        if old is None:
            os.environ.pop("NN_METER_HOME", None)
        else:
            os.environ["NN_METER_HOME"] = old


@pytest.fixture
def predictor(registered, monkeypatch):
    monkeypatch.setenv("NN_METER_HOME", str(registered[0]))
    return nn_meter.load_latency_predictor("tiny")


def test_list_and_load(registered, predictor, monkeypatch):
    monkeypatch.setenv("NN_METER_HOME", str(registered[0]))
    listed = nn_meter.list_latency_predictors()
    assert [(p["name"], p["version"]) for p in listed] == [("tiny", "1.0")]
    assert sorted(predictor.kernel_predictors) == ["add", "conv-bn-relu", "global-avgpool", "relu"]
    assert nn_meter.load_latency_predictor("tiny", 1.0).name == "tiny"


def test_every_onnx_form_predicts_the_same(predictor, tmp_path):
    model = conv_relu_add()
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    by_path = predictor.predict(str(path), model_type="onnx")
    assert by_path > 0
    assert predictor.predict(path, model_type="onnx") == by_path  # os.PathLike
    assert predictor.predict(model.SerializeToString(), model_type="onnx") == by_path
    assert predictor.predict(model, model_type="onnx") == by_path  # onnx.ModelProto
    # The same number the CLI prints for the file.
    cli = run_cli("--json", "predict", "--predictor", "tiny", "--onnx", path, home=os.environ["NN_METER_HOME"])
    assert json.loads(cli.stdout)["m.onnx"]["latency_ms"] == pytest.approx(by_path, rel=1e-12)
    # A file name is any bytes (Python's str holds the others as surrogates): the same file is predicted, named with
    # U+FFFD for what is not UTF-8.
    odd = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"m\xff.onnx"))
    with open(odd, "wb") as f:
        f.write(model.SerializeToString())
    assert predictor.predict(odd) == by_path
    assert predictor.predict_detail(odd)["model"].endswith("m\ufffd.onnx")


def test_a_calibrated_folder_predicts_with_its_composition(registered, predictor, tmp_path):
    import shutil
    folder = tmp_path / "calibrated"
    shutil.copytree(registered[1] / "predictor_build" / "predictor", folder)
    (folder / "composition.json").write_text(json.dumps(
        {"format_version": 1, "c0": 0.1, "c1": 0.0, "footprint_mb_range": [1.0, 500.0]}))
    model = conv_relu_add()
    plain = predictor.predict_detail(model)
    detail = nn_meter.load_predictor_folder(str(folder)).predict_detail(model)
    assert detail["kernels_ms"] == pytest.approx(plain["kernels_ms"], rel=1e-12)
    assert detail["composition_factor"] == pytest.approx(np.exp(0.1), rel=1e-12)
    assert detail["unscaled_ms"] == 0  # no unscaled_kernels in the file: every kernel scaled
    assert detail["latency_ms"] == pytest.approx(plain["latency_ms"] * np.exp(0.1), rel=1e-12)
    assert detail["neighbour_factor"] == 1
    # A neighbours' correction (format 2): the nearest calibration network's residual multiplies the term's.
    neighbour = lambda name, mix, residual: {"model": name, "footprint_mb": 10.0, "mix": mix, "residual": residual}
    (folder / "composition.json").write_text(json.dumps(
        {"format_version": 2, "c0": 0.1, "c1": 0.0, "footprint_mb_range": [1.0, 500.0],
         "neighbours": {"k": 1, "footprint_weight": 0.0, "statistic": "median",
                        "networks": [neighbour("convs", {"conv-bn-relu": 1.0}, 1.2),
                                     neighbour("pools", {"global-avgpool": 1.0}, 0.7)]}}))
    shares = {}
    for k in plain["kernels"]:
        shares[k["predictor_kernel"]] = shares.get(k["predictor_kernel"], 0) + k["latency_ms"] / plain["kernels_ms"]
    nearest = 1.2 if (1 - shares.get("conv-bn-relu", 0)) ** 2 < (1 - shares.get("global-avgpool", 0)) ** 2 else 0.7
    corrected = nn_meter.load_predictor_folder(str(folder)).predict_detail(model)
    assert corrected["neighbour_factor"] == nearest
    assert corrected["latency_ms"] == pytest.approx(plain["latency_ms"] * np.exp(0.1) * nearest, rel=1e-12)
    (folder / "composition.json").write_text("{")
    with pytest.raises(Exception, match="composition.json"):
        nn_meter.load_predictor_folder(str(folder))


def test_detail_and_ir_round_trip(predictor, tmp_path):
    model = conv_relu_add()
    detail = predictor.predict_detail(model)
    assert detail["latency_ms"] == pytest.approx(sum(k["latency_ms"] for k in detail["kernels"]))
    # Not calibrated: the plain sum, and the parts say so.
    assert detail["composition_factor"] == 1
    assert detail["kernels_ms"] == pytest.approx(detail["latency_ms"], rel=1e-12)
    assert detail["footprint_mb"] > 0
    assert {k["predictor_kernel"] for k in detail["kernels"]} >= {"conv-bn-relu", "add", "global-avgpool"}
    ir = nn_meter.model_to_graph(model)
    assert {n["attr"]["type"] for n in ir.values()} >= {"Conv", "Relu", "Add"}
    assert predictor.predict(ir, model_type="nnmeter-ir") == pytest.approx(detail["latency_ms"], rel=1e-12)
    ir_file = tmp_path / "m_ir.json"
    ir_file.write_text(json.dumps(ir))
    assert predictor.predict(str(ir_file), model_type="nnmeter-ir") == pytest.approx(detail["latency_ms"], rel=1e-12)


def test_batch_equals_one_by_one(predictor):
    models = [conv_relu_add(channels=c, hw=hw) for c in (8, 16, 24) for hw in (14, 28)]
    one_by_one = [predictor.predict(m) for m in models]
    assert predictor.predict_batch(models, threads=2) == one_by_one
    assert predictor.predict_batch(models, threads=1) == one_by_one
    assert len(set(one_by_one)) > 1


def test_kernel_table_matches_model_kernels(predictor):
    detail = predictor.predict_detail(conv_relu_add())
    conv = [k for k in detail["kernels"] if k["predictor_kernel"] == "conv-bn-relu"]
    rows = np.array([k["features"] for k in conv])
    got = predictor.predict_kernels("conv-bn-relu", rows)
    assert got.shape == (len(conv),)
    np.testing.assert_allclose(got, [k["latency_ms"] / k.get("groups", 1) for k in conv], rtol=1e-12)


def test_torch_module_predicts_like_its_onnx_export(predictor, tmp_path):
    torch = pytest.importorskip("torch")

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
            self.relu = torch.nn.ReLU()
            self.conv2 = torch.nn.Conv2d(16, 16, 1, bias=False)
            self.pool = torch.nn.AdaptiveAvgPool2d(1)

        def forward(self, x):
            return self.pool(self.conv2(self.relu(self.conv1(x))) + x)

    module = Block()
    from_torch = predictor.predict(module, model_type="torch", input_shape=(1, 16, 28, 28))
    path = tmp_path / "block.onnx"
    torch.onnx.export(module.eval(), torch.randn(1, 16, 28, 28), str(path), opset_version=13)
    assert from_torch == predictor.predict(str(path), model_type="onnx")
    assert from_torch == predictor.predict(conv_relu_add(), model_type="onnx")


def test_bad_input_is_one_line_python_error(predictor, registered, tmp_path, monkeypatch):
    monkeypatch.setenv("NN_METER_HOME", str(registered[0]))
    with pytest.raises(nn_meter.NNMeterError, match="no registered predictor 'nope'.*tiny"):
        nn_meter.load_latency_predictor("nope")
    with pytest.raises(nn_meter.NNMeterError, match="version"):
        nn_meter.load_latency_predictor("tiny", "9.9")
    with pytest.raises(ValueError, match="model_type must be one of"):
        predictor.predict("m.pb", model_type="pb")
    with pytest.raises(TypeError, match="onnx"):
        predictor.predict(42)
    with pytest.raises(nn_meter.NNMeterError, match="not an ONNX model"):
        predictor.predict(b"definitely not onnx")
    missing = tmp_path / "missing.onnx"
    with pytest.raises(nn_meter.NNMeterError, match="missing.onnx"):
        predictor.predict(str(missing))
    with pytest.raises(nn_meter.NNMeterError, match="not nn-Meter IR json"):
        predictor.predict(str(_write(tmp_path / "bad.json", "{nope")), model_type="nnmeter-ir")
    bad_batch = [conv_relu_add(), b"garbage"]
    with pytest.raises(nn_meter.NNMeterError, match="not an ONNX model"):
        predictor.predict_batch(bad_batch)
    with pytest.raises(nn_meter.NNMeterError, match="2-D"):
        predictor.predict_kernels("conv-bn-relu", np.zeros(3))
    with pytest.raises(nn_meter.NNMeterError):
        predictor.predict_kernels("no-such-kernel", np.zeros((1, 3)))
    for error in (nn_meter.NNMeterError("x"),):
        assert isinstance(error, RuntimeError)


def _write(path, text):
    path.write_text(text)
    return path


def test_evaluate_and_calibrate_measure_score_and_resume(registered, tmp_path, monkeypatch):
    monkeypatch.setenv("NN_METER_HOME", str(registered[0]))
    models = tmp_path / "models"
    models.mkdir()
    onnx.save(conv_relu_add(channels=16, hw=28, name="small"), str(models / "small.onnx"))
    onnx.save(conv_relu_add(channels=32, hw=28, name="wide"), str(models / "wide.onnx"))
    work = tmp_path / "evaluate"
    report = nn_meter.evaluate("tiny", models, repeats=2, work_dir=work, report=tmp_path / "report.html",
                               progress=False)
    assert report["summary"]["models"] == 2
    assert sorted(m["model"] for m in report["models"]) == ["small", "wide"]
    for m in report["models"]:
        assert len(m["repeats_ms"]) == 2 and m["measured_ms"] == min(m["repeats_ms"])
        assert m["error"] == pytest.approx(m["predicted_ms"] / m["measured_ms"] - 1)
    assert "repeatability" in report["summary"]
    assert "<svg" in (tmp_path / "report.html").read_text()
    assert json.loads((work / "results.json").read_text())["models"] == report["models"]
    assert report["files"]["csv"] == str(work / "results.csv") and (work / "results.csv").exists()
    # Resuming in the same folder measures nothing again: the journal's repeats come back unchanged.
    again = nn_meter.evaluate("tiny", [models / "small.onnx", models / "wide.onnx"], repeats=2, work_dir=work,
                              progress=False)
    assert [m["repeats_ms"] for m in again["models"]] == [m["repeats_ms"] for m in report["models"]]
    assert again["files"]["report"] == str(work / "report.html")

    folder = registered[1] / "predictor_build" / "predictor"
    calibration = nn_meter.calibrate("tiny", models, repeats=2, work_dir=work, dry_run=True, progress=False)
    assert set(calibration["composition"]) >= {"c0", "c1"}
    assert calibration["file"] is None and not (folder / "composition.json").exists()
    assert [m["repeats_ms"] for m in calibration["evaluation"]["models"]] == [m["repeats_ms"] for m in report["models"]]

    with pytest.raises(nn_meter.NNMeterError, match="missing.onnx"):
        nn_meter.evaluate("tiny", tmp_path / "missing.onnx", work_dir=tmp_path / "e2", progress=False)

    # calibrate_on: "small" as the calibration network, measured in the same order as "wide" (here from the
    # journal copied over: nothing measured again); "wide" predicted with the term fitted on "small".
    one = tmp_path / "one"
    one.mkdir()
    (one / "journal.jsonl").write_text((work / "journal.jsonl").read_text())
    calibrated = nn_meter.evaluate("tiny", models / "wide.onnx", calibrate_on=[models / "small.onnx"], repeats=2,
                                   work_dir=one, progress=False)
    assert (one / "journal.jsonl").read_text() == (work / "journal.jsonl").read_text()
    assert [m["model"] for m in calibrated["calibration_models"]] == ["small"]
    assert [m["model"] for m in calibrated["models"]] == ["wide"]
    term = json.loads((one / "composition.json").read_text())
    assert calibrated["files"]["composition"] == str(one / "composition.json") and calibrated["composition"] == term
    small = calibrated["calibration_models"][0]
    assert np.exp(term["c0"]) == pytest.approx(small["measured_ms"] / small["kernels_ms"], rel=1e-9)  # one network
    wide = calibrated["models"][0]
    assert wide["predicted_ms"] == pytest.approx(wide["kernels_ms"] * np.exp(term["c0"]), rel=1e-9)
    assert not (folder / "composition.json").exists()

    # kernels=True measures each detected kernel alone too, in kernel_repeats repeats (the models keep `repeats`).
    split = nn_meter.evaluate("tiny", models / "wide.onnx", repeats=2, kernels=True, kernel_repeats=1,
                              work_dir=tmp_path / "k", progress=False)
    assert split["kernel_repeats"] == 1 and split["kernels"]
    assert all(len(k["repeats_ms"]) == 1 for k in split["kernels"])
    assert len(split["models"][0]["repeats_ms"]) == 2
    assert split["files"]["kernels_csv"] == str(tmp_path / "k" / "kernels.csv")

    # Leave-family-out scores a workspace's calibration networks: this one has none, and says what to add.
    with pytest.raises(nn_meter.NNMeterError, match="lists no CALIBRATION_NETWORKS"):
        nn_meter.leave_family_out(registered[1], progress=False)
    with pytest.raises(nn_meter.NNMeterError, match="is not a predictor folder"):
        nn_meter.leave_family_out(registered[1], predictor=tmp_path / "nowhere", progress=False)


@pytest.mark.parametrize("opset", [13, 17])
def test_real_torchvision_exports_predict(registered, tmp_path, opset):
    """Exporters compute shapes at run time (Shape → Gather → Div → Slice in ShuffleNetV2's chunk, a ViT's class
    token expanded to the batch, Swin's window padding and roll, MaxViT's Einsum): every one loads and is
    predicted."""
    torch = pytest.importorskip("torch")
    models = pytest.importorskip("torchvision.models")
    from torchvision.models.maxvit import MaxVit
    from torchvision.models.swin_transformer import SwinTransformer
    from torchvision.models.vision_transformer import VisionTransformer
    torch.manual_seed(0)
    cases = {
        "shufflenet_v2": (models.shufflenet_v2_x0_5(), (1, 3, 64, 64)),
        "efficientnet_b0": (models.efficientnet_b0(), (1, 3, 64, 64)),
        "vit": (VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64),
                (1, 3, 32, 32)),
        "swin": (SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2], window_size=[4, 4]),
                 (1, 3, 40, 40)),
        # Its attention is an Einsum, whose output ONNX 1.12 does not infer.
        "maxvit": (MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[8, 16],
                          block_layers=[1, 1], head_dim=4, stochastic_depth_prob=0.0), (1, 3, 32, 32)),
    }
    predictor = nn_meter.load_predictor_folder(str(registered[1] / "predictor_build" / "predictor"))
    with torch.no_grad():
        for name, (module, shape) in cases.items():
            module.eval()
            path = tmp_path / f"{name}.onnx"
            nn_meter.torch_to_onnx(module, shape, opset_version=opset, path=path)
            detail = predictor.predict_detail(str(path))
            assert detail["latency_ms"] > 0, name
            assert nn_meter.model_file_to_graph(str(path)), name
            # The module itself predicts the same (model_type='torch' exports it the same way), and its modes
            # are as they were.
            assert not any(m.training for m in module.modules()), name
            if opset == 13:
                assert predictor.predict(module, model_type="torch", input_shape=shape) == detail["latency_ms"], name


def test_exported_swish_convs_use_the_swish_kernel_or_say_which_stand_in(registered, tmp_path):
    """torch.onnx.export folds BN into the conv and writes SiLU as Sigmoid·Mul: the unit is conv-bn-swish's, and a
    predictor without that kernel names the stand-in it used rather than predicting it silently as conv-bn-relu."""
    torch = pytest.importorskip("torch")
    models = pytest.importorskip("torchvision.models")
    import shutil
    folder = tmp_path / "predictor"
    shutil.copytree(registered[1] / "predictor_build" / "predictor", folder)
    (folder / "fusion_rules.json").write_text(json.dumps(
        {name: {"obey": True} for name in ("BF_conv_relu", "BF_conv_swish", "BF_dwconv_swish", "BF_conv_bn")}))
    path = tmp_path / "efficientnet_b0.onnx"
    nn_meter.torch_to_onnx(models.efficientnet_b0(), (1, 3, 64, 64), path=path)
    detail = nn_meter.load_predictor_folder(str(folder)).predict_detail(str(path))
    swish = [k for k in detail["kernels"] if k["op"] == "conv-swish"]
    assert swish and {k["kernel"] for k in swish} == {"conv-bn-swish"}
    assert all(k["stand_in"] and k["predictor_kernel"] == "conv-bn-relu" for k in swish)
    assert detail["stand_ins"]["conv-bn-swish -> conv-bn-relu"] == len(swish)
    home = tmp_path / "home"
    run_cli("register", "--predictor", folder / "meta.yaml", home=home)
    cli = run_cli("predict", "--predictor", "tiny", "--onnx", path, home=home)
    assert "conv-bn-swish -> conv-bn-relu" in cli.stdout + cli.stderr


def test_remeasure_noisy_repeats_only_unsettled_samples(registered, tmp_path, monkeypatch):
    """build_latency_predictor(remeasure_noisy=True) on the fixture's workspace: every earlier repeat is kept,
    settled samples are not measured again, the others get up to twice REPEATS (2 here)."""
    home, ws = registered
    monkeypatch.setenv("NN_METER_HOME", str(home))
    from nn_meter.builder import build_latency_predictor, builder_config
    profiled = ws / "predictor_build" / "results" / "profiled_relu.json"
    before = {k: v["repeats_ms"] for k, v in json.loads(profiled.read_text())["relu"].items()}
    builder_config.init(str(ws))
    build_latency_predictor("onednn_cpu", kernels=["relu"], predictor_name="again", folder=tmp_path / "again",
                            ruletest=False, remeasure_noisy=True)
    after = {k: v["repeats_ms"] for k, v in json.loads(profiled.read_text())["relu"].items()}
    assert after.keys() == before.keys()
    for key, old in before.items():
        new = after[key]
        assert new[:len(old)] == old, key
        assert len(old) <= len(new) <= 4, key
        lo = sorted(old)
        if (lo[1] - lo[0]) / lo[0] <= 0.02:  # settled (SETTLE_TOLERANCE's default): nothing more measured
            assert new == old, key


def test_warnings_are_said_once_per_process(registered, tmp_path, capfd):
    """A NAS loop predicts the same model again and again: the predictor's noisy-build warning and the model's
    uncovered / stand-in warnings are said once, then only counted (a line at the 10th, 100th... time)."""
    import shutil
    folder = tmp_path / "predictor"
    shutil.copytree(registered[1] / "predictor_build" / "predictor", folder)
    meta = json.loads((folder / "predictor.json").read_text())
    meta["measurement_quality"] = {"verdict": "noisy", "reasons": ["drift probes moved 40 %"]}
    (folder / "predictor.json").write_text(json.dumps(meta))
    path = tmp_path / "mobilenet_v2.onnx"
    nn_meter.networks.write("mobilenet_v2", str(path), resolution=64, width=0.5)
    capfd.readouterr()
    first = nn_meter.load_predictor_folder(str(folder))
    again = nn_meter.load_predictor_folder(str(folder))
    latencies = {first.predict(str(path)) for _ in range(25)} | {again.predict(str(path)) for _ in range(25)}
    assert len(latencies) == 1
    err = capfd.readouterr().err.splitlines()
    noisy = [line for line in err if "was built on noisy measurements" in line]
    assert len(noisy) == 1, err
    about_model = [line for line in err if line.startswith(f"(nn-Meter) {path}: ")]
    firsts = [line for line in about_model if "(the same warning" not in line]
    tenths = [line for line in about_model if "(the same warning 10 times in this process" in line]
    # Each warning about the model: its first time, then its 10th (50 calls reach no 100th).
    assert firsts and len(tenths) == len(firsts) and len(about_model) == 2 * len(firsts), err
    nn_meter.set_log_level("error")
    try:
        first.predict(str(path))
        assert capfd.readouterr().err == ""
    finally:
        nn_meter.set_log_level("info")
