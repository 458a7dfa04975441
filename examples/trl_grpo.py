"""Train the shipped tiny model on Sokoban with TRL's GRPOTrainer, RAGEN-2's SNR filter and the MI family.

    pip install 'ragen-envs[trl]'            # TRL 1.16.x (scripts/install.sh installs it)
    python examples/trl_grpo.py              # 4 steps on CPU, a few minutes
    python examples/trl_grpo.py --steps 50 --report-to wandb --model /path/to/Qwen2.5-0.5B-Instruct

Each step: 8 env seeds x 8 samples of a 3-turn Sokoban episode (a group is one seed), the episode return as
the reward, groups whose returns barely vary dropped before the loss (top-p 0.9 on the in-group std), and every
2 steps the MI family on the whole batch (``collapse_first_turn/mi_estimate``: does the reasoning still depend on
the input?). Logs go to TensorBoard (``--out-dir``/runs) and, with ``--report-to wandb``, to W&B
(``WANDB_MODE=offline`` works without network).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

TINY = Path(__file__).resolve().parents[1] / "baselines" / "tiny" / "model"


def parse_args() -> argparse.Namespace:
    """The command line (parsed before torch, transformers and TRL are imported: ``--help`` answers at once)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(TINY), help="a local causal LM directory")
    parser.add_argument("--env", default="ragen/Sokoban-v0", help="any registered ragen/* id")
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=8, help="env seeds per step")
    parser.add_argument("--samples", type=int, default=8, help="samples per seed (the group)")
    parser.add_argument("--tokens", type=int, default=64, help="token budget per turn")
    parser.add_argument("--mi-every", type=int, default=2)
    parser.add_argument("--report-to", default="tensorboard", help="tensorboard, wandb, both (comma), or none")
    parser.add_argument("--out-dir", default="runs/trl_grpo")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental in TRL
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from baselines.trl import EnvRollout, MICallback, SNRFilterGRPOTrainer, episode_return, make_dataset

    torch.set_num_threads(1)  # the tiny model's small matmuls: one thread is faster on a shared CPU
    rollout = EnvRollout(args.env, max_turns=args.max_turns, max_new_tokens=args.tokens, seed=0)
    config = GRPOConfig(
        output_dir=args.out_dir, use_cpu=not torch.cuda.is_available(), max_steps=args.steps, seed=0,
        per_device_train_batch_size=args.prompts * args.samples, num_generations=args.samples,
        learning_rate=2e-5, beta=0.0, max_completion_length=args.tokens * args.max_turns, logging_steps=1,
        save_strategy="no", gradient_checkpointing=False, report_to=args.report_to.split(","),
    )  # fmt: skip
    trainer = SNRFilterGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32),
        processing_class=AutoTokenizer.from_pretrained(args.model),
        args=config,
        reward_funcs=episode_return,
        train_dataset=make_dataset(
            args.env, range(args.prompts * args.steps), env_kwargs={"max_turns": args.max_turns}
        ),
        rollout_func=rollout,
        callbacks=[MICallback(rollout, every=args.mi_every, samples=32)],
        filter_mode="top_p",
        filter_value=0.9,
    )
    trainer.train()
    for row in trainer.state.log_history:
        if "loss" in row:
            mi = row.get("collapse_first_turn/mi_estimate")
            print(
                f"step {row['step']}  return {row['reward']:+.3f}  success {row.get('rollout/success', 0):.3f}  "
                f"kept {row['rollout/filter_kept_ratio']:.2f}" + (f"  mi {mi:+.3f}" if mi is not None else "")
            )


if __name__ == "__main__":
    main()
