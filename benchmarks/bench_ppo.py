"""Learner speed on CPU with the shipped tiny model (pytest-benchmark; not part of the test command).

    python -m pytest benchmarks/bench_ppo.py --benchmark-only -s

One iteration of 8 prompts x 8 samples on Bandit (rollout + filter + update), one torch thread (faster than
two on a shared 2-core box), for PPO with a critic (``gae``, the preset's default) and for GRPO. Printed and
stored in ``extra_info``: the iteration's wall time split into rollout and update, generation tokens/s
(sampled tokens over rollout time) and training tokens/s (response tokens trained on, and every sequence
position the forward/backward passes process, prompts included, over update time).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

MODEL = Path(__file__).resolve().parents[1] / "baselines" / "tiny" / "model"
REPORTED = ("timing/rollout_s", "timing/update_s", "perf/rollout_tokens_per_s", "perf/train_tokens_per_s",
            "perf/train_positions_per_s", "rollout/response_tokens")  # fmt: skip


@pytest.mark.skipif(not (MODEL / "config.json").exists(), reason="the tiny model is not shipped in this checkout")
@pytest.mark.parametrize("advantage", ["gae", "grpo"])
def test_iteration_time_tiny_8x8(benchmark, tmp_path, advantage):
    from baselines.ppo.config import preset
    from baselines.ppo.trainer import Trainer

    logged = []
    trainers = []

    def setup():
        config = preset("cpu-tiny", model=str(MODEL), env_id="ragen/Bandit-v0", iterations=1, filter_value=1.0,
                        mi_every=0, advantage=advantage, cpu_threads=1, checkpoint_every=0,
                        out_dir=str(tmp_path / f"run{len(trainers)}"), tensorboard=False)  # fmt: skip
        trainers.append(Trainer(config))  # model loading is not part of the timed iteration
        return (), {}

    def one_iteration():
        logged.append(trainers[-1].iteration(0))

    benchmark.pedantic(one_iteration, setup=setup, rounds=3, iterations=1)
    benchmark.extra_info.update(
        {k: sum(row[k] for row in logged) / len(logged) for k in REPORTED if all(k in row for row in logged)}
    )
    print(advantage, {k: round(v, 2) for k, v in benchmark.extra_info.items()})
