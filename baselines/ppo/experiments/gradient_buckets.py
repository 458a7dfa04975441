"""The SNR mechanism (RAGEN-2's gradient figure) in miniature: gradient norms per reward-std bucket.

``python -m baselines.ppo.experiments.gradient_buckets``

One large analysis batch per algorithm (36 prompt groups × 4 samples of ``ragen/Bandit-v0`` with
``risky_prob=1``, the shipped tiny model), split into 6 reward-std quantile buckets of 6 groups; per bucket, the
task, entropy and KL gradient norms from separate backward passes, no optimiser step
(:func:`baselines.ppo.diagnostics.grad_norm_buckets`, RAGEN's reporter). Dr.GRPO and GRPO are measured on the
initial policy; PPO after 4 iterations that train only the critic (actor lr 0), because a zero-initialised
critic makes A = R at the start. Each algorithm's result is written to ``docs/results/data/gradient_buckets/``
as soon as it is measured; one already there is not measured again.

What to expect: the task gradient of a group is bounded by c·√Var(R|x). Dr.GRPO's advantages are centred
returns, so its task norm grows with the bucket's reward std; GRPO divides by the group's std, which removes
exactly that scaling (every non-constant group has unit-variance advantages), so its task norm is flat across
the non-zero buckets; the entropy term does not depend on the rewards in either.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from baselines.ppo.experiments.miniature import MODEL, ROOT, SCRATCH

DATA = ROOT / "docs" / "results" / "data" / "gradient_buckets"
COMMAND = "python -m baselines.ppo.experiments.gradient_buckets"
ALGORITHMS = ("drgrpo", "grpo", "gae")
LABELS = {"drgrpo": "Dr.GRPO", "grpo": "GRPO", "gae": "PPO (warmed critic)"}
BUCKETS = 6
GROUPS = 36
CRITIC_WARMUP = 4
ENTROPY_COEF = 0.05
SETTING = dict(
    env_id="ragen/Bandit-v0", env_kwargs={"risky_prob": 1.0}, samples_per_prompt=4, max_new_tokens=64,
    actor_lr=2e-4, critic_lr=1e-4, entropy_coef=ENTROPY_COEF, kl_coef=0.0, minibatch_size=64, micro_batch_size=16,
    grad_buckets=BUCKETS, mi_every=0, temperature=1.0, dtype="float32", device="cpu", cpu_threads=1,
    tensorboard=False, checkpoint_every=0, seed=0,
)  # fmt: skip
DESCRIPTION = (
    f"{GROUPS} groups × 4 samples of ragen/Bandit-v0 (risky_prob=1), shipped tiny model, entropy coefficient "
    f"{ENTROPY_COEF}, {BUCKETS} quantile buckets of {GROUPS // BUCKETS} groups (bucket 0 lowest reward std), "
    f"minibatches of 64 rows; PPO after {CRITIC_WARMUP} critic-only iterations."
)


def measure(algorithm: str) -> dict:
    """The gradient norms per reward-std bucket of one algorithm in the setting above, as its data file's record."""
    import torch

    from baselines.algos.returns import episode_returns
    from baselines.ppo.config import PPOConfig
    from baselines.ppo.rollout import collect_rollouts
    from baselines.ppo.trainer import Trainer

    torch.set_num_threads(1)
    out_dir = SCRATCH / "gradient_buckets" / algorithm
    values = {**SETTING, "advantage": algorithm, "model": str(MODEL), "out_dir": str(out_dir)}
    iteration = 0
    if algorithm == "gae":  # warm the critic on ordinary batches, the policy untouched (actor lr 0)
        warmup = dict(actor_lr=0.0, prompts_per_iteration=16, iterations=CRITIC_WARMUP, filter_value=1.0,
                      filter_include_zero=True)  # fmt: skip
        warm = PPOConfig.from_dict({**values, **warmup})
        trainer = Trainer(warm)
        trainer.train(resume=False)
        iteration = CRITIC_WARMUP
        config = PPOConfig.from_dict({**values, "actor_lr": 0.0, "prompts_per_iteration": GROUPS})
        trainer.config = config
    else:
        config = PPOConfig.from_dict({**values, "prompts_per_iteration": GROUPS})
        trainer = Trainer(config)
    started = time.time()
    episodes = collect_rollouts(trainer.policy, trainer.tokenizer, config, iteration, list(range(GROUPS)))
    groups, returns = episode_returns(episodes)
    buckets = trainer.gradient_buckets(episodes, returns, groups)
    return {
        "algorithm": algorithm,
        "iteration": iteration,
        "success": float(sum(e.success for e in episodes) / len(episodes)),
        "buckets": buckets,
        "config": {**json.loads(config.to_json()), "model": "baselines/tiny/model", "out_dir": "runs/miniature"},
        "command": COMMAND,
        "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_s": round(time.time() - started, 1),
    }


def plot(data: dict[str, dict], path: Path) -> Path | None:
    """Task norm and RAGEN's c·‖∇H‖ per bucket, one panel per algorithm (None without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, axes = plt.subplots(1, len(data), figsize=(4.6 * len(data), 3.4), squeeze=False)
    for ax, (algorithm, record) in zip(axes[0], data.items(), strict=True):
        row = record["buckets"]
        present = [b for b in range(BUCKETS) if f"grad_norm/bucket{b}/reward_std" in row]
        stds = [row[f"grad_norm/bucket{b}/reward_std"] for b in present]
        width = 0.38
        xs = range(len(present))
        ax.bar([x - width / 2 for x in xs], [row.get(f"grad_norm/bucket{b}/task", 0) for b in present], width,
               label="‖∇ task‖")  # fmt: skip
        ax.bar([x + width / 2 for x in xs], [row.get(f"grad_norm/bucket{b}/entropy", 0) for b in present], width,
               label=f"c·‖∇H‖ (c={ENTROPY_COEF})")  # fmt: skip
        ax.set_xticks(list(xs), [f"{s:.2f}" for s in stds])
        ax.set_xlabel("bucket mean reward std")
        ax.set_title(LABELS[algorithm], fontsize=10)
        ax.grid(alpha=0.3, axis="y")
    axes[0][0].set_ylabel("gradient norm")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    """Measure each algorithm whose data file is missing and write it; returns the exit code."""
    if not (MODEL / "model.safetensors").exists():
        print(f"the shipped tiny model is missing: {MODEL.relative_to(ROOT)}", file=sys.stderr)
        return 2
    DATA.mkdir(parents=True, exist_ok=True)
    for algorithm in ALGORITHMS:
        target = DATA / f"{algorithm}.json"
        if target.exists():
            print(f"{algorithm}: already measured ({target.relative_to(ROOT)})", flush=True)
            continue
        print(f"{algorithm}: measuring", flush=True)
        record = measure(algorithm)
        target.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"{algorithm}: done in {record['wall_s']} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
