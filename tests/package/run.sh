#!/usr/bin/env bash
# Builds two builds of the Debian package (releases 1 and 2 of this version, scripts/package.sh)
# and runs deb_test.sh on them: install, start, upgrade 1 -> 2, remove, purge in a systemd
# container. Exit 77 (skipped) without root, podman, runc or debootstrap.
set -euo pipefail
cd "$(dirname "$0")/../.."
for tool in podman runc debootstrap dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is not installed"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIPPED: needs root (debootstrap, a systemd container)"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
TRAINYARD_DEB_RELEASE=1 scripts/package.sh
cp build-pkg/trainyard_*-1_*.deb "$out/"
TRAINYARD_DEB_RELEASE=2 scripts/package.sh
cp build-pkg/trainyard_*-2_*.deb "$out/"
tests/package/deb_test.sh "$out"/trainyard_*-1_*.deb "$out"/trainyard_*-2_*.deb
