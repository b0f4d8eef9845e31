#!/usr/bin/env bash
# `cmake --install` the build tree into a temporary prefix, then build and run a downstream project against
# it with find_package(nnmeter), and compile a program through pkg-config: the library is installable.
set -euo pipefail
build="$1" project="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
for f in bin/nn-meter share/man/man1/nn-meter.1 share/bash-completion/completions/nn-meter include/nnmeter/prediction.h include/nnmeter/plugin.h lib/cmake/nnmeter/nnmeterConfig.cmake \
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
grep -qF "list\\-backends" "$tmp/prefix/share/man/man1/nn-meter.1" || { echo "FAIL: the man page lacks the options"; exit 1; }
# The installed CLI runs from its own prefix (RPATH), not from the build tree.
"$tmp/prefix/bin/nn-meter" --version | grep -q "nn-meter" || { echo "FAIL: installed nn-meter does not run"; exit 1; }
cmake -S "$project" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/build" -j 2 >/dev/null
[ -f "$tmp/build/downstream_plugin.so" ] || { echo "FAIL: nnmeter_add_plugin built nothing"; exit 1; }
mkdir -p "$tmp/run"
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/build/downstream" "$tmp/run" | tee "$tmp/out.txt"
grep -q "^predicted .* ms for 1 kernels" "$tmp/out.txt" || { echo "FAIL: unexpected output"; exit 1; }
# pkg-config: the same library through the .pc file.
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" c++ -o "$tmp/pc" "$project/main.cpp" \
  $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs nnmeter)
LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/pc" "$tmp/run" | grep -q "^predicted" || { echo "FAIL: pkg-config build"; exit 1; }
echo "ok"
