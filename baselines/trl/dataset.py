"""The TRL dataset: one row per env seed; TRL's ``num_generations`` samples of a row form its group."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from baselines.env_check import check_env, check_seed, first_turn_chat


def make_dataset(env_id: str, seeds: Iterable[int], *, env_kwargs: dict[str, Any] | None = None):
    """A ``datasets.Dataset`` with a ``prompt`` column: each seed's first-turn chat (system = the env's
    instructions, user = turn 1's state), every message carrying ``env_seed`` and ``env_id``.

    TRL passes a ``rollout_func`` the prompts only, so the seed travels on the messages (chat templates
    ignore keys they do not use); identical first observations on different seeds (Bandit) stay distinct
    rows. ``prefill`` (``"<think>"`` for think-format envs) is a column for display; the rollout adds it.
    """
    from datasets import Dataset

    kwargs = dict(env_kwargs or {})
    resolved = check_env(env_id, kwargs)
    seeds = [check_seed(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one env seed")
    rows = []
    for seed in seeds:
        messages, prefill = first_turn_chat(resolved, kwargs, seed)
        rows.append(
            {
                "prompt": [{**m, "env_seed": seed, "env_id": resolved} for m in messages],
                "prefill": prefill,
                "env_seed": seed,
            }
        )
    return Dataset.from_list(rows)
