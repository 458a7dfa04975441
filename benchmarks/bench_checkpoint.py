"""Learner checkpoint save and load: safetensors + JSON (``baselines.ppo.checkpoint``) beside the pickle it replaced.

    python benchmarks/bench_checkpoint.py --rounds 7

The state is what ``Trainer.save`` writes for a PPO run on the shipped tiny model: the policy, its AdamW state
after one step, and the same for the critic (a second copy of the model). Each round times, interleaved on the
same CPU: ``torch.save`` and ``torch.load(weights_only=False)`` (the former format), ``torch.load(weights_only=True)``
(what the migration command uses), and ``checkpoint.save`` / ``checkpoint.load``. Prints the median wall
milliseconds of each and the ratios new / old.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from baselines.ppo import checkpoint

MODEL = Path(__file__).resolve().parents[1] / "baselines" / "tiny" / "model"


def learner_state() -> dict:
    """The checkpoint state of a PPO run on the tiny model after one (zero-gradient) optimiser step."""
    from transformers import AutoModelForCausalLM

    state: dict = {"next_iteration": 1, "config": {"model": str(MODEL), "actor_lr": 1e-6}}
    for name in ("policy", "critic"):
        model = AutoModelForCausalLM.from_pretrained(MODEL)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        optimizer.step()
        state[name] = model.state_dict()
        state[f"{name}_optimizer" if name == "critic" else "optimizer"] = optimizer.state_dict()
    return state


def main() -> None:
    """Time the contenders round by round and print medians and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)
    state = learner_state()
    times: dict[str, list[float]] = {}

    def timed(name, fn):
        start = time.perf_counter()
        fn()
        times.setdefault(name, []).append((time.perf_counter() - start) * 1e3)

    with tempfile.TemporaryDirectory() as folder:
        old, new = Path(folder) / "checkpoint.pt", Path(folder) / checkpoint.FILENAME
        for _ in range(args.rounds):
            timed("save: torch.save (pickle)", lambda: torch.save(state, old))
            timed("save: safetensors + JSON", lambda: checkpoint.save(new, state))
            timed("load: torch.load(weights_only=False)", lambda: torch.load(old, weights_only=False))
            timed("load: torch.load(weights_only=True)", lambda: torch.load(old, weights_only=True))
            timed("load: safetensors + JSON", lambda: checkpoint.load(new))
        sizes = {"pickle": old.stat().st_size, "safetensors": new.stat().st_size}
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"{name:40s} {value:8.1f} ms  (min {min(times[name]):.1f}, max {max(times[name]):.1f})")
    print(f"save ratio new/old: {medians['save: safetensors + JSON'] / medians['save: torch.save (pickle)']:.2f}x")
    print(
        f"load ratio new/old: "
        f"{medians['load: safetensors + JSON'] / medians['load: torch.load(weights_only=False)']:.2f}x"
    )
    print(f"file size: pickle {sizes['pickle'] / 1e6:.1f} MB, safetensors {sizes['safetensors'] / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
