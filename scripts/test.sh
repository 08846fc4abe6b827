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
# Every libFuzzer harness replays its seed corpus, which keeps every input a fuzzer once crashed
# on (own build dir, clang; docs/fuzzing.md). TRAINYARD_SKIP_FUZZ=1 leaves it out;
# TRAINYARD_FUZZ_EXPLORE=1 also fuzzes each harness for FUZZ_TIME seconds.
if [ "${TRAINYARD_SKIP_FUZZ:-0}" != 1 ]; then
  echo "==> Fuzzing"
  scripts/fuzz.sh --regress
  if [ "${TRAINYARD_FUZZ_EXPLORE:-0}" = 1 ]; then scripts/fuzz.sh; fi
fi
