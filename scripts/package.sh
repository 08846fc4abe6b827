#!/usr/bin/env bash
# Builds the Debian package of Trainyard (CPack, DEB generator; docs/installation.md):
# configures build-pkg/ with the install prefix /usr (so /etc/trainyard and /usr/libexec follow
# GNUInstallDirs), builds the programs only, and writes build-pkg/trainyard_<version>-<release>_<arch>.deb.
# Usage: scripts/package.sh              (TRAINYARD_DEB_RELEASE=N for another build of a version)
set -euo pipefail
# One ccache entry serves build/ and build-pkg/ (the package test builds the programs again):
# paths relative to the checkout, and the build directory left out of the hash.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "$0")/.." && pwd)}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
cd "$(dirname "$0")/.."
BUILD_DIR=${PKG_BUILD_DIR:-build-pkg}
scripts/console-deps.sh
# Same build type as scripts/build.sh, so the shared ccache serves most objects.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
  -DCMAKE_INSTALL_PREFIX=/usr -DTRAINYARD_BUILD_TESTS=OFF -DTRAINYARD_BUILD_BENCH=OFF \
  -DTRAINYARD_DEB_RELEASE="${TRAINYARD_DEB_RELEASE:-1}" >/dev/null
echo "==> Building the programs ($BUILD_DIR)"
ninja -C "$BUILD_DIR" trainyardd trainyard trainyard-launcher trainyard-tuner
echo "==> Packaging"
rm -f "$BUILD_DIR"/trainyard_*.deb
(cd "$BUILD_DIR" && cpack -G DEB >/dev/null)
deb=$(ls "$BUILD_DIR"/trainyard_*.deb)
echo "==> $deb"
dpkg-deb --field "$deb" Package Version Architecture Depends
