#!/usr/bin/env bash
# Installs the web console's npm dependencies exactly as console/package-lock.json pins them
# (`npm ci`), when console/node_modules is missing or older than the lock file. Called by
# scripts/install-deps.sh and scripts/build.sh. Without npm it says so and succeeds: the build
# then embeds a placeholder page instead of the console (docs/console.md).
set -euo pipefail
cd "$(dirname "$0")/../console"
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "==> console: npm not found, so trainyardd will embed a placeholder instead of the web" \
    "console (scripts/install-deps.sh installs Node.js and npm)" >&2
  exit 0
fi
echo "==> console: npm ci (the dependencies console/package-lock.json pins)"
# --ignore-scripts: no package's install script runs; esbuild's binary comes in its
# platform package (@esbuild/linux-x64), which needs none.
if ! npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error; then
  echo "==> console: npm ci failed; trainyardd will embed a placeholder instead of the console" >&2
  exit 0
fi
touch "$stamp"
