"""Helpers shared by the predictor and builder sides."""
import json
import os
import sys
import tempfile

from ._native import native as _nnmeter


def registry_home():
    """The registry folder nn-meter uses: $NN_METER_HOME, else ~/.nn_meter (read at every call, as the CLI does)."""
    return os.environ.get("NN_METER_HOME", "")


def progress_wanted():
    """Progress lines only on a terminal, as the CLI does."""
    return sys.stderr.isatty()


def loads(text):
    return json.loads(text)


def dumps(obj):
    try:
        return json.dumps(obj)
    except TypeError as e:
        raise TypeError(f"cannot pass {type(obj).__name__} to nn-meter: {e}") from None


def write_bytes_atomic(path, data):
    """Writes `data` next to `path` and renames it into place, so a reader never sees half a file."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text_atomic(path, text):
    write_bytes_atomic(path, text.encode("utf-8"))


def write_json_atomic(path, obj):
    write_text_atomic(path, json.dumps(obj, indent=4))


def latency_metrics(y_pred, y_true):
    """nn-Meter's metrics of predictions against measurements: (rmse, rmspe, rmse / mean, acc5, acc10, acc15),
    rmspe in percent, the accuracies as fractions within 5 / 10 / 15 % of the measurement."""
    m = json.loads(_nnmeter.latency_metrics([float(v) for v in y_pred], [float(v) for v in y_true]))
    return m["rmse"], m["rmspe"], m["rmse_over_mean"], m["acc5"], m["acc10"], m["acc15"]

