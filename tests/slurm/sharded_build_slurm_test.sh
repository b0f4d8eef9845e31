#!/usr/bin/env bash
# The sharded build through Slurm, as examples/slurm/ runs it, on a one-node cluster started here
# (scripts/slurm-local.sh) with the real nn-meter on onednn_cpu:
#   - a build sharded over a 4-task array job (submit.sh) samples what a single-host build of the same configs
#     does (the same prior sample IDs and configs); its first train job, reaching a fine-grained round, submits
#     the next array and train job itself (train.sbatch on exit 3), and the second writes the predictor;
#   - a task cancelled after its first measurement and requeued resumes its journal: across the shards'
#     journals every (kernel, id, repeat) of the plan is there exactly once;
#   - the train step (--shards 4) refuses, naming the shard, while one shard's journal folder is missing.
# Usage: sharded_build_slurm_test.sh BINARY_DIR      Exit 77 (skipped) when Slurm cannot run here.
set -euo pipefail
bin="$1/nn-meter"
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

[ -x "$bin" ] || fail "no nn-meter in $1"
"$bin" build --help | grep -q -- "--shards" || fail "nn-meter build has no --shards option"
[ "$(id -u)" -eq 0 ] || skip "starting a local Slurm needs root"
for p in munged slurmctld slurmd sbatch scontrol python3; do
  command -v "$p" >/dev/null || skip "$p is not installed (scripts/install-deps.sh)"
done

tmp="$(mktemp -d)"
state="$tmp/slurm"
cleanup() {
  "$src/scripts/slurm-local.sh" stop "$state" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# Ports of our own, so that a Slurm already running on this machine neither answers us nor is disturbed.
port=16817
while ss -Hltn "sport = :$port or sport = :$((port + 1))" | grep -q .; do
  port=$((port + 2))
  [ "$port" -lt 16900 ] || skip "no two free ports in 16817-16900 for slurmctld and slurmd"
done
if ! out="$(NNMETER_SLURM_PORT="$port" "$src/scripts/slurm-local.sh" start "$state" 2>&1)"; then
  skip "Slurm cannot start here: $(tail -n 1 <<<"$out")"
fi
export SLURM_CONF="$state/slurm.conf"
export NN_METER_HOME="$tmp/home"
cd "$tmp"

# Two workspaces of the same configs: two kernels of 8 prior samples, two repeats each; relu's threshold no
# predictor meets, so that the build goes on to a fine-grained round (a second phase). A repeat lasts at least
# 2 x 150 ms, so that a shard's task is still measuring when it is cancelled.
make_workspace() {
  "$bin" create --workspace "$1" --backend onednn_cpu >/dev/null
  printf '%s\n' 'DETAIL: TRUE' 'IMPLEMENT: onnx' 'BATCH_SIZE: 1' 'KERNELS:' \
    '  relu: {INIT_SAMPLE_NUM: 8, FINEGRAINED_SAMPLE_NUM: 1, ITERATION: 2, ERROR_THRESHOLD: 0.000001}' \
    '  add: {INIT_SAMPLE_NUM: 8, FINEGRAINED_SAMPLE_NUM: 2, ITERATION: 1, ERROR_THRESHOLD: 0.1}' \
    >"$1/configs/predictorbuild_config.yaml"
  printf '%s\n' 'NUM_THREADS: 1' 'WARMUP_RUNS: 1' 'NUM_RUNS: 3' 'NUM_ROUNDS: 2' 'MIN_TIME_MS: 150' 'MAX_RETRIES: 0' \
    'REPEATS: 2' >"$1/configs/backend_config.yaml"
}
make_workspace "$tmp/single"
make_workspace "$tmp/sharded"

"$bin" build --workspace "$tmp/single" --backend onednn_cpu --no-ruletest >"$tmp/single.log" 2>&1 ||
  fail "the single-host build failed: $(tail -n 3 "$tmp/single.log")"

job_state() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -n 1 | cut -d= -f2; }
# Waits (at most $2 s) until job $1 is in one of the states $3 (a regex); prints the state.
wait_state() {
  local job="$1" limit="$2" want="$3" s="" i
  for ((i = 0; i < limit * 5; i++)); do
    s="$(job_state "$job")"
    if [[ "$s" =~ ^($want)$ ]]; then echo "$s"; return 0; fi
    sleep 0.2
  done
  echo "${s:-unknown}"
  return 1
}

# The train job is submitted held, so that the shards' journals can be checked before they are merged.
logs="$tmp/logs"
NNMETER_BIN="$bin" NNMETER_SLURM_LOGS="$logs" NNMETER_TRAIN_SBATCH_ARGS="--hold" \
  "$src/examples/slurm/submit.sh" "$tmp/sharded" onednn_cpu 4 --no-ruletest >"$tmp/submit.log" 2>&1 ||
  fail "submit.sh failed: $(tail -n 2 "$tmp/submit.log")"
measurements="$(sed -n 's/.*Plan [0-9a-f]*: [^,]*, \([0-9]*\) measurements.*/\1/p' "$tmp/submit.log")"
plan="$(sed -n 's/.*Plan \([0-9a-f]*\): .*/\1/p' "$tmp/submit.log")"
[ -n "$measurements" ] && [ -n "$plan" ] || fail "submit.sh printed no Plan line: $(cat "$tmp/submit.log")"
read -r array train <"$logs/jobs"
grep -q "^Submitted measure array $array (tasks 1-4), train job $train$" "$tmp/submit.log" ||
  fail "unexpected submit.sh output: $(tail -n 1 "$tmp/submit.log")"
shards="$tmp/sharded/predictor_build/shards"

# Task 1 is cancelled once its journal holds a first measurement, then requeued.
first_record=0
for ((i = 0; i < 600; i++)); do
  if cat "$shards"/*/1-of-4/*profile_journal_*.jsonl 2>/dev/null | grep -q '"repeat"'; then first_record=1; break; fi
  sleep 0.1
done
[ "$first_record" = 1 ] || fail "shard 1/4 wrote no measurement within 60 s (task state $(job_state "${array}_1"))"
scancel "${array}_1"
s="$(wait_state "${array}_1" 30 'CANCELLED|COMPLETED|FAILED')" || fail "task ${array}_1 is '$s' 30 s after scancel"
[ "$s" = CANCELLED ] || fail "task ${array}_1 ended '$s' before it could be cancelled: its shard measures too little"
records() { cat "$shards"/*/1-of-4/*profile_journal_*.jsonl | grep -c '"repeat"'; }
at_cancel="$(records)"
scontrol requeue "${array}_1"
# Slurm holds a requeued job back for two minutes by default; and keeps a dependency failed once a task it
# waited for was cancelled, until it is given again.
scontrol update JobId="${array}_1" StartTime=now
scontrol update JobId="$train" Dependency="afterok:${array}_1:${array}_2:${array}_3:${array}_4"

for k in 1 2 3 4; do
  s="$(wait_state "${array}_$k" 180 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY')" ||
    fail "task ${array}_$k is still '$s' after 180 s"
  [ "$s" = COMPLETED ] || fail "task ${array}_$k ended '$s': $(tail -n 3 "$logs/measure-${array}_$k.out")"
done
scontrol show job -o "${array}_1" | grep -q 'Restarts=1' || fail "task ${array}_1 was not run again after its requeue"
echo "shard 1/4: cancelled after $at_cancel measurements, requeued, $(records) when done"

# Each (kernel, id, repeat) of the plan measured exactly once across the shards, the cancelled one included.
python3 - "$shards/$plan" "$measurements" <<'EOF' || fail "the shards' journals do not hold the plan's measurements once each"
import collections, glob, json, os, re, sys
shards, expected = sys.argv[1], int(sys.argv[2])
seen = collections.Counter()
files = glob.glob(os.path.join(shards, "*-of-4", "*profile_journal_*.jsonl"))
for path in files:
    kernel = re.sub(r"^\d+-profile_journal_(.*)\.jsonl$", r"\1", os.path.basename(path))
    for line in open(path):
        if line.strip():
            record = json.loads(line)
            seen[(kernel, record["id"], record["repeat"])] += 1
twice = [key for key, n in seen.items() if n > 1]
if twice:
    print("measured more than once:", twice[:5]); sys.exit(1)
if len(seen) != expected:
    print(f"{len(seen)} measurements in {len(files)} journals, the plan has {expected}"); sys.exit(1)
EOF

# A missing shard: the train step refuses, naming it; the shard back in place, the build goes on.
plan_dir="$shards/$plan"
mv "$plan_dir/3-of-4" "$tmp/3-of-4.aside"
rc=0
"$bin" build --workspace "$tmp/sharded" --backend onednn_cpu --no-ruletest --shards 4 >"$tmp/missing.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "--shards 4 without shard 3's journals exited $rc, not 1: $(tail -n 2 "$tmp/missing.log")"
grep -q "shard 3/4" "$tmp/missing.log" || fail "--shards 4 did not name shard 3/4: $(tail -n 2 "$tmp/missing.log")"
mv "$tmp/3-of-4.aside" "$plan_dir/3-of-4"

# The first train job merges the prior samples, reaches relu's fine-grained round and submits the next round
# (held too: NNMETER_TRAIN_SBATCH_ARGS travels with the jobs).
wait_done() {  # wait_done JOB WHAT: the job ends COMPLETED within 180 s
  local s
  s="$(wait_state "$1" 180 'COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY')" ||
    fail "$2 $1 is still '$s' after 180 s ($(scontrol show job -o "$1" | grep -o 'Reason=[^ ]*'))"
  [ "$s" = COMPLETED ] || fail "$2 $1 ended '$s'"
}
scontrol release "$train"
wait_done "$train" "the first train job"
grep -q "fine-grained round 1" "$logs/train-$train.out" || fail "the first train job planned no fine-grained round: $(tail -n 3 "$logs/train-$train.out")"
[ "$(wc -l <"$logs/jobs")" = 2 ] || fail "the first train job submitted no next round: $(tail -n 3 "$logs/train-$train.out")"
read -r array2 train2 < <(tail -n 1 "$logs/jobs")
for k in 1 2 3 4; do wait_done "${array2}_$k" "task"; done
scontrol release "$train2"
wait_done "$train2" "the second train job"
grep -q "predictor written" "$logs/train-$train2.out" || fail "the second train job wrote no predictor: $(tail -n 3 "$logs/train-$train2.out")"
compgen -G "$tmp/sharded/predictor_build/predictor/*.yaml" >/dev/null || fail "the sharded build has no predictor meta"

# The same samples as the single-host build: IDs and configs.
python3 - "$tmp/single" "$tmp/sharded" <<'EOF' || fail "the sharded build's samples differ from the single-host build's"
import json, os, sys
for kernel in ("relu", "add"):
    def samples(ws):
        path = os.path.join(ws, "predictor_build", "results", f"{kernel}_prior.json")
        return {sid: entry["config"] for sid, entry in json.load(open(path))[kernel].items()}
    single, sharded = samples(sys.argv[1]), samples(sys.argv[2])
    if not single or single != sharded:
        print(f"{kernel}: single-host {sorted(single)} vs sharded {sorted(sharded)}"); sys.exit(1)
EOF
echo ok
