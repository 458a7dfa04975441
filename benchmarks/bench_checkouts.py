"""The learner's update and its rollout on fixed work, compared across checkouts (before/after a change).

    python benchmarks/bench_checkouts.py --env sokoban3 --save rows.pt                      # roll out once
    python benchmarks/bench_checkouts.py --rows rows.pt --trees ../base,. --rounds 3         # the update
    python benchmarks/bench_checkouts.py --part rollout --env sokoban --trees ../base,. --rounds 3
    python benchmarks/bench_checkouts.py --rows rows.pt --dtypes float32,bfloat16-autocast,float32+compile

``--part update`` (default): the rows of one GRPO iteration (8 prompts x 8 samples, the shipped tiny model, 64
tokens per turn, all groups kept) are rolled out once and saved; each measurement is a fresh process that
loads them, warms up on one micro-batch and times ``Trainer._update`` on all rows from the loaded weights.
``--part rollout``: each measurement is a fresh process that warms up on one group and times
``collect_rollouts`` of the 8 groups (the decoder, the envs and the KV cache; seeded, so the same episodes in
every checkout that samples alike). ``--dtypes``: the learner's ``dtype`` values to compare in each checkout; a
``+compile`` suffix wraps the policy's backbone in ``torch.compile(dynamic=True)`` (compiled during the warm-up,
so compile time is not timed; a recompile for a new shape inside the timed update is). Each round runs every
checkout (and dtype) in turn, so they see the same load; the table gives each one's median and its ratio to the
first, and the load average seen. One torch thread. Timings only: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "baselines" / "tiny" / "model"
ENVS = {
    "bandit": ("ragen/Bandit-v0", {}),
    "sokoban": ("ragen/Sokoban-v0", {}),
    "sokoban3": ("ragen/Sokoban-v0", {"max_turns": 3}),
}
"""``sokoban3``: the 3-turn setting of ``bench_trainers.py`` (its instruction text differs from the default env's,
so the tiny tokenizer spells it out: a ~390-token first prompt instead of ~65)."""


def _config(env: str, out_dir: str, **overrides):
    from baselines.ppo.config import preset

    env_id, env_kwargs = ENVS[env]
    values = dict(
        model=str(MODEL), env_id=env_id, env_kwargs=env_kwargs, advantage="grpo", filter_value=1.0, mi_every=0,
        prompts_per_iteration=8, samples_per_prompt=8, minibatch_size=64, micro_batch_size=16, cpu_threads=1,
        checkpoint_every=0, iterations=1, out_dir=out_dir, tensorboard=False,
    )  # fmt: skip
    values.update(overrides)
    return preset("cpu-tiny", **values)


def save_rows(env: str, path: Path) -> None:
    """Roll out one iteration and save its rows (token ids, spans, group-relative advantages) as plain data."""
    import torch

    from baselines.ppo import batch as B
    from baselines.ppo.rollout import collect_rollouts
    from baselines.ppo.trainer import Trainer

    with tempfile.TemporaryDirectory() as scratch:
        trainer = Trainer(_config(env, scratch))
        cfg = trainer.config
        episodes = collect_rollouts(trainer.policy, trainer.tokenizer, cfg, 0, list(range(cfg.prompts_per_iteration)))
        rows, by_episode = B.build_rows(episodes)
        B.fill_advantages(episodes, by_episode, cfg)
    data = [
        dict(group=r.group, sample=r.sample, sequence=r.sequence, spans=r.spans, advantages=r.advantages) for r in rows
    ]
    torch.save({"env": env, "rows": data}, path)
    print(
        f"{len(rows)} rows, {sum(len(r.sequence) for r in rows)} positions, {sum(r.length for r in rows)} response tokens"
    )


def time_update(path: Path, dtype: str | None) -> dict:
    """A warm-up update on one micro-batch, then the timed update on all rows (this process's checkout)."""
    import torch

    from baselines.ppo import batch as B
    from baselines.ppo.trainer import Trainer

    saved = torch.load(path, weights_only=False)
    with tempfile.TemporaryDirectory() as scratch:
        name, compiled = (dtype or "").removesuffix("+compile"), (dtype or "").endswith("+compile")
        trainer = Trainer(_config(saved["env"], scratch, **({"dtype": name} if name else {})))
        if compiled:
            trainer.policy.model = torch.compile(trainer.policy.model, dynamic=True)
        policy = {k: v.clone() for k, v in trainer.policy.state_dict().items()}
        seconds = []
        for warmup in (True, False):  # the warm-up: one micro-batch (first-call set-up), not timed
            trainer.policy.load_state_dict(policy)
            trainer.optimizer = torch.optim.AdamW(trainer.policy.parameters(), lr=trainer.config.actor_lr)
            rows = [B.Row(**r) for r in saved["rows"]][: trainer.config.micro_batch_size if warmup else None]
            start = time.perf_counter()
            stats = trainer._update(rows, 0)
            seconds.append(time.perf_counter() - start)
    return {"seconds": seconds[-1], "check": stats["losses/pg_loss"]}


def time_rollout(env: str) -> dict:
    """A warm-up rollout of one group, then the timed rollout of all groups (this process's checkout)."""
    from baselines.ppo.rollout import collect_rollouts
    from baselines.ppo.trainer import Trainer

    with tempfile.TemporaryDirectory() as scratch:
        trainer = Trainer(_config(env, scratch))
        cfg = trainer.config
        trainer.policy.eval()
        collect_rollouts(trainer.policy, trainer.tokenizer, cfg, 1, [0])
        start = time.perf_counter()
        episodes = collect_rollouts(trainer.policy, trainer.tokenizer, cfg, 0, list(range(cfg.prompts_per_iteration)))
        seconds = time.perf_counter() - start
    tokens = sum(len(t.response_ids) for e in episodes for t in e.turns)
    return {"seconds": seconds, "check": tokens}


def compare(work: list[str], trees: list[str], rounds: int, dtypes: list[str]) -> list[dict]:
    """Interleaved rounds over the checkouts (and dtypes); one fresh process per measurement."""
    variants = [(tree, dtype) for tree in trees for dtype in dtypes]
    runs: dict[tuple, list[dict]] = {v: [] for v in variants}
    loads = []
    for _ in range(rounds):
        for tree, dtype in variants:
            env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve()), "OMP_NUM_THREADS": "1"}
            command = [sys.executable, __file__, "--worker", *work] + (["--dtype", dtype] if dtype else [])
            out = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=tree)
            runs[(tree, dtype)].append(json.loads(out.stdout.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
    base = statistics.median(r["seconds"] for r in runs[variants[0]])
    results = []
    for tree, dtype in variants:
        median = statistics.median(r["seconds"] for r in runs[(tree, dtype)])
        results.append({"tree": tree, "dtype": dtype or "default", "seconds": median, "speedup": base / median,
                        "all_s": [r["seconds"] for r in runs[(tree, dtype)]],
                        "check": runs[(tree, dtype)][0]["check"]})  # fmt: skip
    print(f"load average (1 min) over the rounds: {min(loads):.1f}-{max(loads):.1f}; medians of {rounds} rounds")
    print("| checkout | dtype | seconds | speed-up | check (pg_loss / response tokens) | per round |")
    print("|---|---|---|---|---|---|")
    for r in results:
        rounds_s = ", ".join(f"{s:.2f}" for s in r["all_s"])
        print(
            f"| {r['tree']} | {r['dtype']} | {r['seconds']:.2f} | {r['speedup']:.2f}x | {r['check']:.6g} | {rounds_s} |"
        )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("update", "rollout"), default="update")
    parser.add_argument("--env", choices=sorted(ENVS), default="sokoban3", help="workload (--save, --part rollout)")
    parser.add_argument("--save", type=Path, help="roll out once and save the rows here")
    parser.add_argument("--rows", type=Path, help="rows saved by --save")
    parser.add_argument("--trees", default=".", help="comma-separated checkouts to compare (the first is the base)")
    parser.add_argument(
        "--dtypes", default="", help="comma-separated learner dtypes to compare (default: the config's)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--dtype", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    if args.save:
        save_rows(args.env, args.save)
        return 0
    if args.part == "rollout":
        work = ["--part", "rollout", "--env", args.env]
    elif args.rows is None:
        parser.error("--rows is required for the update (make it with --save)")
    else:
        work = ["--rows", str(args.rows.resolve())]
    if args.worker:
        result = time_rollout(args.env) if args.part == "rollout" else time_update(args.rows, args.dtype)
        print(json.dumps(result))
        return 0
    results = compare(work, args.trees.split(","), args.rounds, args.dtypes.split(",") if args.dtypes else [None])
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
