#!/usr/bin/env python3
"""Does the composition term need a coefficient per kind of kernel, once enough calibration networks pin it? On an
`evaluate --calibrate-on` run's results.json (calibration_models and models, with kernels_ms_by_type), fits four
forms on the calibration networks, fc always unscaled (a batch-1 fc streams its weights alone as in a network):

  footprint          ln((measured - fc) / (kernels - fc)) = c0 + c1 ln footprint   (the library's form)
  + shares           the same + c2 depthwise share + c3 share of the other kernels (of the non-fc kernel time)
  kernel types       measured - fc = a_conv conv + a_dw depthwise + a_rest other    (relative least squares)
  types + footprint  measured - fc = a_conv conv + a_dw depthwise + a_rest other + b (kernels - fc) ln footprint

and scores each three ways: on the calibration networks with each family held out (the term fitted on the other
families, as `nn-meter calibrate` judges its forms), and on the evaluated networks, next to their ceiling.
Calibration subsets: CAL_PATTERN (a regular expression on the network's name) keeps the calibration networks it
matches, e.g. to compare 23 networks with 72 on the same measurements.
Usage: [CAL_PATTERN=RE] bench/composition_kernel_types.py RESULTS_JSON [RESULTS_JSON ...]
"""
import json
import math
import os
import re
import sys

from composition_depthwise_share import lstsq


def parts(m):
    by = m["kernels_ms_by_type"]
    conv = sum(v for k, v in by.items() if k.startswith("conv"))
    dw = sum(v for k, v in by.items() if k.startswith("dwconv"))
    fc = by.get("fc", 0.0)
    rest = m["kernels_ms"] - conv - dw - fc
    return conv, dw, rest, fc


class LogForm:
    """ln((measured - fc) / (kernels - fc)) linear in the features; footprint clamped to the fitted range."""

    def __init__(self, shares):
        self.shares = shares

    def features(self, m, clamp=None):
        conv, dw, rest, fc = parts(m)
        lf = math.log(m["footprint_mb"])
        if clamp:
            lf = min(max(lf, clamp[0]), clamp[1])
        f = [1.0, lf]
        if self.shares:
            scaled = conv + dw + rest
            f += [dw / scaled, rest / scaled]
        return f

    def fit(self, cal):
        lfs = [math.log(m["footprint_mb"]) for m in cal]
        self.clamp = (min(lfs), max(lfs))
        x = [self.features(m) for m in cal]
        y = [math.log((m["measured_ms"] - parts(m)[3]) / (m["kernels_ms"] - parts(m)[3])) for m in cal]
        self.coef = lstsq(x, y)
        return self

    def predict(self, m):
        fc = parts(m)[3]
        f = self.features(m, self.clamp)
        return fc + (m["kernels_ms"] - fc) * math.exp(sum(c * v for c, v in zip(self.coef, f)))


class LinearForm:
    """measured - fc linear in the kernel groups' times (and their sum × ln footprint); relative least squares."""

    def __init__(self, footprint):
        self.footprint = footprint

    def features(self, m, clamp=None):
        conv, dw, rest, fc = parts(m)
        f = [conv, dw, rest]
        if self.footprint:
            lf = math.log(m["footprint_mb"])
            if clamp:
                lf = min(max(lf, clamp[0]), clamp[1])
            f.append((conv + dw + rest) * lf)
        return f

    def fit(self, cal):
        lfs = [math.log(m["footprint_mb"]) for m in cal]
        self.clamp = (min(lfs), max(lfs))
        x = [self.features(m) for m in cal]
        y = [m["measured_ms"] - parts(m)[3] for m in cal]
        # Relative errors: each network weighs 1 / measured², so large networks do not decide the fit alone.
        self.coef = lstsq(x, y, [1.0 / (m["measured_ms"] ** 2) for m in cal])
        return self

    def predict(self, m):
        return parts(m)[3] + sum(c * v for c, v in zip(self.coef, self.features(m, self.clamp)))


FORMS = {
    "footprint": lambda: LogForm(False),
    "+ shares": lambda: LogForm(True),
    "kernel types": lambda: LinearForm(False),
    "types + footprint": lambda: LinearForm(True),
}


def score(errors):
    n = len(errors)
    return "±5 %% %5.1f  ±10 %% %5.1f  RMSPE %4.1f  mean %+5.1f" % (
        100 * sum(abs(e) <= 0.05 for e in errors) / n, 100 * sum(abs(e) <= 0.10 for e in errors) / n,
        100 * math.sqrt(sum(e * e for e in errors) / n), 100 * sum(errors) / n)


def usable(models):
    return [m for m in models if m.get("measured_ms") and m.get("kernels_ms") and m.get("footprint_mb")
            and m.get("kernels_ms_by_type")]


def ceiling(models):
    d = [m["split_half_deviation"] for m in models if m.get("split_half_deviation") is not None]
    return "±5 %% %5.1f  ±10 %% %5.1f" % (100 * sum(x <= 0.05 for x in d) / len(d), 100 * sum(x <= 0.10 for x in d) / len(d))


def main(paths):
    if not paths:
        sys.exit(__doc__)
    pattern = re.compile(os.environ.get("CAL_PATTERN", ""))
    for path in paths:
        d = json.load(open(path))
        cal = [m for m in usable(d["calibration_models"]) if pattern.search(m["model"])]
        ev = usable(d["models"])
        families = sorted({m["family"] for m in cal})
        print("%s: %d calibration networks (%d families), %d evaluated" % (path, len(cal), len(families), len(ev)))
        print("  %-18s  calibration, each family held out          | evaluated" % "")
        print("  %-18s  %-43s | %s" % ("ceiling", ceiling(cal), ceiling(ev)))
        print("  %-18s  %-43s | %s" % ("plain sum", score([m["kernels_ms"] / m["measured_ms"] - 1 for m in cal]),
                                       score([m["kernels_ms"] / m["measured_ms"] - 1 for m in ev])))
        for name, make in FORMS.items():
            held = []
            for fam in families:
                form = make().fit([m for m in cal if m["family"] != fam])
                held += [form.predict(m) / m["measured_ms"] - 1 for m in cal if m["family"] == fam]
            form = make().fit(cal)
            errors = [form.predict(m) / m["measured_ms"] - 1 for m in ev]
            print("  %-18s  %-43s | %s   coef %s" % (name, score(held), score(errors),
                                                     " ".join("%.3f" % c for c in form.coef)))


if __name__ == "__main__":
    main(sys.argv[1:])
