#!/usr/bin/env bash
# A verl 0.9 GRPO run on a ragen env with RAGEN-2's settings, its SNR filter and MI logging, for GPUs (the
# pieces are tested on CPU: the agent loop against a stub server, the filter and MI hook with verl's DataProto;
# a whole PPO step needs verl's GPU workers).
#   bash scripts/install-verl.sh && .venv-verl/bin/pip install vllm   # a vLLM build matching your CUDA and torch
#   MODEL=/path/to/Qwen2.5-3B-Instruct ENV_ID=ragen/Sokoban-v0 bash examples/verl_ragen_grpo.sh
#
# What it sets, and why:
# - the trainer: python -m baselines.verl.main with baselines/verl/config/ragen_ppo.yaml (verl's ppo_trainer
#   config plus a ragen section), on verl's legacy trainer (trainer.use_v1=false: RagenPPOTrainer,
#   baselines/verl/trainer.py), the one that also scores the MI family. Drop that override for verl's default v1
#   trainer: the same filter runs in its replay-buffer sampler (baselines/verl/sampler.py), without in-trainer MI.
# - episodes: every row routes to the ragen_agent loop (baselines/verl/config/agent_loops.yaml), which plays one
#   env episode against verl's rollout server; the episode return is the reward (rm_scores on the last token),
#   so no reward function is configured. A group is rollout.n samples of one env seed.
# - RAGEN-2's hyperparameters: 8 prompts x 16 samples, mini-batches of 2 prompts (32 episodes), actor lr 1e-6,
#   clip 0.2/0.28, entropy 0.001, no KL loss, temperature 1, <= 400 tokens per turn.
# - the SNR filter: RAGEN-2's top-p 0.9 rule on the in-group reward std (baselines.algos.filter, as in the
#   learner and the TRL adapter), applied by the trainer before old log-probs and advantages; kept groups are
#   trimmed to whole mini-batches (ragen.filter.apply=mask zeroes the dropped groups' response mask instead), an
#   empty selection skips the update, and 5 in a row end the run (ragen.filter.*).
# - MI: the harness's MI family on the pre-filter batch every 5 steps, scored by the actor (ragen.mi.*).
# - logs: console, W&B (WANDB_MODE=offline works without network) and TensorBoard: rollout/filter_*,
#   ragen/prefilter/* (the whole batch's return and success: verl's critic/score/* describe the kept groups),
#   collapse_first_turn/*, collapse_trajectory/* beside verl's own; rollouts are dumped as JSONL per step
#   under runs/verl/rollouts.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv-verl/bin/python}
MODEL=${MODEL:?set MODEL to a local chat model directory}
ENV_ID=${ENV_ID:-ragen/Sokoban-v0}
OUT=${OUT:-runs/verl}
TRAIN_SEEDS=${TRAIN_SEEDS:-4096}  # 8 prompts per step: 512 steps of distinct levels
VAL_SEEDS=${VAL_SEEDS:-64}
mkdir -p "$OUT/data"
$PY - <<EOF
from baselines.verl import write_dataset
write_dataset("$OUT/data/train.parquet", "$ENV_ID", range(0, $TRAIN_SEEDS), max_new_tokens=400)
write_dataset("$OUT/data/val.parquet", "$ENV_ID", range(1_000_000, 1_000_000 + $VAL_SEEDS), max_new_tokens=400)
EOF

$PY -m baselines.verl.main trainer.use_v1=false \
  data.train_files="$OUT/data/train.parquet" data.val_files="$OUT/data/val.parquet" \
  data.train_batch_size=8 data.max_prompt_length=1024 data.max_response_length=2048 \
  ragen.filter.mode=top_p ragen.filter.value=0.9 ragen.mi.every=5 ragen.mi.samples=64 \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.actor.optim.lr=1e-6 actor_rollout_ref.actor.ppo_mini_batch_size=2 \
  actor_rollout_ref.actor.clip_ratio_low=0.2 actor_rollout_ref.actor.clip_ratio_high=0.28 \
  actor_rollout_ref.actor.entropy_coeff=0.001 actor_rollout_ref.actor.use_kl_loss=false \
  actor_rollout_ref.actor.loss_agg_mode=token-mean \
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=16 \
  actor_rollout_ref.rollout.temperature=1.0 actor_rollout_ref.rollout.calculate_log_probs=true \
  actor_rollout_ref.rollout.prompt_length=1024 actor_rollout_ref.rollout.response_length=2048 \
  trainer.logger='["console","wandb","tensorboard"]' trainer.project_name=ragen-envs \
  trainer.experiment_name="$(basename "$ENV_ID")-grpo" trainer.rollout_data_dir="$OUT/rollouts" \
  trainer.save_freq=20 trainer.default_local_dir="$OUT/checkpoints" trainer.total_training_steps=400 \
  trainer.n_gpus_per_node="${GPUS:-8}" trainer.nnodes=1 "$@"
