#!/usr/bin/env bash
# Submits a predictor build sharded over a Slurm array job: one array task measures one shard of the build's
# current measurement plan, a train job after the array merges the shards and trains. When the build reaches
# another phase that needs measuring, the train job submits the next array and train job itself (train.sbatch).
#
# Usage: examples/slurm/submit.sh WORKSPACE BACKEND SHARDS [BUILD_OPTION...]
#   WORKSPACE      a workspace of `nn-meter create` (on a file system every node of the cluster sees)
#   BACKEND        the backend to measure on, e.g. onednn_cpu or tflite_cpu
#   SHARDS         the number of array tasks, i.e. of shards each measurement phase is cut into
#   BUILD_OPTION   further options of `nn-meter build`, given to every step alike (e.g. --kernels relu,add
#                  --no-ruletest); each one word, without spaces
# Environment:
#   NNMETER_BIN              the nn-meter to run (default: nn-meter on PATH, resolved to an absolute path here)
#   NNMETER_SBATCH_ARGS      further sbatch options of the measuring tasks, whitespace-separated, e.g.
#                            "--partition=phones --gres=phone:1" (README.md)
#   NNMETER_TRAIN_SBATCH_ARGS  further sbatch options of the train jobs
#   NNMETER_ADB_SERIALS      adb serials, one per array task, for several devices on one host (measure.sbatch)
#   NNMETER_SLURM_LOGS       folder of the jobs' output (default: WORKSPACE/slurm-logs); its file `jobs` gets
#                            one line "<array job id> <train job id>" per submitted round
# The jobs inherit this environment (sbatch --export=ALL), SLURM_CONF included.
# Output: nn-meter's "Plan ..." line, then "Submitted measure array <id> (tasks 1-SHARDS), train job <id>".
# With --next-round as the first argument it skips `--plan-only`: train.sbatch uses it after a plan was written.
set -euo pipefail

next_round=0
if [ "${1:-}" = --next-round ]; then next_round=1; shift; fi
if [ "$#" -lt 3 ]; then
  echo "usage: submit.sh WORKSPACE BACKEND SHARDS [BUILD_OPTION...] (see the top of $0)" >&2
  exit 2
fi
workspace="$1" backend="$2" shards="$3"
shift 3
[[ "$shards" =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: SHARDS must be a positive number, not '$shards'" >&2; exit 2; }
[ -d "$workspace" ] || { echo "submit.sh: no workspace folder '$workspace' (nn-meter create --workspace ...)" >&2; exit 2; }
for opt in "$@"; do
  [[ "$opt" =~ [[:space:]] ]] && { echo "submit.sh: build option '$opt' contains whitespace; pass it as one word" >&2; exit 2; }
done
command -v sbatch >/dev/null || { echo "submit.sh: sbatch not found (install slurm-client)" >&2; exit 2; }

# The jobs run elsewhere, later, from Slurm's copy of the batch script: everything they need travels as
# absolute paths in their environment.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${NNMETER_BIN:-nn-meter}"
if [[ "$bin" != /* ]]; then
  resolved="$(command -v "$bin")" || { echo "submit.sh: '$bin' not found; set NNMETER_BIN to the nn-meter binary" >&2; exit 2; }
  bin="$resolved"
fi
export NNMETER_BIN="$bin"
NNMETER_WORKSPACE="$(cd "$workspace" && pwd)"
export NNMETER_WORKSPACE
export NNMETER_BACKEND="$backend"
export NNMETER_SHARDS="$shards"
export NNMETER_BUILD_ARGS="$*"
export NNMETER_SLURM_DIR="$here"
export NNMETER_SLURM_LOGS="${NNMETER_SLURM_LOGS:-$NNMETER_WORKSPACE/slurm-logs}"
mkdir -p "$NNMETER_SLURM_LOGS"

if [ "$next_round" = 0 ]; then
  "$bin" build --workspace "$NNMETER_WORKSPACE" --backend "$backend" "$@" --plan-only
fi

read -r -a measure_args <<<"${NNMETER_SBATCH_ARGS:-}"
read -r -a train_args <<<"${NNMETER_TRAIN_SBATCH_ARGS:-}"
array="$(sbatch --parsable --export=ALL --array="1-$shards" --output="$NNMETER_SLURM_LOGS/measure-%A_%a.out" \
  --open-mode=append \
  "${measure_args[@]}" "$here/measure.sbatch")"
array="${array%%;*}"  # --parsable prints "id;cluster" on a federated set-up
# afterok on each task rather than on the array: Slurm marks an array dependency failed for good once a task
# was cancelled or failed, whereas a task's own dependency is met again when that task is requeued and completes.
after="afterok"
for ((k = 1; k <= shards; k++)); do after+=":${array}_$k"; done
train="$(sbatch --parsable --export=ALL --dependency="$after" --output="$NNMETER_SLURM_LOGS/train-%j.out" \
  "${train_args[@]}" "$here/train.sbatch")"
train="${train%%;*}"
echo "$array $train" >>"$NNMETER_SLURM_LOGS/jobs"
echo "Submitted measure array $array (tasks 1-$shards), train job $train"
