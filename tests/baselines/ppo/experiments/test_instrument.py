"""The dose-response validation: the dosed agent's construction and the checks its page applies."""

from __future__ import annotations

import numpy as np
import pytest

from baselines.ppo.experiments import instrument as I
from baselines.ppo.experiments import instrument_report as IR
from harness.agents import Agent, Context
from harness.mi import Pairs


class TemplateScorer(Agent):
    """Scores a reasoning by whether it names its prompt's key word: input-dependent text scores high under its own
    prompt, everything else is a flat template."""

    can_score = True
    spec = "template"

    def generate(self, requests):
        raise NotImplementedError

    def score_matrix(self, contexts, texts, wanted=None):
        sums = np.array([[-1.0 if c.messages[-1]["content"] in t else -3.0 for c in contexts] for t in texts])
        return sums, np.ones_like(sums)


def pairs(n: int = 8) -> Pairs:
    contexts = [Context(({"role": "user", "content": f"w{j}"},), "<think>") for j in range(n)]
    texts = [f"I see w{j} here" for j in range(n) for _ in range(2)]
    own = np.repeat(np.arange(n), 2)
    return Pairs(contexts, texts, own, np.eye(n, dtype=bool))


def test_dose_zero_keeps_every_reasoning_and_dose_one_draws_from_the_pool():
    base = pairs()
    kept, sources = I.dosed_pairs(base, list(base.texts), 0.0, np.random.default_rng(0))
    assert kept.texts == base.texts and sources == [base.texts.index(t) for t in base.texts]
    swapped, _ = I.dosed_pairs(base, list(base.texts), 1.0, np.random.default_rng(0))
    assert set(swapped.texts) <= set(base.texts) and swapped.texts != base.texts
    assert list(swapped.own) == list(base.own)  # the prompts stay: only the reasoning loses its input


def test_mi_falls_to_zero_and_retrieval_to_chance_under_a_full_dose():
    from harness.mi import score_pairs

    base, memo = pairs(), {}
    agent = TemplateScorer()
    undosed = score_pairs(agent, base, memo)
    assert undosed["retrieval_accuracy"].value == 1.0 and undosed["mi_estimate"].value > 1.0
    values = []
    for seed in range(200):
        dosed, _ = I.dosed_pairs(base, list(base.texts), 1.0, np.random.default_rng(seed))
        values.append(score_pairs(agent, dosed, memo)["retrieval_accuracy"].value)
    assert np.mean(values) == pytest.approx(1 / 8, abs=0.03)


def record(signal: dict[str, list[float]]) -> dict:
    draws = len(next(iter(signal.values())))
    by_dose = {
        str(q): [{k: v[i] + 0.001 * d for k, v in signal.items()} for d in range(3)] for i, q in enumerate(I.DOSES)
    }
    return {"by_dose": by_dose, "draws": draws}


def test_the_checks_pass_only_when_mi_falls_and_entropy_does_not():
    good = record({
        "mi_estimate": [0.5, 0.4, 0.3, 0.1, 0.0], "retrieval_accuracy": [0.9, 0.7, 0.5, 0.3, 0.1],
        "mi_zscore": [1.0, 0.8, 0.5, 0.2, 0.0], "token_entropy": [0.4, 0.41, 0.39, 0.4, 0.4],
        "cond_entropy_estimate": [0.5, 0.6, 0.7, 0.8, 0.9],
    })  # fmt: skip
    assert all(IR.checks(good).values())
    assert not IR.falls([0.5, 0.5, 0.3, 0.1, 0.0])
    assert IR.falls([0.5, 0.4, 0.3, 0.1, 0.0])
    entropy_falls = [0.9, 0.7, 0.5, 0.3, 0.1]
    assert not IR.does_not_fall(entropy_falls, [(0.9, 0.9)] + [(m - 0.05, m + 0.05) for m in entropy_falls[1:]])
    # a dip well inside the full dose's draw spread is not a fall (the undosed value is one draw, no width)
    assert IR.does_not_fall([0.259, 0.26, 0.258, 0.259, 0.258], [(0.259, 0.259)] + [(0.245, 0.268)] * 4)
