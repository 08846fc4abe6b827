#!/usr/bin/env bash
# The test command: installs dependencies, builds, and runs every test (unit and integration).
# Usage: scripts/test.sh [ctest args], e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The format check fails the run on any C++ file clang-format 14 would change.
scripts/check-format.sh
scripts/build.sh
# The custom-container tests run the example trainer image (built without a registry).
examples/container/build.sh
echo "==> Running tests"
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure --timeout 1500 "$@")
# Every libFuzzer harness, briefly, over its seed corpus (own build dir, clang; docs/fuzzing.md).
# TRAINYARD_SKIP_FUZZ=1 leaves it out.
if [ "${TRAINYARD_SKIP_FUZZ:-0}" != 1 ]; then
  echo "==> Fuzzing"
  scripts/fuzz.sh
fi
