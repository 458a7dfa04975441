#!/usr/bin/env bash
# A verl 0.9 GRPO run on a ragen env with RAGEN-2's settings, for GPUs (untested here: the machine this was
# written on has no GPU; the agent loop itself is tested on CPU against a stub server).
#   bash scripts/install-verl.sh && .venv-verl/bin/pip install vllm   # a vLLM build matching your CUDA and torch
#   MODEL=/path/to/Qwen2.5-3B-Instruct ENV_ID=ragen/Sokoban-v0 bash examples/verl_ragen_grpo.sh
#
# What it sets, and why:
# - episodes: every row routes to the ragen_agent loop (baselines/verl/config/agent_loops.yaml), which plays one
#   env episode against verl's rollout server; the episode return is the reward (rm_scores on the last token),
#   so no reward function is configured. A group is rollout.n samples of one env seed.
# - RAGEN-2's hyperparameters: 8 prompts x 16 samples, actor lr 1e-6, clip 0.2/0.28, entropy 0.001, no KL loss,
#   temperature 1, <= 400 tokens per turn.
# - the SNR filter: verl 0.9's own group filter, algorithm.filter_groups (DAPO dynamic sampling), with the
#   canonical reward (the episode return): it drops the groups whose returns do not vary and refills the batch
#   with new prompts. RAGEN-2's top-p rule on the in-group spread (the learner's and the TRL adapter's default)
#   has no hook in verl 0.9's trainer.
# - logs: console, W&B (WANDB_MODE=offline works without network) and TensorBoard; rollouts are dumped as JSONL
#   per step under runs/verl/rollouts. The MI family is not computed inside verl's trainer: run the harness on
#   the checkpoints it saves (same MI code as the learner): harness run hf:<checkpoint> --env "$ENV_ID".
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

$PY -m verl.trainer.main_ppo \
  data.train_files="$OUT/data/train.parquet" data.val_files="$OUT/data/val.parquet" \
  data.train_batch_size=8 data.max_prompt_length=1024 data.max_response_length=2048 \
  algorithm.adv_estimator=grpo algorithm.use_kl_in_reward=false \
  algorithm.filter_groups.enable=true algorithm.filter_groups.metric=reward algorithm.filter_groups.max_num_gen_batches=5 \
  actor_rollout_ref.model.path="$MODEL" \
  actor_rollout_ref.actor.optim.lr=1e-6 actor_rollout_ref.actor.ppo_mini_batch_size=32 \
  actor_rollout_ref.actor.clip_ratio_low=0.2 actor_rollout_ref.actor.clip_ratio_high=0.28 \
  actor_rollout_ref.actor.entropy_coeff=0.001 actor_rollout_ref.actor.use_kl_loss=false \
  actor_rollout_ref.actor.loss_agg_mode=token-mean \
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode=async actor_rollout_ref.rollout.n=16 \
  actor_rollout_ref.rollout.temperature=1.0 actor_rollout_ref.rollout.calculate_log_probs=true \
  actor_rollout_ref.rollout.prompt_length=1024 actor_rollout_ref.rollout.response_length=2048 \
  actor_rollout_ref.rollout.agent.default_agent_loop=ragen_agent \
  actor_rollout_ref.rollout.agent.agent_loop_config_path=baselines/verl/config/agent_loops.yaml \
  trainer.logger='["console","wandb","tensorboard"]' trainer.project_name=ragen-envs \
  trainer.experiment_name="$(basename "$ENV_ID")-grpo" trainer.rollout_data_dir="$OUT/rollouts" \
  trainer.save_freq=20 trainer.default_local_dir="$OUT/checkpoints" trainer.total_training_steps=400 \
  trainer.n_gpus_per_node="${GPUS:-8}" trainer.nnodes=1 "$@"
