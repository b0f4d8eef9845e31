#!/usr/bin/env bash
# The installed bash completion completes subcommands, flags and registered names from nn-meter itself.
set -u
completion="$1" bindir="$2"
export PATH="$bindir:$PATH" NN_METER_HOME="$(mktemp -d)"
trap 'rm -rf "$NN_METER_HOME"' EXIT
source "$completion"
fail() { echo "FAIL: $*"; exit 1; }
complete_line() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _nn_meter; echo " ${COMPREPLY[*]} "; }
out=$(complete_line nn-meter ev);                       [[ "$out" == *" evaluate "* ]] || fail "subcommand: '$out'"
out=$(complete_line nn-meter "");                       [[ "$out" == *" predict "* && "$out" == *" build "* ]] || fail "all subcommands: '$out'"
out=$(complete_line nn-meter predict --pre);            [[ "$out" == *" --predictor "* && "$out" == *" --predictor-version "* ]] || fail "flags: '$out'"
out=$(complete_line nn-meter benchmark --backend one);  [[ "$out" == *" onednn_cpu "* ]] || fail "backend names: '$out'"
out=$(complete_line nn-meter backend "");               [[ "$out" == *" onednn_cpu "* ]] || fail "backend tools: '$out'"
out=$(complete_line nn-meter backend onednn_cpu "");    [[ "$out" == *" profile "* ]] || fail "backend subcommands: '$out'"
out=$(complete_line nn-meter create --preset "");      [[ "$out" == *" quick "* && "$out" == *" accurate "* ]] || fail "preset names: '$out'"
out=$(complete_line nn-meter sample --kernel dwconv);   [[ "$out" == *" dwconv-bn-relu "* ]] || fail "kernel names: '$out'"
echo "ok"
