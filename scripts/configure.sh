#!/usr/bin/env bash
# Configures a build tree: Ninja for a fresh one when it is installed (scripts/install-deps.sh installs it), else
# whatever generator the tree was made with. Ninja keeps both cores busy across targets, where make waits at each
# target's link (bench/RESULTS-architecture.md, "CI time").
# Usage: scripts/configure.sh BUILD_DIR [cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="$1"
shift
generator=()
if [ ! -f "$build_dir/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S . -B "$build_dir" "${generator[@]}" "$@"
