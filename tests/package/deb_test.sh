#!/usr/bin/env bash
# The Debian package, installed for real: a Debian 12 container with systemd as PID 1 (podman),
# where the package is installed with dpkg (its Depends must be satisfied by what the image
# has: the packages its Depends name), started by systemd as the trainyard user, answers
# /healthz, runs a job, is upgraded to a second build while a job runs (the job survives and
# finishes, the data stays, an edited conffile is kept), removed (service and trainers stop,
# data and conffile stay) and purged (they go). docs/installation.md.
# Usage: tests/package/deb_test.sh FIRST.deb SECOND.deb     (root; podman, runc, debootstrap)
set -euo pipefail
DEB1=$(readlink -f "$1")
DEB2=$(readlink -f "$2")
ENGINE=${TRAINYARD_CONTAINER_ENGINE:-podman}
cd "$(dirname "$0")"

# podman on hosts like these: runc, cgroupfs, lowered ulimits (docs/containers.md).
tmpfiles=()
NAME=ty-deb-test-$$
cleanup() {
  "$ENGINE" rm -f -t 2 "$NAME" >/dev/null 2>&1 || true
  rm -rf "${tmpfiles[@]}"
}
trap cleanup EXIT
if [ -z "${CONTAINERS_CONF:-}" ] && command -v runc >/dev/null; then
  conf=$(mktemp)
  tmpfiles+=("$conf")
  printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n' > "$conf"
  export CONTAINERS_CONF=$conf
fi

# The image: debootstrap minbase + systemd + what the package depends on (by name, from its
# control file), from the mirror this machine's apt uses. Tagged by that list: rebuilt when
# the dependencies change.
deps=""
for name in $(dpkg-deb --field "$DEB1" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g' | sort -u); do
  # A virtual package (libspdlog1.10-fmt9): debootstrap needs the package providing it.
  if [ -z "$(apt-cache show --no-all-versions "$name" 2>/dev/null)" ]; then
    name=$(apt-cache showpkg "$name" | awk '/^Reverse Provides:/ {getline; print $1; exit}')
  fi
  deps="$deps$name,"
done
include="systemd,systemd-sysv,dbus,curl,${deps%,}"
IMAGE=localhost/trainyard-deb-test:$(echo "$include" | sha256sum | cut -c1-12)
if ! "$ENGINE" image exists "$IMAGE"; then
  mirror=${DEBIAN_MIRROR:-}
  if [ -z "$mirror" ]; then
    for f in /etc/apt/sources.list.d/*.sources; do
      [ -f "$f" ] || continue
      mirror=$(awk '/^URIs:/ {for (i = 2; i <= NF; i++) if ($i !~ /security/) {print $i; exit}}' "$f")
      [ -n "$mirror" ] && break
    done
  fi
  if [ -z "$mirror" ]; then
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      mirror=$(awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {if ($i !~ /security/) {print $i; exit} else break}}' "$f")
      [ -n "$mirror" ] && break
    done
  fi
  [ -n "$mirror" ] || { echo "No Debian mirror in /etc/apt/sources.list*; set DEBIAN_MIRROR" >&2; exit 1; }
  rootfs=$(mktemp -d)
  tmpfiles+=("$rootfs")
  echo "==> Building $IMAGE: debootstrap bookworm minbase + $include"
  debootstrap --variant=minbase --include="$include" bookworm "$rootfs" "$mirror" >/dev/null
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | "$ENGINE" import -q - "$IMAGE" >/dev/null
fi

debs=$(mktemp -d)
tmpfiles+=("$debs")
cp "$DEB1" "$debs/first.deb"
cp "$DEB2" "$debs/second.deb"
cp -r trainer "$debs/trainer"
chmod -R a+rX "$debs"
echo "==> Starting systemd in $NAME"
"$ENGINE" run -d --name "$NAME" --systemd=always -v "$debs:/debs:ro" "$IMAGE" /sbin/init >/dev/null
cin() { "$ENGINE" exec "$NAME" bash -c "$1"; }
for _ in $(seq 100); do
  state=$(cin "systemctl is-system-running 2>/dev/null" || true)
  case "$state" in running|degraded) break ;; esac
  sleep 0.2
done
echo "    systemd: $state"

# Helpers inside the container: the CLI against the local service, job states.
cin 'cat > /usr/local/bin/ty-wait <<"EOS"
#!/bin/bash
# ty-wait JOB STATE [SECONDS]: until the job is in STATE (fails on another terminal state).
export TRAINYARD_DATA_DIR=/var/lib/trainyard
for i in $(seq $((${3:-120} * 5))); do
  s=$(trainyard jobs describe "$1" --format json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)[\"state\"])" 2>/dev/null || true)
  [ "$s" = "$2" ] && exit 0
  case "$s" in SUCCEEDED|FAILED|CANCELLED) echo "job $1 is $s, not $2" >&2; trainyard jobs describe "$1" >&2; exit 1;; esac
  sleep 0.2
done
echo "job $1 did not reach $2 (last: $s)" >&2; exit 1
EOS
chmod +x /usr/local/bin/ty-wait'
health() { cin 'for i in $(seq 150); do curl -fsS http://127.0.0.1:8470/healthz >/dev/null 2>&1 && exit 0; sleep 0.2; done; journalctl -u trainyard --no-pager | tail -20; exit 1'; }
main_pid() { cin 'systemctl show -p MainPID --value trainyard'; }
check() { echo "    ok: $1"; }

echo "==> Install $(dpkg-deb --field "$DEB1" Version)"
cin 'dpkg -i /debs/first.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }'
cin 'systemctl is-active trainyard >/dev/null && systemctl is-enabled trainyard >/dev/null'
check "the service is enabled and active"
health
check "/healthz answers"
pid1=$(main_pid)
[ "$(cin "stat -c %U /proc/$pid1")" = trainyard ] || { echo "trainyardd runs as $(cin "stat -c %U /proc/$pid1")"; exit 1; }
check "trainyardd (pid $pid1) runs as the trainyard user"
cin '[ "$(stat -c %U:%a /var/lib/trainyard)" = trainyard:700 ] && [ -f /var/lib/trainyard/trainyard.db ]'
check "/var/lib/trainyard (trainyard, 0700) holds the store"
cin 'dpkg-query --showformat="\${Conffiles}" -W trainyard | grep -q /etc/trainyard/config.yaml'
check "/etc/trainyard/config.yaml is a conffile"
cin '[ -x /usr/libexec/trainyard/trainyard-launcher ] && trainyardd --config /etc/trainyard/config.yaml --print-config | grep -q "launcher_path: \"/usr/libexec/trainyard/trainyard-launcher\""'
check "trainyardd finds the launcher in /usr/libexec/trainyard"

echo "==> A job"
cin 'cp -r /debs/trainer /tmp/trainer'
cin 'cd /tmp && export TRAINYARD_DATA_DIR=/var/lib/trainyard && trainyard buckets create gs://pkgtest >/dev/null &&
    trainyard jobs submit training first_1 --package-path /tmp/trainer/trainer --module-name trainer.task \
      --staging-bucket gs://pkgtest --region us-central1 -- --lines 3 >/tmp/submit.log 2>&1 || { cat /tmp/submit.log; exit 1; }; ty-wait first_1 SUCCEEDED &&
    trainyard jobs logs first_1 | grep -q "line 2 of 3"'
check "first_1 SUCCEEDED with its log lines"

echo "==> Upgrade to $(dpkg-deb --field "$DEB2" Version) while a job runs"
cin 'cd /tmp && export TRAINYARD_DATA_DIR=/var/lib/trainyard && rm -f /tmp/go &&
    trainyard jobs submit training long_1 --package-path /tmp/trainer/trainer --module-name trainer.task \
      --staging-bucket gs://pkgtest --region us-central1 -- --lines 2 --wait-for /tmp/go >/tmp/submit.log 2>&1 || { cat /tmp/submit.log; exit 1; }
    ty-wait long_1 RUNNING'
cin 'echo "max_running_jobs: 8  # edited by the administrator" >> /etc/trainyard/config.yaml'
cin 'dpkg -i /debs/second.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }'
[ "$(cin "dpkg-query -W -f='\${Version}' trainyard")" = "$(dpkg-deb --field "$DEB2" Version)" ]
health
pid2=$(main_pid)
[ "$pid2" != "$pid1" ] || { echo "the service was not restarted by the upgrade"; exit 1; }
check "the upgrade restarted trainyardd (pid $pid1 -> $pid2)"
cin 'grep -q "edited by the administrator" /etc/trainyard/config.yaml'
check "the edited conffile was kept"
cin 'export TRAINYARD_DATA_DIR=/var/lib/trainyard && trainyard jobs describe long_1 --format json | grep -q "\"state\": \"RUNNING\""'
cin 'touch /tmp/go && ty-wait long_1 SUCCEEDED && export TRAINYARD_DATA_DIR=/var/lib/trainyard && trainyard jobs logs long_1 | grep -q "go found"'
check "long_1 ran across the upgrade (re-attached) and SUCCEEDED"
cin 'export TRAINYARD_DATA_DIR=/var/lib/trainyard && trainyard jobs logs first_1 | grep -q "line 2 of 3"'
check "first_1 and its logs survived the upgrade"

echo "==> Remove"
cin 'cd /tmp && export TRAINYARD_DATA_DIR=/var/lib/trainyard && rm -f /tmp/go &&
    trainyard jobs submit training left_1 --package-path /tmp/trainer/trainer --module-name trainer.task \
      --staging-bucket gs://pkgtest --region us-central1 -- --lines 1 --wait-for /tmp/go >/tmp/submit.log 2>&1 || { cat /tmp/submit.log; exit 1; }
    ty-wait left_1 RUNNING'
cin 'dpkg -r trainyard >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }'
cin '! systemctl is-active trainyard >/dev/null 2>&1'
cin 'for i in $(seq 100); do n=$(for p in /proc/[0-9]*; do readlink $p/exe 2>/dev/null; done | grep -c -E "trainyard|python3" || true); [ "$n" = 0 ] && exit 0; sleep 0.2; done; echo "left: $n processes"; exit 1'
check "the service and its trainers stopped"
cin '[ ! -e /usr/bin/trainyardd ] && [ -f /etc/trainyard/config.yaml ] && [ -f /var/lib/trainyard/trainyard.db ]'
check "binaries gone; the conffile and the data stay"

echo "==> Purge"
cin 'dpkg -P trainyard >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }'
cin '[ ! -e /etc/trainyard/config.yaml ] && [ ! -e /var/lib/trainyard ] && getent passwd trainyard >/dev/null'
check "the conffile and /var/lib/trainyard are gone (the system user stays)"
echo "==> The Debian package installs, runs, upgrades, removes and purges"
