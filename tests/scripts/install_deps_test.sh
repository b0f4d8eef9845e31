#!/usr/bin/env bash
# scripts/install-deps.sh --if-missing: silent and successful when everything is installed (the state the
# suite runs in), names exactly the missing packages otherwise, refuses unknown options with exit 2.
set -u
script="$1"
fail() { echo "FAIL: $*"; exit 1; }
out=$(bash "$script" --if-missing 2>&1) || fail "--if-missing failed on a machine that has everything: $out"
[ -z "$out" ] || fail "--if-missing printed '$out' although nothing is missing"
out=$(NNMETER_EXTRA_PACKAGES="nnmeter-no-such-package" bash "$script" --if-missing --dry-run 2>&1) || fail "dry run failed: $out"
[ "$out" = "would install: nnmeter-no-such-package" ] || fail "dry run printed '$out'"
out=$(bash "$script" --dry-run 2>&1)
case "$out" in "would install: cmake "*libonnx-dev*) ;; *) fail "plain dry run printed '$out'" ;; esac
bash "$script" --no-such-option >/dev/null 2>&1
[ $? = 2 ] || fail "an unknown option must exit 2"
echo "ok"
