"""`nn-meter` as pip installs it: this console script runs the nn-meter program, which the wheel puts in
<prefix>/libexec/ (python/build_backend/nnmeter_wheel.py), with the same arguments. It first points Python
plugins at this environment: its interpreter (libnnmeter would pick /usr/bin/python3, which sees none of a
virtual environment's packages) and this package's plugin host (libnnmeter looks for it in dist-packages
folders only)."""
import os
import sys

from ._native import point_python_plugins_here


def main():
    point_python_plugins_here()
    # pip installs scripts into <prefix>/bin and data files into <prefix>.
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(sys.argv[0])))
    program = os.path.join(prefix, "libexec", "nn-meter")
    try:
        os.execv(program, ["nn-meter", *sys.argv[1:]])
    except OSError as e:
        sys.exit(f"(nn-Meter) error: cannot run {program}: {e.strerror} (reinstall the nn-meter wheel)")
