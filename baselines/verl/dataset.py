"""The verl dataset: one parquet row per env seed, in the columns verl's ``RLHFDataset`` reads.

``prompt`` is the first-turn chat (shown and length-filtered by verl; the agent loop rebuilds it from the env),
``agent_name`` routes the row to :class:`baselines.verl.RagenAgentLoop`, ``extra_info`` carries the env id, its
kwargs (as JSON, so rows of different envs share one schema), the seed and the per-turn token budget. A group
is ``actor_rollout_ref.rollout.n`` samples of one row: one seed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from baselines.env_check import check_env, check_seed, first_turn_chat

AGENT_NAME = "ragen_agent"
"""The name verl's agent-loop registry knows our loop by."""


def dataset_rows(
    env_id: str, seeds: Iterable[int], *, env_kwargs: dict[str, Any] | None = None, max_new_tokens: int = 400
) -> list[dict[str, Any]]:
    """The rows for ``seeds`` (validated: unknown id, bad kwargs and bad seeds fail here)."""
    kwargs = dict(env_kwargs or {})
    resolved = check_env(env_id, kwargs)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer (tokens per turn), got {max_new_tokens!r}")
    rows = []
    for index, seed in enumerate(check_seed(s) for s in seeds):
        messages, _ = first_turn_chat(resolved, kwargs, seed)
        rows.append(
            {
                "data_source": resolved,
                "prompt": messages,
                "agent_name": AGENT_NAME,
                "reward_model": {"style": "env", "ground_truth": ""},
                "extra_info": {
                    "env_id": resolved, "env_kwargs": json.dumps(kwargs, sort_keys=True), "seed": seed,
                    "max_new_tokens": max_new_tokens, "index": index,
                },
            }
        )  # fmt: skip
    if not rows:
        raise ValueError("seeds must name at least one env seed")
    return rows


def write_dataset(path: str | Path, env_id: str, seeds: Iterable[int], **options: Any) -> Path:
    """Write :func:`dataset_rows` to a parquet file for ``data.train_files`` / ``data.val_files``."""
    import pandas as pd

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(dataset_rows(env_id, seeds, **options)).to_parquet(path)
    return path
