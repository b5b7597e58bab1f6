#!/usr/bin/env bash
# A real single-node SLURM "cluster" on localhost, for testing profiles/slurm and the slurm executor.
# For Debian 12 as root: no systemd, no cgroups, no accounting database.
#
#   tests/slurm/local_slurm.sh start    install the packages if missing, write /etc/slurm/slurm.conf,
#                                       start munged, slurmctld, slurmd; record their PIDs
#   tests/slurm/local_slurm.sh stop     stop the recorded PIDs in reverse order (never by name)
#   tests/slurm/local_slurm.sh status   print the recorded PIDs and `sinfo`
#
# Environment: SLURM_ROOT (state directory, default /var/lib/slurm-local).
# Exit status of `start`: 0 = cluster up; 77 = SLURM cannot be provided here (not root, apt failed,
# or a slurm.conf that this script did not write is in place) -> callers should skip; other = error.
set -uo pipefail

SLURM_ROOT=${SLURM_ROOT:-/var/lib/slurm-local}
PIDS="$SLURM_ROOT/pids"
CONF=/etc/slurm/slurm.conf   # must be the default path: the job step plugin drops SLURM_CONF (§5.5)
MARK="# written by attnbias tests/slurm/local_slurm.sh"

say() { echo "local_slurm: $*" >&2; }
unavailable() { say "unavailable: $*"; exit 77; }

# Expected process name for a recorded PID (guards against PID reuse when stopping).
alive_as() {  # alive_as PID NAME
    [ -r "/proc/$1/comm" ] && [ "$(cat "/proc/$1/comm")" = "$2" ]
}

record() {  # record NAME PIDFILE: wait (up to 10 s) for a daemon's PID file, then record its PID
    local pid=""
    for _ in $(seq 1 100); do
        pid=$(cat "$2" 2>/dev/null)
        [ -n "$pid" ] && alive_as "$pid" "$1" && break
        pid=""
        sleep 0.1
    done
    [ -n "$pid" ] || { say "no live $1 behind PID file $2"; return 1; }
    echo "$pid $1" >>"$PIDS"
}

# Before the daemons go: cancel every job of this private cluster and wait for it to end, then kill
# (by PID, as listed by slurmd for its jobs) any job process still alive, so no job outlives them.
cancel_jobs() {
    local ctld d ids pid
    ctld=$(awk '$2 == "slurmctld" {print $1}' "$PIDS" | tail -n 1)
    d=$(awk '$2 == "slurmd" {print $1}' "$PIDS" | tail -n 1)
    [ -n "$ctld" ] && alive_as "$ctld" slurmctld || return 0
    ids=$(squeue -h -t PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING -o %A 2>/dev/null | sort -u)
    [ -n "$ids" ] || return 0
    say "cancelling jobs: $(tr '\n' ' ' <<<"$ids")"
    # shellcheck disable=SC2086
    scancel $ids 2>/dev/null
    for _ in $(seq 1 150); do
        [ -z "$(squeue -h -t PENDING,RUNNING,SUSPENDED,COMPLETING,CONFIGURING -o %A 2>/dev/null)" ] && break
        sleep 0.1
    done
    if [ -n "$d" ] && alive_as "$d" slurmd; then
        for pid in $(scontrol listpids 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}'); do
            kill -9 "$pid" 2>/dev/null && say "killed leftover job process $pid"
        done
    fi
}

stop() {
    [ -s "$PIDS" ] || say "no daemon to stop (no PIDs recorded in $PIDS)"
    local pid name
    [ -s "$PIDS" ] && cancel_jobs
    # Reverse order: slurmd, slurmctld, munged.
    tac "$PIDS" | while read -r pid name; do
        [ -n "$pid" ] || continue
        if ! alive_as "$pid" "$name"; then
            say "$name ($pid) already gone"
            continue
        fi
        kill "$pid" 2>/dev/null
        for _ in $(seq 1 100); do
            alive_as "$pid" "$name" || break
            sleep 0.1
        done
        if alive_as "$pid" "$name"; then
            say "$name ($pid) did not exit within 10 s"
        else
            say "stopped $name ($pid)"
        fi
    done
    : >"$PIDS"
    # Without daemons, a slurm.conf makes every SLURM client call (and so every `snakemake`
    # invocation, whose slurm plugin runs `scontrol show config` at start-up) wait ~10 s for a
    # controller; remove ours so the machine is back to "no SLURM here".
    if [ -f "$CONF" ] && grep -qF "$MARK" "$CONF"; then
        rm -f "$CONF"
        say "removed $CONF"
    fi
    return 0
}

install_packages() {
    local missing=0 b
    for b in /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch /usr/sbin/munged /usr/bin/munge; do
        [ -x "$b" ] || missing=1
    done
    [ "$missing" = 1 ] || return 0
    command -v apt-get >/dev/null || unavailable "SLURM packages missing and no apt-get"
    say "installing slurmctld slurmd slurm-client munge with apt-get"
    { apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            slurmctld slurmd slurm-client munge; } >"$SLURM_ROOT/apt.log" 2>&1 ||
        unavailable "apt-get install failed (see $SLURM_ROOT/apt.log): $(tail -n 3 "$SLURM_ROOT/apt.log" | tr '\n' ' ')"
}

start() {
    [ "$(id -u)" = 0 ] || unavailable "must run as root (it installs packages and starts daemons)"
    mkdir -p "$SLURM_ROOT" || unavailable "cannot create $SLURM_ROOT"
    touch "$PIDS"
    if [ -f "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        unavailable "$CONF exists and was not written by this script; refusing to replace a real SLURM configuration"
    fi
    # Leftovers of an earlier start that was never stopped: stop them (by recorded PID) first.
    stop
    install_packages

    # 1. munge key
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create --keyfile=/etc/munge/munge.key || { say "mungekey failed"; return 1; }
    fi
    chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key

    # 2. munge daemon (only if none answers; a munged we did not start is not recorded)
    mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        runuser -u munge -- /usr/sbin/munged || { say "munged failed to start"; return 1; }
        local ok=0
        for _ in $(seq 1 50); do
            if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then ok=1; break; fi
            sleep 0.2
        done
        [ "$ok" = 1 ] || { say "munge does not answer"; return 1; }
        record munged /run/munge/munged.pid || return 1
    fi

    # 3. configuration (fresh state and logs on every start, so job ids and logs are this run's)
    rm -rf "$SLURM_ROOT/state" "$SLURM_ROOT/spool" "$SLURM_ROOT/log" \
        "$SLURM_ROOT/slurmctld.pid" "$SLURM_ROOT/slurmd.pid"
    mkdir -p "$SLURM_ROOT/state" "$SLURM_ROOT/spool" "$SLURM_ROOT/log" /etc/slurm
    local cpus mem
    cpus=$(nproc)
    mem=$(($(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo) - 2048))
    cat >"$CONF" <<EOF
$MARK (local single-node test cluster)
ClusterName=local
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$SLURM_ROOT/state
SlurmdSpoolDir=$SLURM_ROOT/spool
SlurmctldPidFile=$SLURM_ROOT/slurmctld.pid
SlurmdPidFile=$SLURM_ROOT/slurmd.pid
SlurmctldLogFile=$SLURM_ROOT/log/slurmctld.log
SlurmdLogFile=$SLURM_ROOT/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=600
MpiDefault=none
SwitchType=switch/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF

    # 4. daemons
    /usr/sbin/slurmctld || { say "slurmctld failed to start (see $SLURM_ROOT/log/slurmctld.log)"; return 1; }
    record slurmctld "$SLURM_ROOT/slurmctld.pid" || return 1
    /usr/sbin/slurmd -N localhost || { say "slurmd failed to start (see $SLURM_ROOT/log/slurmd.log)"; return 1; }
    record slurmd "$SLURM_ROOT/slurmd.pid" || return 1
    local state=""
    for _ in $(seq 1 150); do
        state=$(sinfo -h -o %t 2>/dev/null | head -n 1)
        [ "$state" = idle ] && break
        sleep 0.2
    done
    [ "$state" = idle ] || { say "node not idle after 30 s (state '$state')"; return 1; }
    say "up: partition main, node localhost ($cpus CPUs, $mem MB); PIDs in $PIDS"
}

status() {
    echo "PIDs ($PIDS):"
    cat "$PIDS" 2>/dev/null
    sinfo 2>&1
}

case "${1:-}" in
    start)
        start
        rc=$?
        if [ "$rc" -ne 0 ]; then say "start failed; stopping what was started"; stop; fi
        exit "$rc"
        ;;
    stop) stop ;;
    status) status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
