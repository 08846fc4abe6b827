#!/usr/bin/env bash
# The format check (run by scripts/test.sh, so by CI): every C++ file must be what clang-format 14
# makes of it with the repo's .clang-format. Lists the files that differ and fails; fix them with
#   clang-format-14 -i FILE...   (or: scripts/check-format.sh --fix)
set -euo pipefail
cd "$(dirname "$0")/.."
fix=0
[ "${1:-}" = "--fix" ] && fix=1
cf=${CLANG_FORMAT:-}
if [ -z "$cf" ]; then
  for candidate in clang-format-14 clang-format; do
    if command -v "$candidate" >/dev/null 2>&1; then cf=$candidate; break; fi
  done
fi
if [ -z "$cf" ]; then
  echo "check-format: clang-format 14 is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if ! "$cf" --version | grep -q "version 14\."; then
  echo "check-format: $cf is not clang-format 14 ($("$cf" --version)); set CLANG_FORMAT" >&2
  exit 1
fi
# Tracked and new (not ignored) files; build trees are ignored.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -co --exclude-standard -- '*.cc' '*.h' | sort -u)
else
  mapfile -t files < <(find src tests bench tools -name '*.cc' -o -name '*.h' | sort)
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if [ "$fix" = 1 ]; then
    "$cf" -i "$f"
  elif ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
    bad+=("$f")
  fi
done
if [ "${#bad[@]}" -gt 0 ]; then
  echo "check-format: ${#bad[@]} file(s) are not clang-format 14 clean:" >&2
  printf '  %s\n' "${bad[@]}" >&2
  echo "fix with: $cf -i FILE... (or scripts/check-format.sh --fix)" >&2
  exit 1
fi
echo "check-format: ${#files[@]} C++ files are clean"
