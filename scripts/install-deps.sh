#!/usr/bin/env bash
# Installs what Trainyard needs to build, test and run trainers, from Debian 12 packages only.
# Quick when everything is already installed (one dpkg query, no apt-get call).
set -euo pipefail

PACKAGES=(
  # build
  cmake ninja-build g++ ccache pkg-config clang-format
  libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev
  libsqlite3-dev libssl-dev libgtest-dev libgmock-dev libpcre2-dev
  # runtime: the default Python runtime and its ML stack, pip/venv for trainer packages
  python3 python3-pip python3-venv python3-setuptools python3-numpy python3-sklearn
  python3-joblib python3-torch
  # the built-in algorithms (XGBoost for boosted_trees and xgboost_dist)
  python3-xgboost
  # custom containers: podman with runc, and debootstrap for the example image's base
  podman runc debootstrap
  # the Debian package (scripts/package.sh: CPack with dpkg-shlibdeps)
  dpkg-dev
  # image pulls: a real registry on loopback for the tests (started by the test, not as a
  # service) and htpasswd -B for its basic-auth file
  docker-registry apache2-utils
  # tests, and the fuzzers (clang with libFuzzer and the sanitizer runtimes)
  python3-pytest curl clang libclang-rt-14-dev
  # the tuning engine (header-only) and the tuning benchmark's baseline
  libeigen3-dev liblbfgspp-dev python3-optuna
  # Google's Python API client, for the drop-in compatibility tests
  python3-googleapi python3-google-auth python3-httplib2 python3-oauth2client python3-uritemplate
  # Slurm (executor: slurm) and the dev cluster of scripts/slurm-dev-cluster.sh; no daemon starts
  slurmctld slurmd slurm-client munge
  # the dev cluster's accounting mode (slurm-dev-cluster.sh start --accounting): slurmdbd and a
  # private MariaDB server; neither starts as a service
  slurmdbd mariadb-server-core
  # the web console's browser tests (tests/integration/test_console.py)
  chromium
)

# The web console is built with Node.js (console/, docs/console.md): Debian's nodejs and npm,
# unless a Node.js with npm is already installed (another distribution's nodejs package ships npm
# itself and conflicts with Debian's npm package).
if ! command -v npm >/dev/null 2>&1; then
  PACKAGES+=(nodejs npm)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "==> All ${#PACKAGES[@]} Debian packages Trainyard needs are installed"
  "$(dirname "$0")/console-deps.sh"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "==> Installing ${#missing[@]} Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "==> Installed"
"$(dirname "$0")/console-deps.sh"
