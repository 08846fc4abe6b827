#!/usr/bin/env bash
# Builds every libFuzzer harness in fuzz/ with clang (ASan + UBSan) into its own build directory,
# then either
#   --regress  replays each harness's committed seed corpus (fuzz/corpus/<harness>/, which keeps
#              every input a fuzzer once crashed on) once: deterministic, the CI gate; or
#   (default)  fuzzes each for a fixed time over a scratch copy of that corpus with its dictionary
#              (fuzz/dict/<harness>.dict): exploration, which finds new inputs by chance.
# Fails on any crash, sanitizer report, leak, timeout or out-of-memory.
# Usage: scripts/fuzz.sh [--regress] [harness...]     (default: every fuzz/fuzz_*.cc)
# Environment: FUZZ_BUILD_DIR (build-fuzz), FUZZ_TIME seconds per harness (30),
#              FUZZ_JOBS harnesses run at once (nproc), FUZZ_ARTIFACTS where crashing inputs are
#              kept (a temp dir, printed).
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZ_BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
FUZZ_TIME=${FUZZ_TIME:-30}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}
mode=explore
if [ "${1:-}" = --regress ]; then
  mode=regress
  shift
fi

if [ $# -gt 0 ]; then
  harnesses=("$@")
else
  harnesses=()
  for f in fuzz/fuzz_*.cc; do harnesses+=("$(basename "$f" .cc)"); done
fi

start=$(date +%s)
if [ ! -f "$FUZZ_BUILD_DIR/build.ninja" ]; then
  echo "==> Configuring $FUZZ_BUILD_DIR (clang, TRAINYARD_FUZZ=ON)"
  cmake -S . -B "$FUZZ_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER=clang++ -DTRAINYARD_FUZZ=ON -DTRAINYARD_BUILD_TESTS=OFF \
    -DTRAINYARD_BUILD_BENCH=OFF >/dev/null
fi
echo "==> Building ${#harnesses[@]} fuzzers"
ninja -C "$FUZZ_BUILD_DIR" "${harnesses[@]}"
built=$(date +%s)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/trainyard-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
if [ -n "${FUZZ_ARTIFACTS:-}" ]; then
  artifacts=$FUZZ_ARTIFACTS own_artifacts=0
else
  artifacts=$(mktemp -d "${TMPDIR:-/tmp}/trainyard-fuzz-artifacts.XXXXXX") own_artifacts=1
fi
mkdir -p "$artifacts"

# Runs one harness; its output goes to $scratch/<harness>.log, its exit status is its result.
run_one() {
  local h=$1 corpus="$scratch/corpus/$1" args=()
  mkdir -p "$corpus" "$artifacts/$h"
  if [ "$mode" = regress ]; then
    # -runs=0 executes every input of the corpus once and stops.
    "$FUZZ_BUILD_DIR/fuzz/$h" "fuzz/corpus/$h" -runs=0 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/$h/" >"$scratch/$h.log" 2>&1
    return
  fi
  if [ -d "fuzz/corpus/$h" ]; then cp fuzz/corpus/"$h"/* "$corpus"/; fi
  if [ -f "fuzz/dict/$h.dict" ]; then args+=("-dict=fuzz/dict/$h.dict"); fi
  "$FUZZ_BUILD_DIR/fuzz/$h" "$corpus" "${args[@]}" -max_total_time="$FUZZ_TIME" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/$h/" \
    >"$scratch/$h.log" 2>&1
}

if [ "$mode" = regress ]; then
  echo "==> Replaying each harness's seed corpus, $FUZZ_JOBS at a time"
else
  echo "==> Fuzzing each for ${FUZZ_TIME}s, $FUZZ_JOBS at a time"
fi
declare -A pids=()
failed=()
wait_one() {
  local h
  for h in "${!pids[@]}"; do
    if ! kill -0 "${pids[$h]}" 2>/dev/null; then
      if wait "${pids[$h]}"; then
        echo "    $h: $(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$scratch/$h.log" |
          grep -Eo '[0-9]+$') executions, $(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$scratch/$h.log" |
          tail -1), no finding"
      else
        echo "    $h: FAILED"
        tail -n 60 "$scratch/$h.log"
        failed+=("$h")
      fi
      unset "pids[$h]"
      return
    fi
  done
  sleep 1
}
for h in "${harnesses[@]}"; do
  while [ ${#pids[@]} -ge "$FUZZ_JOBS" ]; do wait_one; done
  run_one "$h" &
  pids[$h]=$!
done
while [ ${#pids[@]} -gt 0 ]; do wait_one; done

end=$(date +%s)
echo "==> Fuzzing: build $((built - start))s, runs $((end - built))s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "==> Fuzzers with findings: ${failed[*]}; inputs in $artifacts" >&2
  exit 1
fi
if [ "$own_artifacts" = 1 ]; then rm -rf "$artifacts"; fi
echo "==> ${#harnesses[@]} fuzzers ran without a finding"
