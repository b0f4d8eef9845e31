#!/usr/bin/env bash
# A stand-in for `nn-meter build` with --plan-only / --shard K/N / --shards N, following the contract of the
# real flags closely enough to drive examples/slurm/ through Slurm without measuring anything:
#   each plan has FAKE_MEASUREMENTS ids x 2 repeats; shard K of N takes the ids i with i % N == K - 1;
#   a shard's journal is W/predictor_build/shards/<plan>/K-of-N/journal.jsonl, one {"id","repeat"} a line,
#   resumed when started again, locked against a second process (exit 1);
#   --shards N checks every (id, repeat) is there exactly once (else one line naming the shard, exit 1), then
#   either writes the next plan and exits 3 (FAKE_ROUNDS plans in all) or writes the predictor and exits 0.
# FAKE_SLEEP is the time one measurement takes; each measuring process appends "<K> <ANDROID_SERIAL>" to
# W/fake-devices.
set -euo pipefail
[ "${1:-}" = build ] || { echo "fake nn-meter: only 'build'" >&2; exit 2; }
shift
ws="" mode="" arg=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --workspace) ws="$2"; shift 2 ;;
    --backend|--kernels) shift 2 ;;
    --no-ruletest) shift ;;
    --plan-only) mode=plan; shift ;;
    --shard) mode=shard; arg="$2"; shift 2 ;;
    --shards) mode=train; arg="$2"; shift 2 ;;
    *) echo "fake nn-meter: unknown option $1" >&2; exit 2 ;;
  esac
done
shards_dir="$ws/predictor_build/shards"
m="${FAKE_MEASUREMENTS:-8}"
rounds="${FAKE_ROUNDS:-1}"

write_plan() {  # $1: plan number
  mkdir -p "$shards_dir"
  echo "{\"id\": \"p$1\", \"measurements\": $((m * 2))}" >"$shards_dir/plan.json.tmp"
  mv "$shards_dir/plan.json.tmp" "$shards_dir/plan.json"
  echo "Plan p$1: prior samples, $((m * 2)) measurements of $m models; measure it with --shard K/N, then merge with --shards N"
}
plan_id() { sed -n 's/.*"id": "\(p[0-9]*\)".*/\1/p' "$shards_dir/plan.json"; }

case "$mode" in
  plan)
    if [ -f "$shards_dir/plan.json" ]; then p="$(plan_id)"; write_plan "${p#p}"; else write_plan 1; fi
    ;;
  shard)
    if ! [[ "$arg" =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] || [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]; then
      echo "fake nn-meter: --shard K/N with 1 <= K <= N" >&2; exit 2
    fi
    k="${BASH_REMATCH[1]}" n="${BASH_REMATCH[2]}"
    dir="$shards_dir/$(plan_id)/$k-of-$n"
    mkdir -p "$dir"
    exec 9>"$dir/lock"
    flock -n 9 || { echo "shard $k/$n is being measured by another process" >&2; exit 1; }
    echo "$k ${ANDROID_SERIAL:-}" >>"$ws/fake-devices"
    touch "$dir/journal.jsonl"
    for ((i = 0; i < m; i++)); do
      [ $((i % n)) -eq $((k - 1)) ] || continue
      for r in 0 1; do
        grep -qx "{\"id\": \"s$i\", \"repeat\": $r}" "$dir/journal.jsonl" && continue
        sleep "${FAKE_SLEEP:-0.3}"
        echo "{\"id\": \"s$i\", \"repeat\": $r}" >>"$dir/journal.jsonl"
      done
    done
    ;;
  train)
    n="$arg" plan="$(plan_id)"
    for ((k = 1; k <= n; k++)); do
      j="$shards_dir/$plan/$k-of-$n/journal.jsonl"
      [ -f "$j" ] || { echo "shard $k/$n of plan $plan has no journal: measure it (--shard $k/$n)" >&2; exit 1; }
      for ((i = 0; i < m; i++)); do
        [ $((i % n)) -eq $((k - 1)) ] || continue
        for r in 0 1; do
          c="$(grep -cx "{\"id\": \"s$i\", \"repeat\": $r}" "$j" || true)"
          [ "$c" = 1 ] || { echo "shard $k/$n of plan $plan has s$i repeat $r $c times" >&2; exit 1; }
        done
      done
    done
    p="${plan#p}"
    if [ "$p" -lt "$rounds" ]; then write_plan $((p + 1)); exit 3; fi
    mkdir -p "$ws/predictor_build/predictor"
    echo "name: fake" >"$ws/predictor_build/predictor/meta.yaml"
    ;;
  *) echo "fake nn-meter: give --plan-only, --shard or --shards" >&2; exit 2 ;;
esac
