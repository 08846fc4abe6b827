#!/usr/bin/env bash
# A private Slurm cluster on one machine, for development and tests: munged, slurmctld and three
# slurmd virtual nodes n1..n3 (4 CPUs, 2000 MB, two fake GPUs `gpu:fake:2` each), all living in
# one directory. Nothing is written to /etc, no systemd is needed, start takes about a second.
# docs/slurm.md ("The development cluster") explains every setting.
#
#   scripts/slurm-dev-cluster.sh start  [--accounting] [DIR]   start (or say it already runs); waits
#                                               for idle nodes; --accounting adds slurmdbd (below)
#   scripts/slurm-dev-cluster.sh stop   [DIR]   cancel jobs, stop the daemons by pid, remove DIR
#   scripts/slurm-dev-cluster.sh status [DIR]   sinfo, squeue and the daemons' pids
#   scripts/slurm-dev-cluster.sh down|drain|resume NODE [DIR]   node failure / maintenance / back
#   scripts/slurm-dev-cluster.sh kill-node|start-node NODE [DIR] SIGKILL / restart a node's slurmd
#   scripts/slurm-dev-cluster.sh stop-ctld|start-ctld [DIR]   a controller outage and its end
#
# DIR defaults to $TRAINYARD_SLURM_DIR, else ${TMPDIR:-/tmp}/trainyard-slurm. Clients need
# `export SLURM_CONF=DIR/slurm.conf` (start prints it and writes it to DIR/env).
#
# Ports: slurmctld listens on BASE and node nK on BASE+K. BASE is $TRAINYARD_SLURM_PORT_BASE if
# set, else derived from DIR's path (12000 + 10*(cksum % 790), so below both the launcher's
# slurm.port_range 20000-32767 and Linux's ephemeral ports), moved up in steps of 10 while any of
# those ports is in use, and retried on "Address already in use". So clusters in different
# directories coexist.
#
# Optional settings (environment, read by start): TRAINYARD_SLURM_NODES (3),
# TRAINYARD_SLURM_MIN_JOB_AGE (300 s a finished job stays in squeue), TRAINYARD_SLURM_PREEMPT_MODE
# (REQUEUE, or CANCEL), TRAINYARD_SLURM_GRACE_TIME (0 s, partition `low`),
# TRAINYARD_SLURM_EXTRA_CONF (lines appended to slurm.conf, for keys this script does not set).
# stop keeps DIR/log when TRAINYARD_SLURM_KEEP_LOGS=1.
#
# start --accounting (or TRAINYARD_SLURM_ACCOUNTING=1) adds real accounting, as a production
# cluster has it: a private mariadbd (datadir DIR/db/data, unix socket DIR/db/mariadbd.sock, no
# TCP port), slurmdbd on BASE+NODES+1, AccountingStorageType=accounting_storage/slurmdbd with
# AccountingStorageEnforce=associations,limits,qos, and the cluster, the accounts
# $TRAINYARD_SLURM_ACCOUNTS ("dev acct-a acct-b"; the first is the default) and the starting user
# in each of them, added with sacctmgr before slurmctld starts. Plain `sacct` then works, and
# sbatch refuses an account the user has no association with. About 3 s more at start.
#
# TRAINYARD_SLURM_CGROUP=1 confines jobs as a production cluster does: proctrack/cgroup and
# task/cgroup with cgroup v1 (ConstrainRAMSpace: a step's --mem is a memory cgroup limit, a task
# that exceeds it is OOM-killed and its step ends OUT_OF_MEMORY). Slurm names its groups
# slurm_<node>/uid_U/job_J/... from the root of each hierarchy, which would clash between two
# clusters with nodes n1..n3 on one host. So each cluster gets a group of its own,
# trainyard-slurm-<hash of DIR> (beneath this script's own group in each hierarchy), and every
# slurmd runs in a cgroup namespace rooted there with the hierarchies mounted at DIR/cgroup/<c>
# in a private mount namespace: Slurm sees its own tree, /proc/PID/cgroup inside the jobs is
# relative to it, and stop removes the whole group (nothing shows in the host's mount table).
#
# Every daemon is started with TRAINYARD_SLURM_CLUSTER=DIR on its own command line (never exported
# here, so this script and its callers never carry it). slurmstepd inherits it from slurmd, so stop
# can find every process of this cluster through /proc/PID/environ, and never touches another's.
set -euo pipefail
unset TRAINYARD_SLURM_CLUSTER

MARKER_VAR=TRAINYARD_SLURM_CLUSTER
usage() {
  sed -n '7,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

cmd="${1:-}"
[[ -n $cmd ]] || usage
shift
node=""
case "$cmd" in
  down | drain | resume | kill-node | start-node)
    node="${1:-}"
    [[ $node =~ ^n[0-9]+$ ]] || { echo "$cmd needs a node name (n1, n2, ...)" >&2; exit 2; }
    shift
    ;;
  start)
    if [[ ${1:-} == --accounting ]]; then
      TRAINYARD_SLURM_ACCOUNTING=1
      shift
    fi
    ;;
  stop | status | stop-ctld | start-ctld) ;;
  *) usage ;;
esac
D="${1:-${TRAINYARD_SLURM_DIR:-${TMPDIR:-/tmp}/trainyard-slurm}}"
mkdir -p "$(dirname "$D")"
D="$(cd "$(dirname "$D")" && pwd)/$(basename "$D")"
NODES="${TRAINYARD_SLURM_NODES:-3}"
export SLURM_CONF="$D/slurm.conf"
OWNED="$D/.trainyard-slurm-cluster"

log() { echo "slurm-dev-cluster: $*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# A pid from a pid file counts only if that process carries this cluster's marker (a stale pid
# file may name a pid the system has given to an unrelated process since).
pid_alive() { [[ -n ${1:-} ]] && grep -qszxF "$MARKER_VAR=$D" "/proc/$1/environ"; }
pid_of() { if [[ -s $1 ]]; then tr -dc '0-9' <"$1"; fi; }
daemon_pidfiles() {
  local f=("$D/munge/munged.pid")
  if accounting_mode || [[ -e $D/slurmdbd.conf ]]; then f+=("$D/mariadbd.pid" "$D/slurmdbd.pid"); fi
  f+=("$D/slurmctld.pid")
  local i
  for ((i = 1; i <= NODES; i++)); do f+=("$D/slurmd-n$i.pid"); done
  printf '%s\n' "${f[@]}"
}

# Pids of this cluster's processes: the daemons and slurmstepd (marker in their environment),
# and job processes that escaped their step (SLURM_JOB_ID set and this cluster's SLURM_CONF).
cluster_pids() {
  {
    grep -lszxF "$MARKER_VAR=$D" /proc/[0-9]*/environ
    grep -lszxF "SLURM_CONF=$D/slurm.conf" /proc/[0-9]*/environ | xargs -r grep -lsz '^SLURM_JOB_ID='
    # Whatever is in this cluster's cgroups (TRAINYARD_SLURM_CGROUP=1), as /proc/PID/x paths.
    cluster_groups | while read -r g; do
      [[ -d $g ]] && find "$g" -name cgroup.procs -exec cat {} + | sed 's|^|/proc/|; s|$|/x|'
    done
  } 2>/dev/null | awk -F/ -v self="$$" -v me="$BASHPID" '$3 != self && $3 != me { print $3 }' | sort -un || true
}

used_ports() {  # local ports of every TCP socket (v4 and v6), decimal, one per line
  local _ addr rest
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | while read -r _ addr rest; do
    [[ $addr == *:* && ${addr##*:} =~ ^[0-9A-Fa-f]+$ ]] && echo $((16#${addr##*:}))
  done | sort -un || true
}

pick_base() {
  local base i free used
  if [[ -n ${TRAINYARD_SLURM_PORT_BASE:-} ]]; then
    echo "$TRAINYARD_SLURM_PORT_BASE"
    return
  fi
  used=" $(used_ports | tr '\n' ' ') "
  base=$((12000 + 10 * ($(printf '%s' "$D" | cksum | cut -d' ' -f1) % 790) + ${1:-0}))
  for _ in $(seq 790); do
    ((base + NODES >= 19900)) && base=12000
    free=1
    for ((i = 0; i <= NODES + 1; i++)); do  # slurmctld, the nodes, slurmdbd
      if [[ $used == *" $((base + i)) "* ]]; then free=0; break; fi
    done
    if ((free)); then echo "$base"; return; fi
    base=$((base + 10))
  done
  echo "slurm-dev-cluster: no free ports between 12000 and 19900" >&2
  exit 1
}

write_conf() {
  local base=$1 host last=$((NODES)) mode="${TRAINYARD_SLURM_PREEMPT_MODE:-REQUEUE}"
  host="$(hostname)"
  local grace=""
  [[ ${TRAINYARD_SLURM_GRACE_TIME:-0} != 0 ]] && grace=" GraceTime=$TRAINYARD_SLURM_GRACE_TIME"
  cat >"$D/slurm.conf" <<CONF
# Written by scripts/slurm-dev-cluster.sh; docs/slurm.md explains each line.
ClusterName=trainyard-dev
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.sock
MpiDefault=none
SwitchType=switch/none
StateSaveLocation=$D/state
SlurmctldPidFile=$D/slurmctld.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdSpoolDir=$D/spool/%n
SlurmdPidFile=$D/slurmd-%n.pid
SlurmdLogFile=$D/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
$(track_conf)
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=256
GresTypes=gpu
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,bf_interval=1,default_queue_depth=1000
ReturnToService=2
SlurmdTimeout=10
KillWait=5
MinJobAge=${TRAINYARD_SLURM_MIN_JOB_AGE:-300}
InactiveLimit=0
$(accounting_conf "$base")
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
PreemptType=preempt/partition_prio
PreemptMode=$mode
NodeName=n[1-$last] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$((base + 1))-$((base + last))] CPUs=4 RealMemory=2000 Gres=gpu:fake:2 State=UNKNOWN
PartitionName=low Nodes=n[1-$last] Default=YES MaxTime=INFINITE PriorityTier=1 PreemptMode=$mode$grace State=UP
PartitionName=high Nodes=n[1-$last] MaxTime=INFINITE PriorityTier=10 PreemptMode=OFF State=UP
${TRAINYARD_SLURM_EXTRA_CONF:-}
CONF
  # Fake GPUs: character devices stand in for /dev/nvidia*, as in Slurm's own test suite.
  echo "NodeName=n[1-$last] Name=gpu Type=fake File=/dev/tty[1-2]" >"$D/gres.conf"
  echo "$base" >"$D/port-base"
  if cgroup_mode; then write_cgroup_conf; fi
  if accounting_mode; then write_slurmdbd_conf "$base"; fi
}

# --- cgroups (TRAINYARD_SLURM_CGROUP=1) -------------------------------------------------------
CGROUP_CONTROLLERS=(memory freezer cpuset devices)
# start reads TRAINYARD_SLURM_CGROUP; every later command (start-node) follows the mode the
# cluster was started in, which left DIR/cgroup/slurmd.sh only when confined.
cgroup_mode() {
  if [[ $cmd == start ]]; then [[ ${TRAINYARD_SLURM_CGROUP:-0} == 1 ]]; else [[ -f $D/cgroup/slurmd.sh ]]; fi
}
track_conf() {
  if cgroup_mode; then
    echo "# Confined (TRAINYARD_SLURM_CGROUP=1): cgroup v1 in this cluster's own group, see cgroup.conf."
    echo "ProctrackType=proctrack/cgroup"
    echo "TaskPlugin=task/cgroup"
  else
    echo "# No cgroups: processes are tracked through /proc, nothing is confined (no cgroup.conf either)."
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
  fi
}
# This cluster's group in hierarchy $1 (absolute path), beneath this script's own group there.
cluster_cgroup() {
  local own
  own="$(awk -F: -v c="$1" '{ n = split($2, a, ","); for (i = 1; i <= n; i++) if (a[i] == c) print $3 }' /proc/self/cgroup | head -n1)"
  [[ -d /sys/fs/cgroup/$1$own ]] || own=""
  echo "/sys/fs/cgroup/$1${own%/}/trainyard-slurm-$(printf '%s' "$D" | cksum | cut -d' ' -f1)"
}
write_cgroup_conf() {
  local c swap=no
  for c in "${CGROUP_CONTROLLERS[@]}"; do
    [[ -f /sys/fs/cgroup/$c/cgroup.procs ]] || { log "TRAINYARD_SLURM_CGROUP=1 needs the cgroup v1 $c hierarchy at /sys/fs/cgroup/$c" >&2; return 1; }
  done
  # Swap counts against the limit where the kernel accounts it, so a task is killed, not swapped.
  [[ -f /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes ]] && swap=yes
  cat >"$D/cgroup.conf" <<CONF
# Written by scripts/slurm-dev-cluster.sh (TRAINYARD_SLURM_CGROUP=1). The hierarchies are mounted
# at $D/cgroup/<controller> inside each slurmd's namespaces, rooted at this cluster's group.
CgroupPlugin=cgroup/v1
CgroupMountpoint=$D/cgroup
CgroupAutomount=no
ConstrainRAMSpace=yes
ConstrainSwapSpace=$swap
AllowedSwapSpace=0
# The nodes advertise 4 CPUs each on a 2-core host: no CPU sets, and no device confinement (the
# fake GPUs are /dev/tty*).
ConstrainCores=no
ConstrainDevices=no
CONF
  for c in "${CGROUP_CONTROLLERS[@]}"; do
    local g
    g="$(cluster_cgroup "$c")"
    mkdir -p "$g" "$D/cgroup/$c"
    if [[ $c == cpuset ]]; then  # a new cpuset group has no CPUs or memory nodes until given
      cat "$(dirname "$g")/cpuset.cpus" >"$g/cpuset.cpus"
      cat "$(dirname "$g")/cpuset.mems" >"$g/cpuset.mems"
    fi
    echo "$g" >>"$D/cgroup-groups"
  done
  # What spawn_slurmd runs: $0 is DIR, then slurmd's command line.
  {
    echo '#!/bin/sh'
    echo '# Written by scripts/slurm-dev-cluster.sh: starts a slurmd in this cluster'"'"'s cgroups.'
    echo 'set -e'
    for c in "${CGROUP_CONTROLLERS[@]}"; do echo "echo \$\$ >'$(cluster_cgroup "$c")/cgroup.procs'"; done
    echo "exec unshare --cgroup --mount --propagation private -- sh -c 'for c in ${CGROUP_CONTROLLERS[*]}; do mount -t cgroup -o \$c cgroup-\$c \"\$0/cgroup/\$c\" || exit 1; done; exec \"\$@\"' '$D' \"\$@\""
  } >"$D/cgroup/slurmd.sh"
}
# This cluster's groups, as start recorded them (the script's own group may differ at stop).
cluster_groups() { if [[ -s $D/cgroup-groups ]]; then cat "$D/cgroup-groups"; fi; }
# Removes this cluster's groups bottom up (Slurm's job groups too), once no process is in them.
remove_cgroups() {
  local g
  while read -r g; do
    [[ $g == */trainyard-slurm-* && -d $g ]] || continue
    find "$g" -depth -type d -exec rmdir {} + 2>/dev/null || true
    if [[ -d $g ]]; then
      log "cannot remove the cgroup $g: processes in it: $(find "$g" -name cgroup.procs -exec cat {} + 2>/dev/null | tr '\n' ' ')" >&2
      return 1
    fi
  done < <(cluster_groups)
  rm -f "$D/cgroup-groups"
}

# --- accounting (start --accounting, TRAINYARD_SLURM_ACCOUNTING=1) ------------------------------
accounting_mode() { [[ ${TRAINYARD_SLURM_ACCOUNTING:-0} == 1 ]]; }
dbd_port() { echo $(($1 + NODES + 1)); }
accounting_conf() {
  if accounting_mode; then
    echo "# Accounting (start --accounting): slurmdbd on port $(dbd_port "$1") with a private mariadbd;"
    echo "# a job needs an association (account + user) and may use only its QOS and limits."
    echo "AccountingStorageType=accounting_storage/slurmdbd"
    echo "AccountingStorageHost=127.0.0.1"
    echo "AccountingStoragePort=$(dbd_port "$1")"
    echo "AccountingStoragePass=$D/munge/munge.sock"
    echo "AccountingStorageEnforce=associations,limits,qos"
  else
    echo "# No slurmdbd: sacct -c reads finished jobs from the jobcomp file below."
    echo "AccountingStorageType=accounting_storage/none"
  fi
}
# slurmdbd reads slurmdbd.conf next to slurm.conf; it must be private to SlurmUser. The database
# is reached through mariadbd's unix socket (StorageHost=localhost and MYSQL_UNIX_PORT in
# slurmdbd's environment), as the starting user (unix_socket authentication, no password).
write_slurmdbd_conf() {
  cat >"$D/slurmdbd.conf" <<CONF
# Written by scripts/slurm-dev-cluster.sh (start --accounting).
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
DbdAddr=127.0.0.1
DbdHost=localhost
DbdPort=$(dbd_port "$1")
SlurmUser=$(id -un)
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageLoc=slurm_acct_db
StorageUser=$(id -un)
LogFile=$D/log/slurmdbd.log
PidFile=$D/slurmdbd.pid
DebugLevel=info
CONF
  chmod 0600 "$D/slurmdbd.conf"
}
# mariadbd in DIR/db with no TCP port and no systemd: an empty datadir is filled at its first
# start by an init file (MariaDB's own system tables, then FLUSH PRIVILEGES turns the grant
# tables on), which is one InnoDB start instead of mariadb-install-db's two. Small InnoDB files,
# no durability: this database lives as long as the cluster.
start_mariadbd() {
  local user=()
  mkdir -p "$D/db/data"
  ((EUID == 0)) && user=(--user=root)
  {
    echo "create database if not exists mysql;"
    echo "use mysql;"
    echo "SET @auth_root_socket='$(id -un)';"
    cat /usr/share/mysql/mysql_system_tables.sql /usr/share/mysql/mysql_system_tables_data.sql
    echo "flush privileges;"
  } >"$D/db/init.sql"
  spawn mariadbd setsid -f mariadbd --no-defaults "${user[@]}" --datadir="$D/db/data" \
    --socket="$D/db/mariadbd.sock" --pid-file="$D/mariadbd.pid" --skip-networking \
    --skip-grant-tables --init-file="$D/db/init.sql" --log-error="$D/log/mariadbd.log" \
    --tmpdir="$D/db" --skip-log-bin --innodb-log-file-size=4M --innodb-buffer-pool-size=32M \
    --innodb-data-file-path=ibdata1:4M:autoextend --innodb-doublewrite=0 \
    --innodb-flush-log-at-trx-commit=0 --innodb-buffer-pool-dump-at-shutdown=0 \
    --innodb-buffer-pool-load-at-startup=0 --innodb-file-per-table=0 --innodb-flush-method=nosync
}
mariadbd_up() { [[ -S $D/db/mariadbd.sock ]] && grep -qs 'ready for connections' "$D/log/mariadbd.log"; }
dbd_up() { sacctmgr -n list cluster >/dev/null 2>&1; }
dbd_up_or_bind_failed() { bind_failed || dbd_up; }
# The cluster, the accounts and the starting user in each (its default account the first).
add_associations() {
  local accounts user cluster=trainyard-dev
  read -r -a accounts <<<"${TRAINYARD_SLURM_ACCOUNTS:-dev acct-a acct-b}"
  user="$(id -un)"
  sacctmgr -i add cluster "$cluster" >/dev/null
  sacctmgr -i add account "$(IFS=,; echo "${accounts[*]}")" cluster="$cluster" >/dev/null
  sacctmgr -i add user "$user" account="$(IFS=,; echo "${accounts[*]}")" \
    defaultaccount="${accounts[0]}" cluster="$cluster" >/dev/null
}
start_accounting() {
  local t0
  t0=$(now)
  start_mariadbd
  wait_until 30 mariadbd_up || { log "mariadbd did not start (see $D/log/mariadbd.log)" >&2; return 1; }
  spawn slurmdbd MYSQL_UNIX_PORT="$D/db/mariadbd.sock" slurmdbd
  if ! wait_until 30 dbd_up_or_bind_failed || bind_failed; then
    bind_failed && return 3
    log "slurmdbd did not answer (see $D/log/slurmdbd.log)" >&2
    return 1
  fi
  add_associations || { log "sacctmgr could not add the cluster's associations" >&2; return 1; }
  log "accounting: mariadbd and slurmdbd up, accounts ${TRAINYARD_SLURM_ACCOUNTS:-dev acct-a acct-b} for $(id -un), in $(since "$t0") s"
}

# Starts a daemon with the marker on its command line only. Its output goes to its log.
spawn() {
  local name=$1
  shift
  env "$MARKER_VAR=$D" SLURM_CONF="$D/slurm.conf" "$@" </dev/null >>"$D/log/$name.out" 2>&1
}

# slurmd in cgroup mode: joins this cluster's groups, then a new cgroup namespace (rooted there)
# and mount namespace, mounts each hierarchy at DIR/cgroup/<c> and execs slurmd. slurmstepd
# and the jobs inherit both namespaces.
spawn_slurmd() {
  local name=$1
  shift
  if ! cgroup_mode; then
    spawn "$name" "$@"
    return
  fi
  spawn "$name" sh "$D/cgroup/slurmd.sh" "$@"
}

wait_until() {  # wait_until SECONDS CMD...: polls CMD every 50 ms
  local deadline
  deadline=$(awk -v t="$1" -v n="$(now)" 'BEGIN { printf "%.2f", n + t }')
  shift
  until "$@"; do
    if awk -v d="$deadline" -v n="$(now)" 'BEGIN { exit !(n > d) }'; then return 1; fi
    sleep 0.05
  done
}

idle_nodes() { sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2 == "idle"' | sort -u | wc -l; }
all_idle() { [[ $(idle_nodes) -eq $NODES ]]; }
ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
munge_up() { munge -S "$D/munge/munge.sock" -n </dev/null 2>/dev/null | unmunge -S "$D/munge/munge.sock" >/dev/null 2>&1; }
no_jobs() { [[ -z $(squeue -h 2>/dev/null) ]]; }
running() { pid_alive "$(pid_of "$D/slurmctld.pid")"; }
bind_failed() { grep -qs 'Address already in use' "$D"/log/*.log "$D"/log/*.out; }
ctld_up_or_bind_failed() { bind_failed || ctld_up; }
all_idle_or_bind_failed() { bind_failed || all_idle; }

print_env() {
  log "cluster in $D: slurmctld on 127.0.0.1:$(cat "$D/port-base"), nodes n1..n$NODES"
  echo "export SLURM_CONF=$D/slurm.conf"
}

start_once() {  # returns 0 when up, 3 when a port was taken (caller retries), exits on other errors
  local base=$1 t0 i
  mkdir -p "$D/munge" "$D/state" "$D/log"
  chmod 0700 "$D/munge"
  for ((i = 1; i <= NODES; i++)); do mkdir -p "$D/spool/n$i"; done
  [[ -f $D/munge/munge.key ]] || {
    dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 0600 "$D/munge/munge.key"
  }
  write_conf "$base"
  log "ports: slurmctld $base, slurmd $((base + 1))-$((base + NODES))"

  t0=$(now)
  spawn munged munged -f --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" \
    --pid-file="$D/munge/munged.pid" --log-file="$D/log/munged.log" --seed-file="$D/munge/munged.seed"
  wait_until 10 munge_up || { log "munged did not start (see $D/log/munged.log)" >&2; return 1; }
  if accounting_mode; then
    local rc=0
    start_accounting || rc=$?
    ((rc == 0)) || return $rc
  fi

  spawn slurmctld slurmctld
  if ! wait_until 15 ctld_up_or_bind_failed || bind_failed; then
    bind_failed && return 3
    log "slurmctld did not answer (see $D/log/slurmctld.log)" >&2
    return 1
  fi
  for ((i = 1; i <= NODES; i++)); do spawn_slurmd "slurmd-n$i" slurmd -N "n$i"; done
  if ! wait_until 30 all_idle_or_bind_failed || bind_failed; then
    bind_failed && return 3
    log "nodes not idle after 30 s (see $D/log/slurmd-n*.log):" >&2
    sinfo -N >&2 || true
    return 1
  fi
  log "started munged,$(accounting_mode && echo " mariadbd, slurmdbd,") slurmctld, slurmd n1..n$NODES: $NODES nodes idle in $(since "$t0") s"
}

do_start() {
  if [[ -e $D && ! -e $OWNED && -n $(ls -A "$D" 2>/dev/null) ]]; then
    echo "slurm-dev-cluster: $D exists, is not empty and was not made by this script" >&2
    exit 1
  fi
  if [[ -e $OWNED ]]; then
    if running && ctld_up; then
      log "already running"
      print_env
      return 0
    fi
    log "found a stopped or broken cluster in $D: cleaning it up first"
    do_stop
  fi
  mkdir -p "$D"
  touch "$OWNED"
  local attempt rc offset=0
  for attempt in 1 2 3; do
    rc=0
    start_once "$(pick_base $offset)" || rc=$?
    if ((rc == 0)); then
      { echo "# source this file to use the cluster in $D"; echo "export SLURM_CONF=$D/slurm.conf"; } >"$D/env"
      print_env
      return 0
    fi
    if ((rc == 3)) && [[ -z ${TRAINYARD_SLURM_PORT_BASE:-} ]]; then
      log "a port was taken meanwhile (attempt $attempt); retrying with other ports"
      kill_everything quiet
      remove_cgroups || true
      rm -rf "$D/state" "$D/spool" "$D/log" "$D/db" "$D/munge/munged.pid" "$D"/slurm*.pid "$D/mariadbd.pid"
      mkdir -p "$D/log"
      offset=$((offset + 10 * attempt))
      continue
    fi
    kill_everything quiet
    remove_cgroups || true
    log "start failed; stopped what had started; logs are in $D/log (stop removes them)" >&2
    exit 1
  done
  log "start failed three times on taken ports" >&2
  exit 1
}

# SIGTERM by pid file, wait up to 5 s, then SIGKILL whatever of the cluster is left.
kill_everything() {
  local f p pids=()
  while read -r f; do
    p="$(pid_of "$f")"
    if pid_alive "$p"; then pids+=("$p"); fi
  done < <(daemon_pidfiles | tac)  # slurmd first, munged last
  if ((${#pids[@]})); then
    [[ ${1:-} == quiet ]] || log "SIGTERM daemons: ${pids[*]}"
    kill -TERM "${pids[@]}" 2>/dev/null || true
  fi
  local deadline=$((SECONDS + 5))
  while ((SECONDS < deadline)) && [[ -n $(cluster_pids) ]]; do sleep 0.1; done
  local left
  left="$(cluster_pids | tr '\n' ' ')"
  if [[ -n $left ]]; then
    [[ ${1:-} == quiet ]] || log "SIGKILL what is left of the cluster (daemons, slurmstepd, escaped job processes): $left"
    # Repeated: a job process may fork between a scan and the kill.
    deadline=$((SECONDS + 5))
    while [[ -n $left ]] && ((SECONDS < deadline)); do
      # shellcheck disable=SC2086
      kill -KILL $left 2>/dev/null || true
      sleep 0.1
      left="$(cluster_pids | tr '\n' ' ')"
    done
  fi
}

do_stop() {
  if [[ ! -e $OWNED ]]; then
    if [[ -n $(cluster_pids) ]]; then
      log "no cluster directory $D, but processes carry its marker: killing them"
      kill_everything
    else
      log "no cluster in $D: nothing to stop"
    fi
    return 0
  fi
  local t0
  t0=$(now)
  if running && ctld_up; then
    local users
    users="$(squeue -h -o '%u' 2>/dev/null | sort -u || true)"
    if [[ -n $users ]]; then
      log "cancelling jobs of: $(echo "$users" | tr '\n' ' ')"
      local u
      for u in $users; do scancel -u "$u" 2>/dev/null || true; done
      # KillWait (5 s) bounds how long tasks may ignore SIGTERM.
      if ! wait_until 15 no_jobs; then
        log "jobs still listed after 15 s; stopping anyway:" >&2
        squeue >&2 || true
      fi
    fi
  fi
  kill_everything
  if [[ -n $(cluster_pids) ]]; then
    log "processes left after SIGKILL: $(cluster_pids | tr '\n' ' ')" >&2
    exit 1
  fi
  remove_cgroups || exit 1
  if [[ ${TRAINYARD_SLURM_KEEP_LOGS:-0} == 1 ]]; then
    find "$D" -mindepth 1 -maxdepth 1 ! -name log -exec rm -rf {} +
    log "stopped in $(since "$t0") s; kept $D/log"
  else
    rm -rf "$D"
    log "stopped in $(since "$t0") s; removed $D"
  fi
}

do_status() {
  if [[ ! -e $OWNED ]]; then
    log "no cluster in $D"
    return 1
  fi
  local f p
  while read -r f; do
    p="$(pid_of "$f")"
    if pid_alive "$p"; then echo "$(basename "$f" .pid): pid $p"; else echo "$(basename "$f" .pid): not running"; fi
  done < <(daemon_pidfiles)
  echo "processes of this cluster: $(cluster_pids | wc -l)"
  if running && ctld_up; then
    print_env
    sinfo
    squeue
  else
    log "slurmctld is not running"
    return 1
  fi
}

case "$cmd" in
  start) do_start ;;
  stop) do_stop ;;
  status) do_status ;;
  down)
    scontrol update nodename="$node" state=down reason="${TRAINYARD_SLURM_REASON:-slurm-dev-cluster down}"
    log "$node down: its jobs end NODE_FAIL; with ReturnToService=2 it returns to idle when its slurmd registers again (use drain to keep it out)"
    ;;
  drain)
    scontrol update nodename="$node" state=drain reason="${TRAINYARD_SLURM_REASON:-slurm-dev-cluster drain}"
    log "$node draining: running jobs finish, no new ones start; 'resume $node' brings it back"
    ;;
  resume)
    scontrol update nodename="$node" state=resume
    log "$node resumed"
    ;;
  kill-node)
    p="$(pid_of "$D/slurmd-$node.pid")"
    pid_alive "$p" || { log "slurmd of $node is not running" >&2; exit 1; }
    kill -KILL "$p"
    log "SIGKILLed slurmd of $node (pid $p): Slurm marks it down after SlurmdTimeout (about 30 s here)"
    ;;
  start-node)
    if ! spawn_slurmd "slurmd-$node" slurmd -N "$node"; then
      log "slurmd of $node did not start$(cgroup_mode && echo " (confined: TRAINYARD_SLURM_CGROUP=1 at start)"); the end of $D/log/slurmd-$node.log:" >&2
      tail -n 5 "$D/log/slurmd-$node.log" "$D/log/slurmd-$node.out" 2>/dev/null >&2 || true
      exit 1
    fi
    log "started slurmd of $node$(cgroup_mode && echo " (confined, as the cluster was started)")"
    ;;
  stop-ctld)  # a controller outage: slurmctld stopped (its state saved), the nodes keep running
    p="$(pid_of "$D/slurmctld.pid")"
    pid_alive "$p" || { log "slurmctld is not running" >&2; exit 1; }
    kill -TERM "$p"
    ctld_gone() { ! pid_alive "$p"; }
    wait_until 15 ctld_gone || { log "slurmctld (pid $p) did not stop" >&2; exit 1; }
    log "stopped slurmctld (pid $p): clients get \"Unable to contact slurm controller\"; start-ctld brings it back"
    ;;
  start-ctld)
    spawn slurmctld slurmctld
    wait_until 15 ctld_up || { log "slurmctld did not answer (see $D/log/slurmctld.log)" >&2; exit 1; }
    log "started slurmctld"
    ;;
esac
