#!/usr/bin/env bash
# `pip install` of the checkout into a fresh virtual environment (no system site-packages: nn_meter needs
# nothing beyond the wheel), reusing this build tree through the build-dir config setting so nothing is
# compiled. Then the package, `nn-meter`, its worker and its plugins run from the environment alone, and
# `pip uninstall` takes every installed file away again.
# Usage: pip_install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src="$1" build="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# run COMMAND...: its output goes to $tmp/out, shown when it fails.
run() {
  local rc=0
  "$@" > "$tmp/out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { cat "$tmp/out"; fail "$* exited with $rc"; }
}
# expect PATTERN COMMAND...: run, and a line of the output must match PATTERN (ERE).
expect() {
  local pattern="$1"; shift
  run "$@"
  grep -qE -- "$pattern" "$tmp/out" || { cat "$tmp/out"; fail "$* printed no line matching '$pattern'"; }
}
cd "$tmp"  # nothing may come from the source or build tree
unset PYTHONPATH LD_LIBRARY_PATH NN_METER_WORKER NN_METER_PLUGIN_HOST NN_METER_PYTHON
export NN_METER_HOME="$tmp/home" NN_METER_MACHINE_CHECK=off
venv="$tmp/venv"
/usr/bin/python3 -m venv "$venv" || fail "no venv: apt-get install python3-venv"
py="$venv/bin/python" cli="$venv/bin/nn-meter"
run "$py" -m pip install --no-index --no-cache-dir --disable-pip-version-check -q \
  --config-settings=build-dir="$build" "$src"
site="$("$py" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')"
installed=(bin/nn-meter libexec/nn-meter libexec/nnmeter/nn-meter-worker lib/libnnmeter.so.0.1
           "${site#"$venv"/}/nn_meter/_plugin_host.py")
for f in "${installed[@]}"; do [ -e "$venv/$f" ] || fail "$f not installed"; done

# The package and its module come from the environment, and the console script runs the same build.
expect "^version [0-9.]+$" "$py" -c "
import sys, nn_meter, nn_meter._nnmeter as native
for m in (nn_meter, native):
    assert m.__file__.startswith(sys.prefix + '/'), m.__file__
assert 'main-job' in [s['name'] for s in nn_meter.networks.list_sets()]
print('version', nn_meter.__version__)"
version="$(sed -n 's/^version //p' "$tmp/out")"
expect "^nn-meter $version$" "$cli" --version
expect "\[Kernel\] conv-bn-relu$" "$cli" --list-kernels
expect "main-job +4 networks" "$cli" networks list

# Profiling starts the installed nn-meter-worker, which the installed library finds beside itself.
run "$cli" create --workspace "$tmp/ws" --backend onednn_cpu
run "$cli" sample --workspace "$tmp/ws" --kernel relu --num 1 --seed 1
model=("$tmp"/ws/predictor_build/kernels/relu_*.onnx)
expect "latency of .*: [0-9.]+ \+- " "$cli" backend onednn_cpu profile --onnx-path "${model[0]}" --repeats 1 \
  --num-rounds 1 --num-runs 3 --warmup-runs 1 --min-time-ms 1

# A C++ backend plugin registers (its check runs in the worker); so does a Python one, whose plugin host is
# this package's, run by this environment's interpreter.
mkdir "$tmp/cpp" "$tmp/py"
cp "$build/examples/plugins/custom_backend/backend.so" "$src"/examples/plugins/custom_backend/{config.yaml,meta_backend.yaml} \
   "$tmp/cpp/"
expect "Successfully register backend my_backend" "$cli" register --backend "$tmp/cpp/meta_backend.yaml"
printf 'import sys\nfrom nn_meter.builder.backends import BaseBackend\nopen("%s", "w").write(sys.prefix)\nclass B(BaseBackend):\n    pass\n' \
  "$tmp/py/host-prefix" > "$tmp/py/backend.py"
printf 'builtinName: py_backend\npackageLocation: %s\nclassModule: backend\nclassName: B\n' "$tmp/py" > "$tmp/py/meta.yaml"
expect "Successfully register backend py_backend" "$cli" register --backend "$tmp/py/meta.yaml"
[ "$(cat "$tmp/py/host-prefix")" = "$venv" ] || fail "the Python plugin ran in $(cat "$tmp/py/host-prefix"), not in $venv"

run "$py" -m pip uninstall -y -q --disable-pip-version-check nn-meter
for f in "${installed[@]}"; do [ ! -e "$venv/$f" ] || fail "$f left after pip uninstall"; done
[ ! -e "$site/nn_meter" ] || fail "nn_meter/ left after pip uninstall"
if "$py" -c "import nn_meter" 2> /dev/null; then fail "nn_meter imports after pip uninstall"; fi
echo "ok"
