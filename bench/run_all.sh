#!/usr/bin/env bash
# Runs every Trainyard benchmark in one go; each prints its result table and target verdicts.
#
#   bench/run_all.sh            the full set (about 11-13 minutes on 2 cores; tuning alone ~4,
#                               the load benchmark ~2)
#   bench/run_all.sh --quick    smaller sizes, to check that the benchmarks work (about 1 minute)
#
# Needs build/bin/{trainyardd,trainyard-launcher} (or TRAINYARD_BIN_DIR) and builds the C++ load
# generator ty_loadgen into build-bench/ when it is missing. Results are also written to
# bench/results-<date>.txt unless BENCH_OUT is set ('-' for none).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: bench/run_all.sh [--quick]" >&2; exit 2 ;;
esac

PY=/usr/bin/python3
BIN="${TRAINYARD_BIN_DIR:-build/bin}"
for b in trainyardd trainyard-launcher trainyard-tuner; do
  if [[ ! -x "$BIN/$b" ]]; then
    echo "$BIN/$b is missing: build it first (cmake -S . -B build -G Ninja && ninja -C build)" >&2
    exit 1
  fi
done

if [[ ! -x "$BIN/ty_loadgen" && -z "${TRAINYARD_BENCH_BIN_DIR:-}" ]]; then
  if [[ ! -f build-bench/build.ninja ]]; then
    cmake -S bench -B build-bench -G Ninja >/dev/null
  fi
  ninja -C build-bench -j2 ty_loadgen >/dev/null
fi

if [[ $quick == 1 ]]; then
  runs=(
    "bench/bench_overhead.py --runs 5"
    "bench/bench_creates.py --duration 3 --requests 5000"
    "bench/bench_list.py --jobs 10000 --requests 200"
    "bench/bench_logs.py --reps 1"
    "bench/bench_distributed.py --runs 2"
    "bench/bench_containers.py --runs 2"
    "bench/bench_tuning.py --quick --engine-cmd $BIN/trainyard-tuner"
    "bench/bench_load.py --quick"
  )
else
  runs=(
    "bench/bench_overhead.py"
    "bench/bench_creates.py"
    "bench/bench_list.py"
    "bench/bench_logs.py"
    "bench/bench_distributed.py"
    "bench/bench_containers.py"
    "bench/bench_tuning.py --engine-cmd $BIN/trainyard-tuner"
    "bench/bench_load.py"
  )
fi

out="${BENCH_OUT:-bench/results-$(date -u +%Y%m%dT%H%M%SZ).txt}"
run_all() {
  local commit
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  echo "Trainyard benchmarks, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $commit"
  echo "binaries: $BIN (trainyardd built $(date -u -r "$BIN/trainyardd" +%Y-%m-%dT%H:%M:%SZ));" \
    "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  local status=0
  for r in "${runs[@]}"; do
    echo
    echo "==> $PY $r"
    local t0=$SECONDS
    # shellcheck disable=SC2086
    $PY $r || { echo "FAILED: $r"; status=1; }
    echo "($((SECONDS - t0)) s)"
  done
  # The admission benchmark drives the Scheduler library directly (built in the full tree).
  if [[ -x "$BIN/ty_admission_bench" ]]; then
    echo
    echo "==> $BIN/ty_admission_bench --jobs 10000"
    "$BIN/ty_admission_bench" --jobs 10000 || { echo "FAILED: ty_admission_bench"; status=1; }
  else
    echo
    echo "(skipped ty_admission_bench: build it with ninja -C build ty_admission_bench)"
  fi
  return $status
}

if [[ "$out" == "-" ]]; then
  run_all
else
  run_all 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  echo "results written to $out"
  exit "$rc"
fi
