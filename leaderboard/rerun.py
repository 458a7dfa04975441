"""A maintainer's rerun: evaluate a stored submission's model ourselves, and mark the row "reproduced".

Replay proves a submission's episodes are real, but not that *this model* wrote them, and its MI and
entropy figures need the model. ``rerun`` runs the harness with an agent the maintainer controls
(``hf:<weights>`` for open weights) on the submission's split, verifies that run like any submission,
and compares success per env: when every env agrees within ``tolerance`` combined standard errors, the
row is marked *reproduced* and the site shows the rerun's collapse metrics instead of the self-reported
ones. A disagreeing rerun is recorded too (``reproduction.consistent = false``) and the row stays
self-reported.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from leaderboard.pack import read_archive
from leaderboard.records import suite_run_config
from leaderboard.store import ARCHIVE, ENTRY, check_private, find_entry, write_entry
from leaderboard.suite import Suite, find_suite


@dataclass(frozen=True)
class RerunResult:
    """What :func:`rerun` found: whether the rerun reproduced the submission, a one-paragraph message, the run folder and the per-env success gaps."""

    reproduced: bool
    message: str
    run_dir: Path | None = None
    gaps: dict[str, Any] | None = None


def _agrees(a: dict[str, Any], b: dict[str, Any], tolerance: float) -> tuple[bool, float, float]:
    """(agrees, |gap|, allowed gap) of two success rates with standard errors (a missing se counts as 0)."""
    gap = abs(float(a["success_rate"]) - float(b["success_rate"]))
    se = math.hypot(float(a.get("success_se") or 0.0), float(b.get("success_se") or 0.0))
    allowed = tolerance * se + 1e-9
    return gap <= allowed, gap, allowed


def rerun(
    key: str,
    agent: str,
    *,
    store: str | Path | None = None,
    workdir: str | Path = "runs",
    secret: bytes | None = None,
    suite: Suite | None = None,
    tolerance: float = 3.0,
    workers: int = 1,
    **run_options: Any,
) -> RerunResult:
    """Rerun the stored submission ``key`` with ``agent``; update its entry; return what happened.

    The run repeats the submission's own options (agent options such as temperature and token budget,
    context window, run seed, MI samples) with ``agent`` in place of the submitter's; ``run_options``
    override ``RunConfig`` fields; ``agent_options`` may be a dict of just the agent options to change
    (e.g. ``{"device": "cuda"}``). ``store`` None: either default store. A hidden-split rerun's run folder holds
    the season's seeds, so it is refused where git would publish it (:func:`leaderboard.store.check_private`).
    """
    from harness.runner import run
    from leaderboard.pack import pack_run
    from leaderboard.verify import verify

    if not tolerance > 0:
        raise ValueError(f"tolerance must be > 0 standard errors, got {tolerance!r}")
    folder = find_entry(store, key)
    entry = json.loads((folder / ENTRY).read_text())
    meta = entry["metadata"]
    suite = suite or find_suite(meta["suite"], meta["suite_version"])
    if suite is None:
        raise ValueError(f"suite {meta['suite']}-{meta['suite_version']} of {folder.name} is not a built-in suite")
    # The submission's own run options (agent options, context window, run seed, MI samples), our agent.
    from harness.config import RunConfig

    members = read_archive(folder / ARCHIVE)
    submitted = RunConfig.from_json(json.loads(members["config.json"])["run"])
    fields = ("seed", "context_turns", "agent_options", "batch_size", "mi_samples", "mi_columns")
    options = {f: getattr(submitted, f) for f in fields}
    if isinstance(run_options.get("agent_options"), dict):  # partial: change only these agent options
        run_options["agent_options"] = dataclasses.replace(submitted.agent_options, **run_options["agent_options"])
    options.update(run_options)
    config = suite_run_config(suite, agent, entry["split"], secret, **options)
    run_id = f"rerun-{folder.name}-{dt.datetime.now(dt.timezone.utc):%Y%m%d-%H%M%S}"
    if entry["split"] == "hidden":
        check_private(Path(workdir) / run_id, "a hidden-split rerun's run folder")
    result = run(config, workdir, run_id=run_id, workers=workers, progress=False, plots=False)

    with tempfile.TemporaryDirectory() as tmp:
        archive = pack_run(
            result.run_dir, Path(tmp) / "rerun.ragen.tar.gz", model_name=meta["model_name"], org=meta["org"],
            parameters=meta["parameters"], weights=meta["weights"], contact=meta["contact"],
            notes=f"maintainer rerun of {folder.name}", suite=suite, secret=secret,
        )  # fmt: skip
        report = verify(archive, suite=suite, secret=secret)
    if not report.ok:
        return RerunResult(False, "the rerun itself did not verify:\n" + "\n".join(report.problems), result.run_dir)

    gaps, consistent = {}, True
    for env_id in suite.env_ids:
        ok, gap, allowed = _agrees(entry["envs"][env_id], report.summary["envs"][env_id], tolerance)
        gaps[env_id] = {"gap": gap, "allowed": allowed, "agrees": ok}
        consistent = consistent and ok
    envs = {
        env_id: {**report.summary["envs"][env_id], **report.summary["self_reported"].get(env_id, {})}
        for env_id in suite.env_ids
    }
    entry["reproduction"] = {
        "agent": agent,
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run_id": result.run_dir.name,
        "consistent": consistent,
        "tolerance_se": tolerance,
        "gaps": gaps,
        "envs": envs,
    }
    entry["status"] = {**entry.get("status", {}), "reproduced": consistent}
    write_entry(folder, entry)
    if consistent:
        message = f"reproduced: {folder.name} agrees with the rerun by {agent} on every env (within {tolerance} se)"
    else:
        off = ", ".join(f"{e} (gap {g['gap']:.3f} > {g['allowed']:.3f})" for e, g in gaps.items() if not g["agrees"])
        message = f"not reproduced: the rerun by {agent} disagrees on {off}; the row stays self-reported"
    return RerunResult(consistent, message, result.run_dir, gaps)
