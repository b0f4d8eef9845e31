#!/usr/bin/env bash
# examples/slurm/ and scripts/slurm-local.sh with a stand-in for nn-meter (fake_nn_meter.sh), so that what Slurm
# does is checked apart from what nn-meter measures, in seconds:
#   - a build of two measurement phases: the train job's exit 3 submits the second array and train job itself,
#     the last train job writes the predictor;
#   - a running task requeued (`scontrol requeue`, as a preemption or a node failure does) runs again and the
#     chain goes on without help;
#   - each task measures on the adb serial of its number (NNMETER_ADB_SERIALS -> ANDROID_SERIAL), and a task
#     without a serial refuses (exit 2); submit.sh refuses a bad shard count (exit 2);
#   - slurm-local.sh status/stop: up while up, nothing of it left running after stop.
# Usage: slurm_mechanics_test.sh        Exit 77 (skipped) when Slurm cannot run here.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$(cd "$here/../.." && pwd)"
fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "starting a local Slurm needs root"
for p in munged slurmctld slurmd sbatch scontrol flock; do
  command -v "$p" >/dev/null || skip "$p is not installed (scripts/install-deps.sh)"
done

tmp="$(mktemp -d)"
state="$tmp/slurm"
cleanup() {
  "$src/scripts/slurm-local.sh" stop "$state" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
port=16917
while ss -Hltn "sport = :$port or sport = :$((port + 1))" | grep -q .; do
  port=$((port + 2))
  [ "$port" -lt 17000 ] || skip "no two free ports in 16917-17000 for slurmctld and slurmd"
done
if ! out="$(NNMETER_SLURM_PORT="$port" "$src/scripts/slurm-local.sh" start "$state" 2>&1)"; then
  skip "Slurm cannot start here: $(tail -n 1 <<<"$out")"
fi
[ "$out" = "export SLURM_CONF=$state/slurm.conf" ] || fail "slurm-local.sh start printed '$out'"
export SLURM_CONF="$state/slurm.conf"
"$src/scripts/slurm-local.sh" status "$state" | grep -q ": idle$" || fail "slurm-local.sh status does not say idle"
cd "$tmp"

rc=0
"$src/examples/slurm/submit.sh" "$tmp" onednn_cpu 0 >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "submit.sh with 0 shards exited $rc, not 2"
rc=0
SLURM_ARRAY_TASK_ID=4 NNMETER_SHARDS=4 NNMETER_ADB_SERIALS="a,b,c" NNMETER_WORKSPACE="$tmp" NNMETER_BACKEND=x \
  NNMETER_BIN=/bin/false bash "$src/examples/slurm/measure.sbatch" >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "task 4 with 3 adb serials exited $rc, not 2"

mkdir "$tmp/ws"
export FAKE_ROUNDS=2 FAKE_MEASUREMENTS=9 FAKE_SLEEP=0.4
NNMETER_BIN="$here/fake_nn_meter.sh" NNMETER_ADB_SERIALS="serial-a, serial-b, serial-c" \
  "$src/examples/slurm/submit.sh" "$tmp/ws" onednn_cpu 3 >"$tmp/submit.log" 2>&1 || fail "submit.sh: $(tail -n 1 "$tmp/submit.log")"
logs="$tmp/ws/slurm-logs"
read -r array _ <"$logs/jobs"

job_state() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | head -n 1 | cut -d= -f2; }
for ((i = 0; i < 300; i++)); do
  [ -s "$tmp/ws/predictor_build/shards/p1/2-of-3/journal.jsonl" ] && break
  sleep 0.1
done
[ "$(job_state "${array}_2")" = RUNNING ] || fail "task ${array}_2 is '$(job_state "${array}_2")', not measuring"
scontrol requeue "${array}_2"
# Slurm holds a requeued job back for two minutes; once it is back in the queue, start it now.
for ((i = 0; i < 150; i++)); do [ "$(job_state "${array}_2")" = PENDING ] && break; sleep 0.2; done
[ "$(job_state "${array}_2")" = PENDING ] || fail "task ${array}_2 is '$(job_state "${array}_2")' 30 s after its requeue"
scontrol update JobId="${array}_2" StartTime=now

# The chain: round 1's train job submits round 2, whose train job writes the predictor.
done_=0
for ((i = 0; i < 600; i++)); do
  if [ "$(wc -l <"$logs/jobs")" = 2 ]; then
    read -r _ last <<<"$(tail -n 1 "$logs/jobs")"
    s="$(job_state "$last")"
    case "$s" in
      COMPLETED) done_=1; break ;;
      FAILED|CANCELLED|TIMEOUT) fail "the last train job $last ended '$s': $(tail -n 2 "$logs/train-$last.out")" ;;
    esac
  fi
  sleep 0.2
done
[ "$done_" = 1 ] || fail "the build did not finish in 120 s: $(cat "$logs/jobs"); $(squeue -h 2>&1 | head -n 3)"
[ -f "$tmp/ws/predictor_build/predictor/meta.yaml" ] || fail "no predictor after the last train job"
grep -q "predictor written" "$logs/train-$last.out" || fail "the last train job did not report the predictor"
scontrol show job -o "${array}_2" | grep -q 'Restarts=1' || fail "task ${array}_2 did not run again after its requeue"
# 3 tasks a round, 2 rounds, and the requeued task once more; each on its own serial.
[ "$(wc -l <"$tmp/ws/fake-devices")" = 7 ] || fail "$(wc -l <"$tmp/ws/fake-devices") measuring runs, not 7"
while read -r k serial; do
  [ "$serial" = "serial-$(tr 123 abc <<<"$k")" ] || fail "task $k measured on '$serial'"
done <"$tmp/ws/fake-devices"

pids=()
for d in slurmctld slurmd munged; do pids+=("$(cat "$state/$d.pid")"); done
"$src/scripts/slurm-local.sh" stop "$state"
for pid in "${pids[@]}"; do ! kill -0 "$pid" 2>/dev/null || fail "process $pid still runs after slurm-local.sh stop"; done
rc=0
"$src/scripts/slurm-local.sh" status "$state" >/dev/null || rc=$?
[ "$rc" = 1 ] || fail "slurm-local.sh status exited $rc on a stopped cluster, not 1"
echo ok
