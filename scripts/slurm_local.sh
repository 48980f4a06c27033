#!/usr/bin/env bash
# A single-node Slurm cluster on this host, for the sweep tests (tests/integration/check_slurm.sh)
# and for trying `stacklab sweep --executor slurm` without a cluster. Debian's slurm-wlm and munge
# (scripts/setup.sh installs them); must run as root (slurmd starts the tasks as their users).
#
#   scripts/slurm_local.sh start    # prints `export SLURM_CONF=...`: eval it, then sbatch/squeue work
#   scripts/slurm_local.sh status   # the daemons' pids, sinfo
#   scripts/slurm_local.sh stop     # stops the daemons it started (by pid), removes the directory
#
# Everything lives in one directory, STACKLAB_SLURM_DIR (default /tmp/stacklab-slurm-$UID):
# munge key, munge socket, slurm.conf (found by the clients through SLURM_CONF), state, spool,
# pid and log files. Nothing is written to /etc/slurm, /etc/munge or /run. One node (this host,
# on 127.0.0.1), one partition "local", ports STACKLAB_SLURM_PORT and +1 (default 16817) on the
# loopback; proctrack/linuxproc and task/none (no cgroups, no systemd).
# Not here: accounting (no slurmdbd, so sacct has no data; squeue and scontrol answer).
set -euo pipefail

DIR="${STACKLAB_SLURM_DIR:-/tmp/stacklab-slurm-$(id -u)}"
PORT="${STACKLAB_SLURM_PORT:-16817}"
NODE="$(hostname -s)"
# The CPUs this process may use (nproc honours a cpuset, unlike _NPROCESSORS_ONLN, so slurmd's own
# count agrees and the node does not drain; OMP_NUM_THREADS would change nproc's answer).
CPUS="$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 1)"
MEM_MB="$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo 2>/dev/null || echo 1024)"  # for --mem

say() { printf 'slurm_local: %s\n' "$*" >&2; }
die() { printf 'slurm_local: ERROR: %s\n' "$*" >&2; exit 1; }

pid_of() { [[ -s "$DIR/$1.pid" ]] && cat "$DIR/$1.pid"; }
alive() { local p; p="$(pid_of "$1")" && [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null; }

write_config() {
  mkdir -p "$DIR/munge" "$DIR/state" "$DIR/spool" "$DIR/log"
  chmod 0755 "$DIR" "$DIR/munge"  # clients reach the socket; the key itself is private (0400)
  # MUNGE keys are 1024 random bytes; munged wants the file private to its user.
  [[ -s "$DIR/munge/munge.key" ]] || dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$DIR/munge/munge.key"
  : >"$DIR/plugstack.conf"  # no SPANK plugins (the global one includes /etc/slurm/plugstack.conf.d)
  cat >"$DIR/slurm.conf" <<EOF
# Written by scripts/slurm_local.sh: a one-node cluster for tests, everything under $DIR.
ClusterName=stacklab
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
PlugStackConfig=$DIR/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=30
MinJobAge=300
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$NODE CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=local Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  [[ "$(id -u)" == 0 ]] || die "must run as root (slurmd runs each task as its submitting user)"
  for b in munged slurmctld slurmd sinfo; do
    command -v "$b" >/dev/null 2>&1 || die "$b not found: apt-get install slurm-wlm munge (scripts/setup.sh does)"
  done
  if alive slurmctld || alive slurmd || alive munged; then die "already running in $DIR (stop it first)"; fi
  write_config
  export SLURM_CONF="$DIR/slurm.conf"
  munged --key-file="$DIR/munge/munge.key" --socket="$DIR/munge/munge.socket" --pid-file="$DIR/munged.pid" \
    --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed" --force ||
    die "munged did not start; see $DIR/log/munged.log"
  # The daemons fork before they write their pid files: wait, so that a failure below stops them.
  wait_pid_file munged || fail_start "munged wrote no pid file"
  slurmctld -f "$SLURM_CONF" || fail_start "slurmctld did not start"
  wait_pid_file slurmctld || fail_start "slurmctld wrote no pid file"
  slurmd -f "$SLURM_CONF" -N "$NODE" || fail_start "slurmd did not start"
  wait_pid_file slurmd || fail_start "slurmd wrote no pid file"
  local i
  for ((i = 0; i < 60; ++i)); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      say "up: node $NODE ($CPUS CPUs), partition local, in $DIR"
      echo "export SLURM_CONF=$SLURM_CONF"
      return 0
    fi
    sleep 0.5
  done
  sinfo -N -l >&2 || true
  fail_start "the node did not become idle within 30 s"
}

# A failed start: the logs to stderr, every daemon that did start stopped, exit 1.
fail_start() {
  tail -n 20 "$DIR"/log/*.log >&2 2>/dev/null || true
  stop
  die "$1 (logs above)"
}

# Waits up to 10 s for a daemon's pid file and its process.
wait_pid_file() {
  local i
  for ((i = 0; i < 100; ++i)); do
    alive "$1" && return 0
    sleep 0.1
  done
  return 1
}

# Cancels every job of this private cluster and waits (bounded: KillWait 30 s + 15) until the
# queue is empty, so no task (slurmstepd and its stacklab) outlives the daemons.
cancel_jobs() {
  alive slurmctld || return 0
  local i
  SLURM_CONF="$DIR/slurm.conf" scancel --quiet --full -u "$(id -un)" 2>/dev/null || true
  for ((i = 0; i < 90; ++i)); do
    [[ -z "$(SLURM_CONF="$DIR/slurm.conf" squeue -h -o %i 2>/dev/null)" ]] && return 0
    sleep 0.5
  done
  say "jobs still listed 45 s after scancel; stopping the daemons anyway"
}

# Stops each daemon by the pid in its pid file: TERM, then KILL after 10 s.
stop_one() {
  local name="$1" p i
  p="$(pid_of "$name")" || return 0
  [[ -n "$p" ]] || return 0
  kill -TERM "$p" 2>/dev/null || return 0
  for ((i = 0; i < 100; ++i)); do
    kill -0 "$p" 2>/dev/null || return 0
    sleep 0.1
  done
  say "$name (pid $p) did not stop on SIGTERM; SIGKILL"
  kill -KILL "$p" 2>/dev/null || true
  for ((i = 0; i < 50; ++i)); do
    kill -0 "$p" 2>/dev/null || return 0
    sleep 0.1
  done
}

stop() {
  [[ -d "$DIR" ]] || { say "nothing to stop ($DIR does not exist)"; return 0; }
  cancel_jobs
  stop_one slurmd
  stop_one slurmctld
  stop_one munged
  rm -rf "$DIR"
  say "stopped; removed $DIR"
}

status() {
  local d rc=0
  for d in munged slurmctld slurmd; do
    if alive "$d"; then echo "$d: running (pid $(pid_of "$d"))"; else echo "$d: not running"; rc=3; fi
  done
  if ((rc == 0)); then SLURM_CONF="$DIR/slurm.conf" sinfo -N -l; echo "export SLURM_CONF=$DIR/slurm.conf"; fi
  return "$rc"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: scripts/slurm_local.sh start|stop|status" >&2; exit 2 ;;
esac
