#!/usr/bin/env bash
# Formats every C++ file with clang-format (Debian 12: clang-format 14). --check only reports.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--check" ]; then
  clang-format --dry-run --Werror "${files[@]}"
  echo "clang-format: ${#files[@]} files clean"
else
  clang-format -i "${files[@]}"
fi
