"""The MI family scored in bfloat16 against float32: how far each value moves, in its own standard errors, and the
time it saves.

    python benchmarks/bench_mi_precision.py --seeds 0,1,2 --rounds 2

For each run seed the baseline preset is played without MI (``harness run baseline --seed S --mi-samples 0``:
every registered env, its seeds and samples, the 2-turn context, the 96-token budget); then the MI family of the
tiny agent's batches (both schemes, 64 pairs each, the pairs the run would draw) is scored by the shipped tiny model
loaded in ``float32`` and in ``bfloat16`` (``--dtype``: weights, activations and keys/values in that dtype), each
in a fresh process on one torch thread, the two alternating round by round so both see the same load. The pairs
are the same in both (their draws depend on the run seed and env only), so every difference is the precision's.

Reports, per key of the family, ``|bf16 − fp32| / stderr`` over every (seed, env, scheme) batch (the stderr fp32's
own: the sampling noise the estimate already carries): median, 90th percentile, max, and how many batches exceed
0.5 and 1; and each dtype's scoring seconds (all batches of a seed, median over rounds) with the load average seen.
Timings only: nothing here asserts a speed or a tolerance.
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DTYPES = ("float32", "bfloat16")
AGENT = "tiny"
MI_SAMPLES = 64
"""Pairs per scheme: ``harness run``'s default (the runs are played with MI off, so their config says 0)."""


def play(seed: int, out: Path) -> Path:
    """The baseline preset's episodes for run seed ``seed`` (no MI): the run folder."""
    run_id = f"seed-{seed}"
    command = [sys.executable, "-m", "harness.cli", "run", "baseline", "--seed", str(seed), "--mi-samples", "0",
               "--no-plots", "--quiet", "--out", str(out), "--run-id", run_id]  # fmt: skip
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return out / run_id


def score(run_dir: Path, dtype: str) -> dict:
    """This process: the MI family of the tiny agent's batches in ``run_dir`` scored in ``dtype``, and the seconds."""
    import dataclasses

    import torch

    from harness.agents.registry import make_agent
    from harness.mi import collapse_for
    from harness.records import EPISODES, read_episodes
    from harness.runner import load_config
    from harness.summary import mi_batches

    torch.set_num_threads(1)
    config, _ = load_config(run_dir)
    agent = make_agent(AGENT, dataclasses.replace(config.agent_options, dtype=dtype, device="cpu"))
    records, _ = read_episodes(run_dir / EPISODES)
    batches = {env: episodes for (spec, env), episodes in mi_batches(records).items() if spec == AGENT}
    values: dict = {}
    start = time.perf_counter()
    for env, episodes in sorted(batches.items()):
        for scheme, family in collapse_for(agent, episodes, config.seed, MI_SAMPLES).items():
            if isinstance(family, str):
                continue
            values[f"{env} {scheme}"] = {k: [e.value, e.stderr] for k, e in family.items()}
    return {"seconds": time.perf_counter() - start, "values": values}


def compare(runs: dict[int, Path], rounds: int) -> dict:
    """Interleaved rounds: every seed's batches in each dtype, each in a fresh process."""
    seconds = {(s, d): [] for s in runs for d in DTYPES}
    values, loads = {}, []
    for _ in range(rounds):
        for seed, run_dir in runs.items():
            for dtype in DTYPES:
                env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
                command = [sys.executable, __file__, "--worker", str(run_dir), "--dtype", dtype]
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=ROOT)
                result = json.loads(out.stdout.strip().splitlines()[-1])
                seconds[(seed, dtype)].append(result["seconds"])
                values[(seed, dtype)] = result["values"]
                loads.append(os.getloadavg()[0])
    return {"seconds": seconds, "values": values, "loads": loads}


DEGENERATE_SE = 1e-6
"""A stderr at or below this is a saturated batch (e.g. every reasoning retrieves its own prompt: MI at log N with
no spread), where a ratio to it means nothing; such batches are counted apart, with their largest |Δ|."""


def deviations(values: dict, seeds: list[int]) -> dict[str, dict[str, list[float]]]:
    """Per family key: ``ratios``, |bf16 − fp32| / fp32's stderr of every batch where both are finite and the
    stderr is above :data:`DEGENERATE_SE`; ``saturated``, |bf16 − fp32| of the batches where it is not."""
    out: dict[str, dict[str, list[float]]] = {}
    for seed in seeds:
        full, half = values[(seed, "float32")], values[(seed, "bfloat16")]
        for batch, family in full.items():
            for key, (value, stderr) in family.items():
                other = half.get(batch, {}).get(key)
                if other is None or not (np.isfinite(value) and np.isfinite(other[0]) and np.isfinite(stderr)):
                    continue
                entry = out.setdefault(key, {"ratios": [], "saturated": []})
                if stderr > DEGENERATE_SE:
                    entry["ratios"].append(abs(other[0] - value) / stderr)
                else:
                    entry["saturated"].append(abs(other[0] - value))
    return out


def report(result: dict, seeds: list[int]) -> None:
    loads = result["loads"]
    print(f"load average (1 min) over the rounds: {min(loads):.1f}-{max(loads):.1f}")
    print("| run seed | float32 s | bfloat16 s | fp32 / bf16 |")
    print("|---|---|---|---|")
    for seed in seeds:
        full = statistics.median(result["seconds"][(seed, "float32")])
        half = statistics.median(result["seconds"][(seed, "bfloat16")])
        print(f"| {seed} | {full:.1f} | {half:.1f} | {full / half:.2f}x |")
    print()
    print(
        "| key | batches | median \\|Δ\\|/SE | 90th pct | max | > 0.5 SE | > 1 SE | saturated (SE ≈ 0): batches, max \\|Δ\\| |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for key, entry in sorted(deviations(result["values"], seeds).items()):
        r, flat = np.asarray(entry["ratios"]), entry["saturated"]
        spread = (
            f"{np.median(r):.3f} | {np.percentile(r, 90):.3f} | {r.max():.3f} | {int((r > 0.5).sum())} | {int((r > 1).sum())}"
            if len(r)
            else "– | – | – | – | –"
        )
        print(f"| {key} | {len(r)} | {spread} | {len(flat)}, {max(flat, default=0.0):.2g} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated run seeds (default 0,1,2)")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds per seed and dtype (default 2)")
    parser.add_argument("--runs", type=Path, help="keep the played runs here (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="also write the raw values and seconds here")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dtype", choices=DTYPES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(score(args.worker, args.dtype)))
        return 0
    seeds = [int(s) for s in args.seeds.split(",") if s]
    with tempfile.TemporaryDirectory() as scratch:
        parent = args.runs or Path(scratch)
        runs = {seed: (parent / f"seed-{seed}" if (parent / f"seed-{seed}").exists() else play(seed, parent))
                for seed in seeds}  # fmt: skip
        result = compare(runs, args.rounds)
    report(result, seeds)
    if args.json:
        raw = {f"{s} {d}": {"seconds": result["seconds"][(s, d)], "values": result["values"][(s, d)]}
               for s in seeds for d in DTYPES}  # fmt: skip
        args.json.write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
