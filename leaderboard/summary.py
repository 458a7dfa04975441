"""The numbers the leaderboard shows, recomputed from replayed episodes, and the check of a run's summary.

Replayable metrics (success, return, turns) are recomputed here from the episodes and must equal the
run's ``summary.json``. Collapse metrics (MI proxies, entropy) need the model's log-probs, which a replay
does not have: they are read from the summary and shown as *self-reported*.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from leaderboard.records import EpisodeRecord

REPLAYABLE = ("success_rate", "mean_return", "mean_turns")
SELF_REPORTED = ("mi_estimate", "retrieval_accuracy", "retrieval_chance", "mi_zscore", "token_entropy",
                 "cond_entropy_estimate", "reasoning_entropy_estimate")  # fmt: skip


def _mean_se(values: list[float]) -> tuple[float, float]:
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, float("nan")
    var = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, math.sqrt(var / n)


def recompute_summary(records: list[EpisodeRecord], suite: Any) -> dict[str, Any]:
    """Per env of ``suite``: episodes, success rate ± se, mean return ± se, mean turns; and their macro mean."""
    by_env: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        by_env[record.env_id].append(record)
    envs: dict[str, Any] = {}
    for env_id in suite.env_ids:
        rows = by_env.get(env_id, [])
        if not rows:
            envs[env_id] = {"episodes": 0}
            continue
        success, success_se = _mean_se([float(r.success) for r in rows])
        ret, ret_se = _mean_se([r.episode_return for r in rows])
        turns, _ = _mean_se([float(len(r.turns)) for r in rows])
        envs[env_id] = {
            "episodes": len(rows),
            "success_rate": success,
            "success_se": success_se,
            "mean_return": ret,
            "return_se": ret_se,
            "mean_turns": turns,
        }
    rates = [v["success_rate"] for v in envs.values() if "success_rate" in v]
    overall = {"success_rate": math.fsum(rates) / len(rates) if rates else float("nan"), "envs": len(rates)}
    return {"envs": envs, "overall": overall}


def _summary_rows(summary_doc: Any) -> list[dict[str, Any]]:
    rows = summary_doc.get("rows") if isinstance(summary_doc, dict) else None
    return [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []


def _value(entry: Any) -> Any:
    return entry.get("value") if isinstance(entry, dict) else entry


def compare_summaries(summary_doc: Any, records: list[EpisodeRecord]) -> list[str]:
    """Problems where summary.json's replayable metrics differ from those recomputed from ``records``."""
    rows = _summary_rows(summary_doc)
    if not rows:
        return ["summary.json has no per-env rows"]

    class _Suite:
        env_ids = tuple(sorted({r.env_id for r in records}))

    mine = recompute_summary(records, _Suite)["envs"]
    problems = []
    for row in rows:
        env_id = row.get("env_id")
        if env_id not in mine:
            problems.append(f"summary.json has a row for {env_id!r}, which has no episodes")
            continue
        for key in REPLAYABLE:
            claimed = _value(row.get(key))
            actual = mine[env_id].get(key)
            if not isinstance(claimed, (int, float)) or isinstance(claimed, bool):
                problems.append(f"summary.json {env_id} {key}: missing or not a number")
            elif not math.isclose(claimed, actual, rel_tol=1e-9, abs_tol=1e-12):
                problems.append(f"summary.json {env_id} {key}: claims {claimed!r}, the episodes give {actual!r}")
    missing = sorted(set(mine) - {row.get("env_id") for row in rows})
    problems.extend(f"summary.json has no row for {env_id}" for env_id in missing)
    return problems


def self_reported_metrics(summary_doc: Any) -> dict[str, dict[str, float | None]]:
    """Per env: the collapse metrics the run reported (None where the agent could not score)."""
    out: dict[str, dict[str, float | None]] = {}
    for row in _summary_rows(summary_doc):
        env_id = row.get("env_id")
        if not isinstance(env_id, str):
            continue
        values = {}
        for key in SELF_REPORTED:
            value = _value(row.get(key))
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            values[key] = float(value) if ok else None
        out[env_id] = values
    return out
