"""The run summary, recomputed from the replayed episodes with the harness's own metric functions.

Replayable metrics (success, return, invalid actions, turns, in-group reward spread, pass@k) are pure
functions of the episodes, which the replay has just proven: they are recomputed by the harness's own row of
them (``harness.summary.row_metrics(replayable_only=True)``) and must equal summary.json (``n`` exactly; value and
stderr to 1e-9 relative, since numpy's vectorised sums may round differently on the submitter's CPU). Metrics
that need the model (token counts and entropy, the MI proxy family) cannot be replayed: they are read
from summary.json and shown as *self-reported* (a maintainer's ``leaderboard rerun`` replaces them).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from harness import metrics as m
from harness.records import EpisodeRecord, sort_episodes
from harness.summary import row_metrics
from leaderboard.records import ParsedEpisode
from leaderboard.schema import SELF_REPORTED_BOUNDS, bounded_number

MI_SCHEME = "trajectory"
"""The MI sampling scheme the site shows (the harness's report table shows the same one)."""
SITE_COLLAPSE = {
    name: f"{MI_SCHEME}/{name}" if m.lookup(name).family == m.COLLAPSE else name for name in SELF_REPORTED_BOUNDS
}
"""The self-reported metrics the site shows (site name -> summary.json key): those the replay cannot recompute."""


def recompute_rows(records: list[ParsedEpisode], suite: Any) -> dict[str, dict[str, Any]]:
    """``{env_id: {metric: {"value", "stderr", "n"} | {..., "unavailable"}}}`` for the replayable metrics."""
    grouped: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in sort_episodes([r.raw for r in records]):
        grouped[record["env_id"]].append(record)
    rows = {}
    for entry in suite.entries:
        episodes = grouped.get(entry.env_id, [])
        metrics = row_metrics(episodes, entry.samples_per_seed, replayable_only=True)
        rows[entry.env_id] = {"episodes": len(episodes), "metrics": metrics}
    return rows


def site_numbers(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the site shows per env (success ± se, return, turns, episodes) and the overall macro mean."""
    envs = {}
    for env_id, row in rows.items():
        metrics = row["metrics"]
        envs[env_id] = {
            "episodes": row["episodes"],
            "success_rate": metrics["success_rate"].get("value"),
            "success_se": metrics["success_rate"].get("stderr"),
            "mean_return": metrics["mean_return"].get("value"),
            "return_se": metrics["mean_return"].get("stderr"),
            "mean_turns": metrics["mean_turns"].get("value"),
            "invalid_action_rate": metrics["invalid_action_rate"].get("value"),
            "pass_at_k": metrics["pass@k"].get("value"),
        }
    rates = [v["success_rate"] for v in envs.values() if v["success_rate"] is not None]
    overall = {"success_rate": math.fsum(rates) / len(rates) if len(rates) == len(envs) and rates else None}
    return {"envs": envs, "overall": overall}


def _rows_of(summary_doc: Any, agent: str) -> dict[str, dict[str, Any]] | str:
    if not isinstance(summary_doc, dict) or not isinstance(summary_doc.get("rows"), list):
        return "summary.json has no 'rows' list"
    rows: dict[str, dict[str, Any]] = {}
    for row in summary_doc["rows"]:
        if not isinstance(row, dict) or not isinstance(row.get("metrics"), dict):
            return "summary.json has a malformed row"
        if not isinstance(row.get("env_id"), str):
            return "summary.json has a row without an env_id"
        if row.get("agent") != agent:
            return f"summary.json has a row for agent {row.get('agent')!r}; the run's agent is {agent!r}"
        if row.get("env_id") in rows:
            return f"summary.json has two rows for {row.get('env_id')!r}"
        rows[row.get("env_id")] = row
    return rows


def _close(a: Any, b: Any) -> bool:
    """Equal, up to the last bits a float mean/std may differ by between numpy builds and CPUs (SIMD sums)."""
    if a is None or b is None:
        return a is None and b is None
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, numbers) or not isinstance(b, numbers):
        return False
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _same_estimate(theirs: dict[str, Any], ours: dict[str, Any]) -> bool:
    return (
        _close(theirs.get("value"), ours["value"])
        and _close(theirs.get("stderr"), ours["stderr"])
        and theirs.get("n") == ours["n"]
        and not isinstance(theirs.get("n"), bool)
    )


def compare_summaries(summary_doc: Any, recomputed: dict[str, dict[str, Any]], agent: str) -> list[str]:
    """Problems where summary.json's replayable metrics differ from ``recomputed`` (by env, metric)."""
    claimed = _rows_of(summary_doc, agent)
    if isinstance(claimed, str):
        return [claimed]
    problems = []
    for env_id in sorted(set(claimed) - set(recomputed)):
        problems.append(f"summary.json has a row for {env_id!r}, which is not in the suite")
    for env_id, mine in recomputed.items():
        row = claimed.get(env_id)
        if row is None:
            problems.append(f"summary.json has no row for {env_id}")
            continue
        if row.get("episodes") != mine["episodes"]:
            problems.append(
                f"summary.json {env_id}: claims {row.get('episodes')!r} episodes, the archive holds {mine['episodes']}"
            )
        for name, value in mine["metrics"].items():
            theirs = row["metrics"].get(name)
            if not isinstance(theirs, dict):
                problems.append(f"summary.json {env_id} {name}: missing")
                continue
            ours = {k: value.get(k) for k in ("value", "stderr", "n")}
            if not _same_estimate(theirs, ours):
                problems.append(
                    f"summary.json {env_id} {name}: claims {theirs.get('value')!r} (stderr {theirs.get('stderr')!r}, "
                    f"n {theirs.get('n')!r}); the replayed episodes give {ours['value']!r} (stderr {ours['stderr']!r}, n {ours['n']!r})"
                )
    return problems


def self_reported_metrics(summary_doc: Any) -> dict[str, dict[str, float | None]]:
    """Per env: the collapse metrics the run reported, under the site's names (None where unavailable)."""
    out: dict[str, dict[str, float | None]] = {}
    rows = summary_doc.get("rows") if isinstance(summary_doc, dict) else None
    for row in rows if isinstance(rows, list) else []:
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("env_id"), str)
            or not isinstance(row.get("metrics"), dict)
        ):
            continue
        values = {}
        for site_name, key in SITE_COLLAPSE.items():
            metric = row["metrics"].get(key)
            value = metric.get("value") if isinstance(metric, dict) else None
            values[site_name] = bounded_number(site_name, value)  # verify refuses the rest
        out[row["env_id"]] = values
    return out
