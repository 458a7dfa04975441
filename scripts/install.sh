#!/usr/bin/env bash
# One-step set-up on a fresh Debian 12 / Python 3.11 machine (no GPU, package registries only), into a
# virtual environment (.venv, or $RAGEN_VENV) so nothing depends on what else the machine's Python holds.
#   bash scripts/install.sh          # the package with the CPU LM stack, Ray and reporting
#   bash scripts/install.sh --test   # the same plus the system packages and tools the test suite needs
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RAGEN_VENV:-.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
with_tests=0
[ "${1:-}" = "--test" ] && with_tests=1

if [ "$with_tests" = 1 ] && command -v apt-get >/dev/null; then
  # bubblewrap: code sandbox; docker.io: the Docker sandbox backend (tests start a private daemon);
  # chromium: browser tests of the web shop and the leaderboard site.
  need=()
  for pkg in bubblewrap docker.io chromium; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  if [ ${#need[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
fi

# torch first and pinned: unpinned, pip resolves a multi-GB CUDA build.
$PY -m pip install -q --disable-pip-version-check "torch==2.13.0"
extras="llm,ray,report,docker,webshop,train"
[ "$with_tests" = 1 ] && extras="$extras,dev"
$PY -m pip install -q --disable-pip-version-check -e ".[$extras]"
