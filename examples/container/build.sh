#!/usr/bin/env bash
# Builds the example trainer image without a registry:
#   1. localhost/trainyard-base:bookworm: a debootstrap minbase of Debian 12 with python3,
#      imported into podman (about 40 s the first time; skipped when the image exists);
#   2. localhost/trainyard-example:1 from ./Containerfile (a second or two): the trainer, and the
#      `hypertune` module (python/hypertune, cloudml-hypertune's API) for hyperparameter tuning.
# Usage: examples/container/build.sh [--rebuild-base]   (root, or sudo; podman, runc, debootstrap)
set -euo pipefail
cd "$(dirname "$0")"
ENGINE=${TRAINYARD_CONTAINER_ENGINE:-podman}
BASE=localhost/trainyard-base:bookworm
IMAGE=${IMAGE:-localhost/trainyard-example:1}
# Debian's mirror as this machine's apt sources name it (deb822 .sources or one-line .list).
apt_mirror() {
  local f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uri=$(awk '/^URIs:/ {for (i = 2; i <= NF; i++) if ($i !~ /security/) {print $i; exit}}' "$f")
    if [ -n "$uri" ]; then echo "$uri"; return; fi
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    uri=$(awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {if ($i !~ /security/) {print $i; exit} else break}}' "$f")
    if [ -n "$uri" ]; then echo "$uri"; return; fi
  done
}
MIRROR=${DEBIAN_MIRROR:-$(apt_mirror)}
if [ -z "$MIRROR" ]; then
  echo "No Debian mirror found in /etc/apt/sources.list*; set DEBIAN_MIRROR" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
tmpfiles=()
trap 'rm -rf "${tmpfiles[@]}"' EXIT

# These hosts need runc, cgroupfs and lowered ulimits for podman (see docs/containers.md); the
# same settings trainyardd uses, in a private file (system files are left alone).
if [ -z "${CONTAINERS_CONF:-}" ] && [ "$(basename "$ENGINE")" = podman ] && command -v runc >/dev/null; then
  conf=$(mktemp)
  tmpfiles+=("$conf")
  printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\n' > "$conf"
  export CONTAINERS_CONF=$conf
fi

if [ "${1:-}" = "--rebuild-base" ] || ! $SUDO "$ENGINE" image exists "$BASE" 2>/dev/null; then
  rootfs=$(mktemp -d)
  echo "==> Building $BASE with debootstrap (Debian 12 minbase + python3 from $MIRROR)"
  $SUDO debootstrap --variant=minbase --include=python3 bookworm "$rootfs" "$MIRROR" >/dev/null
  $SUDO rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  echo "==> Importing it into $ENGINE"
  $SUDO tar -C "$rootfs" -c . | $SUDO "$ENGINE" import -q - "$BASE" >/dev/null
  $SUDO rm -rf "$rootfs"
else
  echo "==> $BASE is already in $ENGINE's local storage"
fi
echo "==> Building $IMAGE"
# The build context: this directory plus ../../python/hypertune (sources only, so that a
# __pycache__ does not change the layer). Unchanged files keep every layer cached.
ctx=$(mktemp -d)
tmpfiles+=("$ctx")
cp -pR Containerfile trainer "$ctx"/
mkdir "$ctx/hypertune"
cp -p ../../python/hypertune/*.py "$ctx/hypertune/"
find "$ctx" -name __pycache__ -prune -exec rm -rf {} +
$SUDO "$ENGINE" build -q -t "$IMAGE" -f "$ctx/Containerfile" "$ctx" >/dev/null
echo "==> $IMAGE is ready: $ENGINE run --rm $IMAGE --epochs 1"
