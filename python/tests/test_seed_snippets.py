"""Every Python snippet of the builder documentation (seed 001) runs as written against a small onednn_cpu
workspace: the placeholders become the test's workspace, `tflite_cpu` becomes `onednn_cpu` (the device
backend of the seeds is not on this machine), and the end-to-end demo's sample counts shrink."""
import json
import os

import numpy as np
import pytest

from conftest import make_workspace
from seed001_snippets import SNIPPETS

# Snippet indices, in document order.
INIT, SAMPLE_AND_PROFILE, DECOMPOSED, BY_DATA, INITIAL, ADAPTIVE, KERNEL_DATA_DEF, DEMO, ALL_KERNELS, \
    KERNEL_DATA_DEF2, BY_DATA_CALL, ADAPTIVE_CALL, TO_CSV, KERAS_KERNEL, SAMPLER, PARSER, CUSTOM_KERNEL_BUILD = range(17)


def adapt(snippet, ws, csv):
    text = snippet.replace("\u00a0", " ")  # the document's non-breaking spaces are not Python
    for placeholder in ("path/to/workspace/folder", "/path/to/workspace/", "/data1/jiahang/working/release2test/"):
        text = text.replace(f'"{placeholder}"', repr(str(ws)))
    text = text.replace('"tflite_cpu"', '"onednn_cpu"')
    text = text.replace('"path/to/csv/test.csv"', repr(str(csv)))
    # The end-to-end demo at the size of a test: fewer samples and iterations, and every held-out point
    # counts as a large error, so that both fine-grained rounds (and their files) really happen.
    text = text.replace("init_sample_num=1000, finegrained_sample_num=10, iteration=5, error_threshold = 0.1",
                        "init_sample_num=12, finegrained_sample_num=2, iteration=3, error_threshold = 0.0")
    return text


def test_every_builder_snippet_runs_as_written(tmp_path, home, capsys):
    ws = make_workspace(tmp_path / "ws", home,
                        "  conv-bn-relu:\n    INIT_SAMPLE_NUM: 10\n    FINEGRAINED_SAMPLE_NUM: 2\n    ITERATION: 1\n"
                        "    ERROR_THRESHOLD: 0.1\n")
    csv = tmp_path / "csv" / "test.csv"
    results = ws / "predictor_build" / "results"
    ns = {}

    def run(index):
        exec(compile(adapt(SNIPPETS[index], ws, csv), f"<seed 001 snippet {index}>", "exec"), ns)

    run(INIT)
    from nn_meter.builder import builder_config
    assert builder_config.get("KERNELS", "predbuild")["conv-bn-relu"]["INIT_SAMPLE_NUM"] == 10

    run(SAMPLE_AND_PROFILE)
    first = ns["kernel_data"]
    assert 1 <= len(first) <= 10
    for entry in first.values():
        assert " +- " in entry["latency"] and len(entry["repeats_ms"]) == 2
        assert os.path.exists(entry["model"])
    assert set(json.loads((results / "conv-bn-relu_test.json").read_text())["conv-bn-relu"]) == set(first)

    run(DECOMPOSED)
    test_configs = json.loads((results / "conv-bn-relu_test.json").read_text())["conv-bn-relu"]
    assert len(test_configs) > len(first), "generate_config_sample extends the mark's file"
    converted = ns["models"]["conv-bn-relu"]
    assert set(converted) == set(test_configs)
    assert all(os.path.exists(f) for e in converted.values() for f in e["converted_model"])
    profiled = json.loads((results / "profiled_conv-bn-relu.json").read_text())["conv-bn-relu"]
    assert set(test_configs) <= set(profiled)
    # The samples of the first snippet were not measured again: two repeats each in the journal.
    journal = [json.loads(line) for line in (results / "profile_journal_conv-bn-relu.jsonl").read_text().splitlines()]
    for sample_id in first:
        assert sum(1 for r in journal if r.get("id") == sample_id) == 2

    run(INITIAL)
    predictor, data = ns["predictor"], ns["data"]
    assert len(data) >= 8 and (results / "conv-bn-relu_prior.json").exists()
    rows = np.array([[28, 16, 32, 3, 1, 1.0, 1.0]])
    assert predictor.predict(rows[:, :len(predictor.feature_names)]).shape == (1,)

    run(BY_DATA)
    assert 0.0 <= ns["acc10"] <= 1.0 and isinstance(ns["error_configs"], list)
    assert (results / "predictors" / "conv-bn-relu_prior.json").exists()
    assert "Iteration 0: acc10" in capsys.readouterr().out

    run(ADAPTIVE)
    assert len(ns["data"]) >= len(data)

    run(DEMO)
    assert (results / "conv-bn-relu_finegrained1.json").exists()
    assert (results / "conv-bn-relu_finegrained2.json").exists()
    demo_data = ns["data"]

    for index in (KERNEL_DATA_DEF, KERNEL_DATA_DEF2, BY_DATA_CALL, ADAPTIVE_CALL):
        run(index)
    run(TO_CSV)
    features, labels = ns["data"]
    assert features.shape[0] == labels.shape[0] >= len(demo_data)
    header = csv.read_text().splitlines()[0].split(",")
    assert header[:6] == ["model_path", "HW", "CIN", "COUT", "KERNEL_SIZE", "STRIDES"] and header[-1] == "latency"

    run(ALL_KERNELS)
    assert (ws / "predictor_build" / "predictor" / "conv-bn-relu.json").exists()
    assert (ws / "predictor_build" / "predictor" / "fusion_rules.json").exists()

    # The customized-kernel classes define and work on the package's base classes.
    run(SAMPLER)
    run(PARSER)
    parser = ns["MyParser"]("mykernel")
    config = {"HW": 28, "CIN": 16, "COUT": 32, "KERNEL_SIZE": 3, "STRIDES": 1}
    assert parser.get_config_by_feature(parser.get_feature_by_config(config)) == config


def test_the_keras_kernel_snippet_needs_tensorflow():
    """The one snippet that cannot run here: it builds its kernel with TensorFlow's Keras, which Debian does not
    package; a kernel written for nn-meter returns ONNX or a torch module instead (nn_modules.BaseBlock)."""
    assert "import tensorflow.keras" in SNIPPETS[KERAS_KERNEL]
    with pytest.raises(ImportError):
        exec(SNIPPETS[KERAS_KERNEL], {})
