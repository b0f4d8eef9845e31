#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, from Debian 12's packages (slurmctld, slurmd, slurm-client,
# munge), for trying the sharded build of examples/slurm/ and for its test (tests/slurm/).
# Usage: scripts/slurm-local.sh start|stop|status [STATE_DIR]     (as root; STATE_DIR default /tmp/nnmeter-slurm)
#   start   writes STATE_DIR/slurm.conf, starts munged, slurmctld and slurmd, waits until the node is idle and
#           prints the line to give the Slurm commands this cluster:  export SLURM_CONF=STATE_DIR/slurm.conf
#   stop    cancels the cluster's jobs, stops the three daemons it started (by their pid files)
#   status  prints the node's state; exit 0 when slurmctld runs and answers
# NNMETER_SLURM_PORT (default 6817) is slurmctld's port, slurmd takes the next one: change it when another
# Slurm listens on this machine. NNMETER_SLURM_WAIT (default 60) bounds the wait for the node, in seconds.
set -euo pipefail

cmd="${1:-}"
state="${2:-/tmp/nnmeter-slurm}"
port="${NNMETER_SLURM_PORT:-6817}"
wait_s="${NNMETER_SLURM_WAIT:-60}"
conf="$state/slurm.conf"
node="$(hostname -s)"

die() { echo "slurm-local.sh: $*" >&2; exit 1; }

# The pid a daemon wrote, when that process still runs.
live_pid() {
  local f="$1" pid
  [ -s "$f" ] || return 1
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# Sends TERM, then KILL after a bounded wait, to the daemon of a pid file.
stop_daemon() {
  local f="$1" pid i
  pid="$(live_pid "$f")" || { rm -f "$f"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; sleep 0.2; fi
  rm -f "$f"
}

# The daemons fork before they write their pid file: wait for it (bounded) before judging them alive.
await_pid() {
  local i
  for ((i = 0; i < 50; i++)); do
    live_pid "$state/$1.pid" >/dev/null && return 0
    sleep 0.2
  done
  fail "$1 did not come up within 10 s (see $state/log/$1.log)"
}

# A start that fails leaves nothing running behind it.
fail() { stop >/dev/null 2>&1 || true; die "$@"; }

port_taken() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }

node_state() { SLURM_CONF="$conf" sinfo -h -n "$node" -o %T 2>/dev/null | head -n 1; }

write_config() {
  mkdir -p "$state"/{munge,ctld,slurmd,log}
  # Users other than root may submit too: munged wants its socket's folder open to all (the key file is 0600).
  chmod 0755 "$state/munge"
  # munged runs as root here, with its own socket, so it neither needs nor disturbs a system munged.
  if [ -r /etc/munge/munge.key ]; then
    keyfile=/etc/munge/munge.key
  else
    keyfile="$state/munge/munge.key"
    [ -s "$keyfile" ] || mungekey --create --keyfile="$keyfile" >/dev/null || die "cannot create a munge key in $keyfile"
  fi
  : >"$state/plugstack.conf"  # no site SPANK plugins in a throwaway cluster
  cat >"$conf" <<EOF
# Written by scripts/slurm-local.sh: a single-node cluster for nn-Meter's sharded build. Use it with
#   export SLURM_CONF=$conf
ClusterName=nnmeter
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.socket
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/slurmd
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
PlugStackConfig=$state/plugstack.conf
# Containers have neither systemd nor writable cgroups: track processes through /proc and bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# A measurement task is one process, no MPI.
MpiDefault=none
# No slurmdbd, so no sacct: finished jobs stay visible to \`scontrol show job\` for MinJobAge seconds.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=900
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# A measurement task killed by a node failure or \`scontrol requeue\` goes back to the queue.
JobRequeue=1
# nn-meter stops on TERM between measurements; no need for the default 30 s before KILL.
KillWait=5
# Dependent jobs (the train step after the measuring array) start seconds, not a minute, after.
SchedulerParameters=sched_interval=2,bf_interval=2
ReturnToService=2
# The node's memory or topology as probed inside a container may differ from what is declared below.
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  [ "$(id -u)" -eq 0 ] || die "start needs root (the daemons run as root in this single-node set-up)"
  for p in munged slurmctld slurmd sinfo; do
    command -v "$p" >/dev/null || die "$p not found: install munge slurmctld slurmd slurm-client (scripts/install-deps.sh)"
  done
  if live_pid "$state/slurmctld.pid" >/dev/null && [ "$(node_state)" = idle ]; then
    echo "export SLURM_CONF=$conf"
    return 0
  fi
  # Another cluster on these ports would answer our sinfo and make a failed start look like a working one.
  if ! live_pid "$state/slurmctld.pid" >/dev/null && port_taken "$port"; then
    die "port $port is in use (another Slurm?); stop it or set NNMETER_SLURM_PORT to a free port"
  fi
  if ! live_pid "$state/slurmd.pid" >/dev/null && port_taken $((port + 1)); then
    die "port $((port + 1)) is in use (another slurmd?); stop it or set NNMETER_SLURM_PORT to a free port"
  fi
  write_config
  if ! live_pid "$state/munged.pid" >/dev/null; then
    # --force: as root, munged otherwise refuses Debian's key, which belongs to the munge user.
    munged --force --socket="$state/munge/munge.socket" --key-file="$keyfile" --pid-file="$state/munged.pid" \
      --log-file="$state/log/munged.log" --seed-file="$state/munge/munged.seed" \
      || fail "munged did not start (see $state/log/munged.log)"
  fi
  await_pid munged
  if ! live_pid "$state/slurmctld.pid" >/dev/null; then
    slurmctld -f "$conf" -i || fail "slurmctld did not start (see $state/log/slurmctld.log)"
  fi
  await_pid slurmctld
  if ! live_pid "$state/slurmd.pid" >/dev/null; then
    slurmd -f "$conf" -N "$node" || fail "slurmd did not start (see $state/log/slurmd.log)"
  fi
  await_pid slurmd
  local i s=""
  for ((i = 0; i < wait_s * 2; i++)); do
    live_pid "$state/slurmctld.pid" >/dev/null || fail "slurmctld exited (see $state/log/slurmctld.log)"
    live_pid "$state/slurmd.pid" >/dev/null || fail "slurmd exited (see $state/log/slurmd.log)"
    s="$(node_state)"
    [ "$s" = idle ] && break
    # A node that came back from an earlier run may be marked down; this cluster is ours to resume.
    case "$s" in down*|drain*) SLURM_CONF="$conf" scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1 || true ;; esac
    sleep 0.5
  done
  [ "$s" = idle ] || fail "node $node is '${s:-unknown}', not idle, after ${wait_s}s (see $state/log/slurmctld.log and slurmd.log)"
  echo "export SLURM_CONF=$conf"
}

stop() {
  if [ -f "$conf" ] && live_pid "$state/slurmctld.pid" >/dev/null; then
    # Jobs first: their slurmstepd processes are not children of slurmd and would outlive it.
    SLURM_CONF="$conf" scancel --full --partition=local >/dev/null 2>&1 || true
    local i
    for ((i = 0; i < 40; i++)); do
      [ -z "$(SLURM_CONF="$conf" squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.5
    done
  fi
  stop_daemon "$state/slurmd.pid"
  stop_daemon "$state/slurmctld.pid"
  stop_daemon "$state/munged.pid"
}

status() {
  live_pid "$state/slurmctld.pid" >/dev/null || { echo "slurmctld not running ($state)"; return 1; }
  local s
  s="$(node_state)"
  echo "node $node: ${s:-unknown}"
  [ -n "$s" ]
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: scripts/slurm-local.sh start|stop|status [STATE_DIR]" >&2; exit 2 ;;
esac
