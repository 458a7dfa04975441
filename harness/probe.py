"""The fixed MI probe and the retrieval ceiling of a batch of prompts.

Retrieval accuracy asks whether a reasoning picks out its own prompt among the batch's prompts. When two prompts
share the feature a reasoning copies (two Bandit prompts with the same bold arm name), no policy can tell them
apart, so the batch itself caps retrieval: the **ceiling** of feature ``k`` is
``mean_i 1 / #{columns whose feature k equals row i's}``, the accuracy of a reasoning that carries feature ``k``
and nothing else (ties broken at random, as the estimator does). On a learner's batch, whose env seeds change
every iteration, the ceiling moves with the seeds drawn, not with the policy; readings taken on such a batch are
flagged (``shared_features``).

The **probe** removes that noise: env seeds chosen once per (env, arguments) so that the prompts are pairwise
distinguishable in every feature the env names (:meth:`ragen_envs.core.TextEnv.prompt_features`), rolled out
and scored at every MI measurement and never trained on. Its ceiling is 1 by construction, and the same prompts
are read at every iteration, so a change in its MI family is a change of the policy.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any

import gymnasium as gym
import numpy as np

import ragen_envs  # noqa: F401  (registers the ids)
from harness.training_log import CEILING, SHARED_FEATURES

__all__ = [
    "batch_ceilings",
    "feature_ceilings",
    "probe_seeds",
    "prompt_features",
    "shares_features",
]

PROBE_SCAN = 4096
"""Env seeds examined (from the start seed on) when looking for pairwise-distinguishable prompts."""


def prompt_features(env_id: str, kwargs: dict[str, Any], seed: int) -> dict[str, Hashable]:
    """The named key features of ``env_id``'s first prompt on ``seed``."""
    return next(features_by_seed(env_id, kwargs, [seed]))[1]


def features_by_seed(env_id: str, kwargs: dict[str, Any], seeds: Iterable[int]) -> Iterator[tuple[int, dict]]:
    """``(seed, features)`` of each seed's first prompt, in order, from one env reset on each seed in turn (an env's
    episode depends on its seed only, so one env serves them all)."""
    env = gym.make(env_id, **kwargs)
    try:
        for seed in seeds:
            env.reset(seed=seed)
            yield seed, dict(env.unwrapped.prompt_features())
    finally:
        env.close()


def probe_seeds(env_id: str, kwargs: dict[str, Any], count: int, start: int = 0) -> tuple[int, ...]:
    """``count`` env seeds from ``start`` on whose prompts are as distinguishable as the env allows.

    Greedy and deterministic: first, a seed is kept when none of its features equals the same feature of a seed
    kept before (every ceiling of the probe is then 1). An env with fewer distinct values of some feature than
    ``count`` (e.g. a small Sokoban room's player cells) cannot give that many; the rest are then the next seeds
    whose features differ as a whole from every kept seed's (distinct prompts, some ceilings below 1, which the
    probe's readings report).
    """
    if count < 2:
        raise ValueError(f"a probe needs at least 2 prompts (nothing to retrieve among fewer), got {count}")
    return _probe_seeds(env_id, json.dumps(kwargs, sort_keys=True), count, start)


@lru_cache(maxsize=64)
def _probe_seeds(env_id: str, kwargs_json: str, count: int, start: int) -> tuple[int, ...]:
    scanned: list[tuple[int, dict]] = []  # the seeds read so far; the second pass needs them all
    taken: dict[str, set] = {}
    kept: list[int] = []
    for seed, features in features_by_seed(env_id, json.loads(kwargs_json), range(start, start + PROBE_SCAN)):
        scanned.append((seed, features))  # first: every feature new (the scan stops as soon as count are kept)
        if not any(value in taken.get(name, ()) for name, value in features.items()):
            kept.append(seed)
            for name, value in features.items():
                taken.setdefault(name, set()).add(value)
            if len(kept) == count:
                return tuple(kept)
    wholes = {_whole(f) for s, f in scanned if s in kept}
    for seed, features in scanned:  # then: the prompt as a whole new
        if seed not in kept and _whole(features) not in wholes:
            kept.append(seed)
            wholes.add(_whole(features))
            if len(kept) == count:
                return tuple(sorted(kept))
    raise ValueError(
        f"{env_id} gave only {len(kept)} distinct prompts among seeds {start}..{start + PROBE_SCAN - 1} "
        f"(asked for {count}): ask for fewer probe prompts"
    )


def _whole(features: dict[str, Hashable]) -> tuple:
    return tuple(sorted(features.items()))


def feature_ceilings(features: Sequence[dict[str, Hashable]], own: Sequence[int]) -> dict[str, float]:
    """Per feature, the retrieval accuracy of a reasoning that carries only that feature.

    ``features[j]``: the features of column ``j``; ``own[i]``: the column of row ``i``. A feature missing from a
    column counts as its own distinct value.
    """
    if not features or len(own) == 0:
        raise ValueError("feature_ceilings needs at least one column and one row")
    names = sorted({name for f in features for name in f})
    out: dict[str, float] = {}
    for name in names:
        values = [f.get(name, ("<missing>", j)) for j, f in enumerate(features)]
        counts = {v: values.count(v) for v in set(values)}
        out[name] = float(np.mean([1.0 / counts[values[j]] for j in own]))
    return out


def shares_features(features: Sequence[dict[str, Hashable]]) -> bool:
    """Whether two columns share the value of some feature (retrieval is then capped below 1)."""
    seen: dict[str, set] = {}
    for f in features:
        for name, value in f.items():
            if value in seen.setdefault(name, set()):
                return True
            seen[name].add(value)
    return False


def batch_ceilings(records: Sequence[dict]) -> dict[str, float]:
    """The first-turn ceilings of a batch of episode records, keyed as the MI family's log keys.

    Columns are the distinct env seeds among the episodes whose first turn has reasoning and rows those episodes
    (exactly the first-turn sampler's pairs when it draws them all); ``ceiling/<feature>`` per feature and
    ``shared_features`` (1 when some feature is shared, so the batch's retrieval reading is capped by the batch).
    """
    eligible = [r for r in records if r["turns"] and r["turns"][0].get("reasoning")]
    if not eligible:
        return {}
    seeds = list(dict.fromkeys(r["seed"] for r in eligible))  # the columns, in first-seen order
    first = eligible[0]  # one batch is one env with one set of arguments
    features = [f for _, f in features_by_seed(first["env_id"], first.get("env_kwargs") or {}, seeds)]
    column_of = {seed: j for j, seed in enumerate(seeds)}
    own = [column_of[r["seed"]] for r in eligible]
    out = {CEILING + name: value for name, value in feature_ceilings(features, own).items()}
    out[SHARED_FEATURES] = float(shares_features(features))
    return out
