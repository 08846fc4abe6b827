#!/usr/bin/env bash
# Configures (once) and builds Trainyard into build/ with Ninja and ccache.
set -euo pipefail
# One ccache entry serves build/ and build-pkg/ (the package test builds the programs again):
# paths relative to the checkout, and the build directory left out of the hash.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(cd "$(dirname "$0")/.." && pwd)}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
# The web console's npm dependencies, from the committed lock file (a no-op when installed).
scripts/console-deps.sh
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  echo "==> Configuring ($BUILD_DIR, ${CMAKE_BUILD_TYPE:-RelWithDebInfo})"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-RelWithDebInfo}" \
    -DTRAINYARD_WERROR="${TRAINYARD_WERROR:-OFF}" >/dev/null
fi
echo "==> Building ($(nproc) cores)"
ninja -C "$BUILD_DIR" "$@"
