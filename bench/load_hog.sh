# Sourced by the benches that also measure on a loaded machine. start_hog [CPU] runs a busy loop in a process of
# its own (pinned to CPU if given) until stop_hog; the EXIT trap stops it too, so no run leaves one spinning.
hog=""
start_hog() {
  if [ -n "${1:-}" ]; then taskset -c "$1" bash -c 'while :; do :; done' & else bash -c 'while :; do :; done' & fi
  hog=$!
}
stop_hog() { if [ -n "$hog" ]; then kill "$hog" 2>/dev/null || true; wait "$hog" 2>/dev/null || true; hog=""; fi; }
trap stop_hog EXIT
