"""Evaluation: a run's summary document, computed from its episode records (the metrics, and the MI family with
the agents' models). :mod:`harness.report` renders it; it computes nothing.

``summary.json`` holds one row per env × agent; every metric is ``{"value", "stderr", "n"}``, or
``{"value": null, "stderr": null, "n": 0, "unavailable": "<why>"}`` when it cannot be computed (an
agent that cannot score has no MI: it is reported as unavailable, never as 0). MI metrics are named
``<scheme>/<key>`` with scheme ``first_turn`` or ``trajectory``. Nothing in summary.json depends on
timing, worker count or backend.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from harness import metrics as m
from harness.agents.base import Agent
from harness.config import RunConfig
from harness.mi import COLLAPSE_KEYS, COLLAPSE_SEQ_KEYS, SCHEMES, collapse_for
from harness.records import EpisodeRecord, sort_episodes

__all__ = [
    "row_metrics",
    "summarize",
]

MI_KEYS = COLLAPSE_KEYS + COLLAPSE_SEQ_KEYS


def row_metrics(
    episodes: Sequence[EpisodeRecord], samples: int, *, replayable_only: bool = False
) -> dict[str, dict[str, Any]]:
    """The episode metrics of one (agent, env) row in summary order, each as JSON (unavailable with its reason when
    the episodes cannot support it); ``samples`` is the rollouts per seed (pass@k's k). ``replayable_only``: the
    metrics a replay of the episodes can check (the leaderboard's recomputation)."""
    out: dict[str, dict[str, Any]] = {}
    for metric in m.episode_metrics(replayable_only=replayable_only):
        try:
            estimate = metric.fn(episodes, samples) if metric.takes_samples else metric.fn(episodes)
            out[metric.name] = estimate.to_json()
        except (m.MetricUnavailable, ValueError) as exc:
            out[metric.name] = m.Unavailable.because(str(exc)).to_json()
    return out


def mi_batches(records: Sequence[EpisodeRecord]) -> dict[tuple[str, str], list[EpisodeRecord]]:
    """The records by (agent, env id), each batch in episode order: what the MI family scores per summary row."""
    grouped: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for record in sort_episodes(list(records)):
        grouped[(record["agent"], record["env_id"])].append(record)
    return dict(grouped)


def count_mi_pairs(progress: Any, spec: str, collapse: dict, mi_samples: int) -> None:
    """Advance agent ``spec``'s MI bar by the pairs its batch scored (``collapse``: :func:`harness.mi.collapse_for`'s
    result); each scheme planned ``mi_samples``, a small batch has fewer."""
    scored = sum(r["mi_estimate"].n for r in collapse.values() if not isinstance(r, str))
    progress.advance(spec, scored, budget=len(SCHEMES) * mi_samples)


def summarize(
    config: RunConfig,
    records: Sequence[EpisodeRecord],
    agents: dict[str, Agent],
    *,
    run_id: str = "",
    progress: Any = None,
    timings: dict[str, float] | None = None,
    mi_scored: dict[tuple[str, str], dict] | None = None,
) -> dict[str, Any]:
    """The summary document of a run's records; ``agents`` holds each spec's scoring agent when
    ``config.mi_samples`` > 0 (the caller builds them; the MI family runs them here).

    ``progress`` (a :class:`harness.progress.Progress` keyed by agent) advances by the MI pairs of each (agent, env)
    row; ``timings`` gets
    ``"mi_s"``, the seconds spent on the MI family (kept out of the summary, which must not depend on speed).
    ``mi_scored``: the MI family of some (agent, env) batches, already scored elsewhere (``harness run --ray``
    scores a GPU agent's batches in the Ray task that holds its model, ``--workers N`` every batch in its worker
    processes); those agents need no scoring agent here, and ``progress`` does not count them (the caller counted
    them as they were scored, with :func:`count_mi_pairs`).
    """
    mi_scored = mi_scored or {}
    elsewhere = {spec for spec, _ in mi_scored}
    missing = [spec for spec in config.agents if config.mi_samples and spec not in agents and spec not in elsewhere]
    if missing:
        raise ValueError(f"summarize: no scoring agent for {missing[0]!r} (needed for the MI family, mi_samples > 0)")
    grouped = mi_batches(records)
    rows = []
    for spec in config.agents:
        for plan in config.envs:
            episodes = grouped.get((spec, plan.env_id), [])
            metrics = row_metrics(episodes, plan.samples)
            if progress is not None and (spec, plan.env_id) not in mi_scored:
                progress.start(spec)
            started = time.perf_counter()
            if not config.mi_samples:
                collapse = dict.fromkeys(SCHEMES, "disabled (mi_samples = 0)")
            elif (spec, plan.env_id) in mi_scored:
                collapse = mi_scored[(spec, plan.env_id)]
            else:
                collapse = collapse_for(agents[spec], episodes, config.seed, config.mi_samples, config.mi_columns)
            if timings is not None:
                timings["mi_s"] = timings.get("mi_s", 0.0) + time.perf_counter() - started
            if progress is not None and (spec, plan.env_id) not in mi_scored:
                count_mi_pairs(progress, spec, collapse, config.mi_samples)
            for scheme, result in collapse.items():
                for key in MI_KEYS:
                    name = f"{scheme}/{key}"
                    if isinstance(result, str):
                        metrics[name] = m.Unavailable.because(result).to_json()
                    else:
                        metrics[name] = result[key].to_json()
            rows.append(
                {
                    "env_id": plan.env_id,
                    "agent": spec,
                    "episodes": len(episodes),
                    "seeds": plan.episodes,
                    "samples": plan.samples,
                    "metrics": metrics,
                }
            )
    return {
        "format_version": 1,
        "run_id": run_id,
        "rows": rows,
        "skipped_envs": dict(config.skipped_envs),
        "definitions": m.definitions(),
    }
