#!/usr/bin/env bash
# A stand-in for `adb` and a recorded Android device, for the tflite backends' tests. The tests copy it
# as `adb` into a folder first on PATH (or name it in ADB). Every invocation appends its argv to
# $FAKE_ADB_LOG, one line, the words joined by '|'. The device answers as a Pixel 4 on Android 12 whose
# benchmark_model prints $FAKE_ADB_OUTPUT. Faults on demand: FAKE_ADB_DEVICE=none (nothing attached),
# FAKE_ADB_BINARY=missing (no benchmark_model), FAKE_ADB_SLEEP=S (the benchmark hangs S seconds).
log="${FAKE_ADB_LOG:?FAKE_ADB_LOG must name the argv log}"
(IFS='|'; printf '%s\n' "$*") >> "$log"
if [ "${1:-}" = version ]; then
  echo "Android Debug Bridge version 1.0.41"
  echo "Version 34.0.4-debian"
  exit 0
fi
serial=""
if [ "${1:-}" = -s ]; then serial="$2"; shift 2; fi
if [ "${FAKE_ADB_DEVICE:-ok}" = none ]; then echo "error: no devices/emulators found" >&2; exit 1; fi
if [ -n "$serial" ] && [ "$serial" != "${FAKE_ADB_SERIAL:-emulator-5554}" ]; then
  echo "error: device '$serial' not found" >&2; exit 1
fi
cmd="${1:-}"; shift
case "$cmd" in
  push)
    [ -f "$1" ] || { echo "adb: error: cannot stat '$1': No such file or directory" >&2; exit 1; }
    echo "$1: 1 file pushed, 0 skipped. 21.3 MB/s ($(stat -c %s "$1") bytes in 0.001s)"
    exit 0 ;;
  shell)
    case "${1:-}" in
      getprop)
        case "${2:-}" in
          ro.product.model) echo "Pixel 4" ;;
          ro.build.version.release) echo "12" ;;
          *) echo ;;
        esac
        exit 0 ;;
      rm) exit 0 ;;
      ls)
        if [ "${FAKE_ADB_BINARY:-ok}" = missing ]; then echo "ls: $2: No such file or directory"; exit 1; fi
        echo "$2"; exit 0 ;;
      *)
        if [ "${FAKE_ADB_BINARY:-ok}" = missing ]; then echo "/system/bin/sh: $1: inaccessible or not found"; exit 127; fi
        if [ -n "${FAKE_ADB_SLEEP:-}" ]; then sleep "$FAKE_ADB_SLEEP"; fi
        cat "${FAKE_ADB_OUTPUT:?FAKE_ADB_OUTPUT must name the recorded benchmark_model output}"
        exit 0 ;;
    esac ;;
esac
echo "adb: unknown command $cmd" >&2
exit 1
