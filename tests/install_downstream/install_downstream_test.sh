#!/usr/bin/env bash
# `cmake --install` the build tree into a temporary prefix, then build and run a downstream project against
# it with find_package(nnmeter), and compile a program through pkg-config: the library is installable.
set -euo pipefail
build="$1" project="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in bin/nn-meter libexec/nnmeter/nn-meter-worker share/man/man1/nn-meter.1 share/bash-completion/completions/nn-meter include/nnmeter/prediction.h include/nnmeter/plugin.h include/nnmeter/plugin_abi.h lib/cmake/nnmeter/nnmeterConfig.cmake \
         lib/cmake/nnmeter/nnmeterConfigVersion.cmake lib/pkgconfig/nnmeter.pc; do
  [ -e "$tmp/prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
soname=$(objdump -p "$tmp"/prefix/lib/libnnmeter.so | awk '/SONAME/ {print $2}')
[ "$soname" = "libnnmeter.so.0.1" ] || { echo "FAIL: SONAME is '$soname'"; exit 1; }
# Public headers name no private dependency.
if grep -rlE '#include <(onnx|dnnl|oneapi|xgboost|yaml-cpp|spdlog|CLI)' "$tmp/prefix/include/nnmeter"; then
  echo "FAIL: a public header includes a private dependency"; exit 1
fi
if grep -rl 'onnx::' "$tmp/prefix/include/nnmeter"; then echo "FAIL: a public header names onnx::"; exit 1; fi
# The plugin contract is C: a plugin may be written in it; the C++ SDK says so when a C file includes it.
cc -x c -std=c99 -pedantic -Werror -fsyntax-only "$tmp/prefix/include/nnmeter/plugin_abi.h" ||
  { echo "FAIL: plugin_abi.h does not compile as C"; exit 1; }
if cc -x c -std=c99 -fsyntax-only "$tmp/prefix/include/nnmeter/plugin.h" 2>"$tmp/sdk.err" ||
   ! grep -q "plugin_abi.h" "$tmp/sdk.err"; then
  echo "FAIL: plugin.h included from C does not point to plugin_abi.h"; exit 1
fi
grep -qF "list\\-backends" "$tmp/prefix/share/man/man1/nn-meter.1" || { echo "FAIL: the man page lacks the options"; exit 1; }
# The installed CLI runs from its own prefix (RPATH), not from the build tree.
"$tmp/prefix/bin/nn-meter" --version | grep -q "nn-meter" || { echo "FAIL: installed nn-meter does not run"; exit 1; }
# The worker the installed library starts runs from its own folder too.
env -u LD_LIBRARY_PATH "$tmp/prefix/libexec/nnmeter/nn-meter-worker" --help | grep -q "profile-worker" ||
  { echo "FAIL: the installed nn-meter-worker does not run"; exit 1; }
cmake -S "$project" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" -j 2 >/dev/null
[ -f "$tmp/build/downstream_plugin.so" ] || { echo "FAIL: nnmeter_add_plugin built nothing"; exit 1; }
nm -D --defined-only "$tmp/build/downstream_plugin.so" | grep -qw nnmeter_plugin_info ||
  { echo "FAIL: the plugin does not export nnmeter_plugin_info"; exit 1; }
mkdir -p "$tmp/run"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/build/downstream" "$tmp/run" | tee "$tmp/out.txt"
grep -q "^predicted .* ms for 1 kernels" "$tmp/out.txt" || { echo "FAIL: unexpected output"; exit 1; }
# pkg-config: the same library through the .pc file.
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" c++ -o "$tmp/pc" "$project/main.cpp" \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs nnmeter)
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/pc" "$tmp/run" | grep -q "^predicted" || { echo "FAIL: pkg-config build"; exit 1; }
# The Python package: installed into the prefix's dist-packages, importable without the build tree, its
# module finding the installed libnnmeter (RPATH) and profiling through the installed nn-meter (no
# NN_METER_WORKER). Skipped for a sanitizer build (its module needs the ASan runtime preloaded).
module=$(find "$tmp/prefix" -name '_nnmeter*.so' | head -n 1)
if [ -n "$module" ] && ! objdump -p "$module" | grep -q 'NEEDED.*libasan'; then
  NN_METER_HOME="$tmp/home" "$tmp/prefix/bin/nn-meter" create --workspace "$tmp/ws" --backend onednn_cpu >/dev/null
  printf 'NUM_RUNS: 3\nNUM_ROUNDS: 1\nMIN_TIME_MS: 1\nREPEATS: 1\n' > "$tmp/ws/configs/backend_config.yaml"
  (cd "$tmp" && env -u NN_METER_WORKER -u LD_LIBRARY_PATH NN_METER_HOME="$tmp/home" \
     PYTHONPATH="$(dirname "$(dirname "$module")")" /usr/bin/python3 -c "
import nn_meter, sys
from nn_meter.builder import builder_config, sample_and_profile_kernel_data
import nn_meter._nnmeter as native
assert native.__file__.startswith('$tmp/prefix'), native.__file__
builder_config.init('$tmp/ws')
data = sample_and_profile_kernel_data('relu', 2, 'onednn_cpu', seed=3)
assert len(data) == 2 and all(' +- ' in e['latency'] for e in data.values()), data
print('python ok')
") | grep -q "^python ok" || { echo "FAIL: the installed Python package"; exit 1; }
  # A backend written in Python registers through the installed CLI, whose plugin host is the installed one.
  mkdir -p "$tmp/pyplugin"
  printf 'from nn_meter.builder.backends import BaseBackend\nclass B(BaseBackend):\n    def test_connection(self):\n        print("hello from python")\n' \
    > "$tmp/pyplugin/backend.py"
  printf 'builtinName: py_backend\npackageLocation: %s\nclassModule: backend\nclassName: B\n' "$tmp/pyplugin" > "$tmp/pyplugin/meta.yaml"
  env -u NN_METER_PLUGIN_HOST NN_METER_HOME="$tmp/home" "$tmp/prefix/bin/nn-meter" register --backend "$tmp/pyplugin/meta.yaml" \
    | grep -q "Successfully register backend py_backend" || { echo "FAIL: a Python plugin with the installed nn-meter"; exit 1; }
fi
echo "ok"
