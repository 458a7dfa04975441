#!/usr/bin/env bash
# The verl adapter's own virtual environment (.venv-verl, or $RAGEN_VERL_VENV): verl 0.9 pins
# transformers < 5.11, older than the main environment's, so the two cannot share a venv.
#   bash scripts/install-verl.sh
#   .venv-verl/bin/python -m pytest tests/integrations/test_verl_agent_loop.py
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${RAGEN_VERL_VENV:-.venv-verl}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY="$VENV/bin/python"
pin="$VENV/torch-constraint.txt"
echo "torch==2.13.0" > "$pin"
# torch first and pinned: unpinned, pip resolves a multi-GB CUDA build; the constraint keeps verl's
# dependencies from replacing it.
$PY -m pip install -q --disable-pip-version-check "torch==2.13.0"
# verl.experimental.agent_loop imports cachetools, uvicorn and fastapi without declaring them.
$PY -m pip install -q --disable-pip-version-check -c "$pin" "verl==0.9.1" cachetools uvicorn fastapi
$PY -m pip install -q --disable-pip-version-check -c "$pin" --no-deps -e .
$PY -m pip install -q --disable-pip-version-check -c "$pin" numpy gymnasium orjson safetensors tokenizers \
  "pytest>=8" "pytest-timeout>=2.2"
