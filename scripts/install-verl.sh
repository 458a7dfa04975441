#!/usr/bin/env bash
# The verl adapter's own virtual environment (.venv-verl, or $RAGEN_VERL_VENV): verl 0.9 pins
# transformers < 5.11, older than the main environment's, so the two cannot share a venv.
#   bash scripts/install-verl.sh [--torch auto|cpu|cuda|skip]   # the torch build as scripts/install.sh picks it
#   .venv-verl/bin/python -m pytest tests/baselines/verl/test_verl_agent_loop.py
set -euo pipefail
cd "$(dirname "$0")/.."
torch_request=auto
if [ "${1:-}" = --torch ]; then torch_request=${2:-}; elif [ -n "${1:-}" ]; then torch_request=${1#--torch=}; fi
# build, reason, then pip's arguments (scripts/torch_build.py: the CPU build without an NVIDIA GPU)
plan=$(python3 scripts/torch_build.py "$torch_request")
mapfile -t torch_plan <<<"$plan"
VENV=${RAGEN_VERL_VENV:-.venv-verl}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
pin="$VENV/torch-constraint.txt"
echo "torch==2.13.0" > "$pin"
# torch first and pinned, in the build decided above; the constraint keeps verl's dependencies from replacing it.
if [ "${#torch_plan[@]}" -gt 2 ]; then
  $PY -m pip install -q --disable-pip-version-check "${torch_plan[@]:2}"
fi
# verl.experimental.agent_loop imports cachetools, uvicorn and fastapi without declaring them; verl's v1 trainer
# (its default) keeps trajectories in TransferQueue, which only verl's "verl-core" extra declares.
$PY -m pip install -q --disable-pip-version-check -c "$pin" "verl==0.9.1" cachetools uvicorn fastapi \
  "TransferQueue==0.1.11"
# verl's wheel installs its own test suite as a top-level "tests" package, which shadows this repository's tests/
# (a namespace package, so any regular "tests" on the path wins) and breaks every test's conftest import.
site=$($PY -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
if grep -qs '^tests/__init__.py' "$site"/verl-*.dist-info/RECORD; then rm -rf "$site/tests"; fi
$PY -m pip install -q --disable-pip-version-check -c "$pin" --no-deps -e .
$PY -m pip install -q --disable-pip-version-check -c "$pin" numpy gymnasium orjson safetensors tokenizers \
  "pytest>=8" "pytest-timeout>=2.2"
echo "install-verl.sh: $($PY -m harness.device): ${torch_plan[1]}"
