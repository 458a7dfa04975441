"""Learner speed on CPU with the shipped tiny model (pytest-benchmark; not part of the test command).

    python -m pytest benchmarks/bench_ppo.py --benchmark-only -s

Reports one iteration (8 prompts × 8 samples on Bandit, rollout + filter + GRPO update) and the rollout and
training tokens/s it logged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

MODEL = Path(__file__).resolve().parents[1] / "baselines" / "tiny" / "model"


@pytest.mark.skipif(not (MODEL / "config.json").exists(), reason="the tiny model is not shipped in this checkout")
def test_iteration_time_tiny_8x8(benchmark, tmp_path):
    from baselines.ppo.config import preset
    from baselines.ppo.trainer import Trainer

    logged = []

    def one_iteration():
        config = preset("cpu-tiny", model=str(MODEL), env_id="ragen/Bandit-v0", iterations=1, filter_value=1.0,
                        mi_every=0, out_dir=str(tmp_path / f"run{len(logged)}"), tensorboard=False)  # fmt: skip
        logged.append(Trainer(config).train(resume=False)[0])

    benchmark.pedantic(one_iteration, rounds=2, iterations=1)
    last = logged[-1]
    benchmark.extra_info.update({k: last[k] for k in ("perf/rollout_tokens_per_s", "perf/train_tokens_per_s",
                                                       "timing/rollout_s", "timing/update_s") if k in last})  # fmt: skip
    print({k: round(v, 2) for k, v in benchmark.extra_info.items()})
