"""A run: plan its episodes, skip the recorded ones, execute the rest, then summarize and report.

A run is a list of episode jobs (agent, env, env seed, sample) split into chunks of ``batch_size``
consecutive jobs of one (agent, env). A chunk is rolled out in lockstep (:mod:`harness.rollout`) by the
parent (``workers=1``), a local process pool, or Ray tasks (:mod:`harness.backends`), and the MI family is scored
where the agents are (a local pool's workers, a GPU agent's Ray tasks, else the parent). Every response's sampling seed is
a pure function of the run seed and (env, env seed, sample, turn), so the episodes, and therefore the
summary, are identical whatever the backend and worker count. The parent is the only writer of
episodes.jsonl: it appends each finished episode's line and flushes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import platform
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

from harness.agents.base import Agent
from harness.agents.registry import make_agent
from harness.backends import (
    execute_processes,
    execute_ray,
    execute_serial,
    process_pool,
    ray_session,
    score_processes,
    score_ray,
)
from harness.config import RunConfig
from harness.mi import SCHEMES
from harness.progress import Progress
from harness.records import (
    CONFIG,
    EPISODES,
    EpisodeWriter,
    episode_key,
    loads_line,
    read_episodes,
    read_run_json,
    write_json_atomic,
)
from harness.rollout import EnvPool, Job, chunk_jobs, plan_jobs, rollout_chunk

__all__ = [
    "EnvPool",
    "Job",
    "RunResult",
    "chunk_jobs",
    "config_document",
    "load_config",
    "plan_jobs",
    "rollout_chunk",
    "run",
]

HARNESS_FORMAT_VERSION = 2
"""2: a turn records its new user message (``user``) instead of its whole chat (``prompt``); see harness.records."""


# ---- a run ----------------------------------------------------------------------------------------------------
def _git_commit() -> tuple[str | None, bool | None]:
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=5,
        ).stdout.strip()
        return commit or None, bool(dirty)
    except (OSError, subprocess.SubprocessError):
        return None, None


def env_versions(config: RunConfig) -> dict[str, dict[str, str]]:
    """The version suffix and entry point of every env of the run, as registered now."""
    from gymnasium.envs.registration import registry

    out = {}
    for plan in config.envs:
        spec = registry[plan.env_id]
        out[plan.env_id] = {"version": f"v{spec.version}", "entry_point": str(spec.entry_point)}
    return out


def config_document(config: RunConfig, run_id: str, argv: Sequence[str] | None) -> dict[str, Any]:
    """The contents of config.json."""
    import numpy

    import ragen_envs

    commit, dirty = _git_commit()
    return {
        "format_version": HARNESS_FORMAT_VERSION,
        "run_id": run_id,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "package_version": ragen_envs.__version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "agent": ",".join(config.agents),
        "run": config.to_json(),
        "envs": env_versions(config),
        "command": list(argv) if argv is not None else None,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "gymnasium": gym.__version__,
    }


def default_run_id(config: RunConfig, out: Path) -> str:
    """``<preset-or-agents>-<UTC time>``, with a numeric suffix if that folder exists."""
    name = config.preset or "+".join(config.agents)
    name = re.sub(r"[^A-Za-z0-9_.+-]+", "-", name).strip("-.")[:60] or "run"
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_id, n = f"{name}-{stamp}", 1
    while (out / run_id).exists():
        n += 1
        run_id = f"{name}-{stamp}-{n}"
    return run_id


def load_config(run_dir: Path) -> tuple[RunConfig, dict[str, Any]]:
    """The RunConfig and the full config document of an existing run folder."""
    path = run_dir / CONFIG
    document = read_run_json(
        path, f"{run_dir} is not a run folder: {CONFIG} is missing", "the run folder's config cannot be read"
    )
    if not isinstance(document, dict) or not isinstance(document.get("run"), dict):
        raise ValueError(f"{path}: not a harness run config (no 'run' object); was it written by `harness run`?")
    try:
        return RunConfig.from_json(document["run"]), document
    except (TypeError, KeyError, ValueError) as exc:
        raise ValueError(f"{path}: the run config is invalid ({exc})") from None


def check_env_versions(config: RunConfig, document: dict[str, Any]) -> None:
    """Refuse to resume a run whose envs are no longer registered as they were."""
    import ragen_envs

    registered = set(ragen_envs.registered_ids())
    for plan in config.envs:
        if plan.env_id not in registered:
            raise ValueError(f"cannot resume: env {plan.env_id!r} is not registered any more")
    now = env_versions(config)
    for env_id, recorded in document.get("envs", {}).items():
        if now.get(env_id) != recorded:
            raise ValueError(f"cannot resume: env {env_id} was {recorded}, is now {now.get(env_id)}")


def with_threads(config: RunConfig, threads: int | str | None) -> RunConfig:
    """``config`` whose agent options carry ``threads`` (validated here, resolved by each agent)."""
    if threads is None:
        return config
    from harness.threads import resolve_threads

    resolve_threads(threads)
    # scoped to the agents that take a thread count (scripted agents declare none; see harness.agents.registry)
    from harness.agents.registry import parse_spec

    entries = [parse_spec(spec)[0] for spec in config.agents]
    scoped = {f"{e.name}.threads": threads for e in entries if "threads" in {o.name for o in e.options}}
    options = dataclasses.replace(config.agent_options, extra={**config.agent_options.extra, **scoped})
    return dataclasses.replace(config, agent_options=options)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: every finished episode is in ``run_dir``'s episodes.jsonl; ``--resume`` finishes it."""

    def __init__(self, run_dir: Path) -> None:
        super().__init__(str(run_dir))
        self.run_dir = run_dir


@dataclass
class RunResult:
    """What :func:`run` produced: the run folder, its summary, how many episodes this call rolled out, and the MI time."""

    run_dir: Path
    summary: dict[str, Any]
    new_episodes: int
    mi_seconds: float = 0.0
    """Wall seconds spent on the MI family (not in the summary: it must not depend on speed)."""


def run(
    config: RunConfig | None,
    out: Path | str = "runs",
    *,
    run_id: str | None = None,
    resume: Path | str | None = None,
    workers: int | str = 1,
    ray_address: str | None = None,
    progress: bool = True,
    parquet: bool = False,
    plots: bool = True,
    argv: Sequence[str] | None = None,
    stream: Any = None,
    threads: int | str | None = None,
) -> RunResult:
    """Roll out a run (or finish one with ``resume``), then write its summary and report.

    ``workers`` and ``threads`` are execution options (not in config.json's run, so a resume may change them).
    ``workers``: local processes, N or ``"auto"`` (:func:`harness.threads.resolve_workers`). ``threads``: torch
    threads of each LM agent, N or ``"auto"``; None leaves the agent options' own setting or
    :data:`harness.threads.DEFAULT_THREADS`.
    """
    from harness.threads import resolve_workers

    agents: dict[str, Agent] = {}
    if resume is not None:
        run_dir = Path(resume)
        recorded, document = load_config(run_dir)
        if config is not None and config != recorded:
            raise ValueError(
                f"--resume {run_dir}: the run's config.json differs from the requested run; drop the other options"
            )
        config = recorded
        check_env_versions(config, document)
    else:
        if config is None:
            raise ValueError("run needs a config or resume=")
    recorded_config, config = config, with_threads(config, threads)
    workers = resolve_workers(workers, work_units(config))  # before anything is written: a bad value writes nothing
    if resume is None:
        if workers == 1 and ray_address is None:  # build agents first: a bad checkpoint leaves no empty run folder
            agents = {spec: make_agent(spec, config.agent_options) for spec in config.agents}
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        run_id = run_id or default_run_id(config, out)
        run_dir = out / run_id
        run_dir.mkdir(exist_ok=False)
        write_json_atomic(run_dir / CONFIG, config_document(recorded_config, run_id, argv))
    if progress:  # named now, not at the end: a long run's files can be watched, and resumed after a crash
        verb = "resuming" if resume is not None else "writing"
        print(f"harness: {verb} {run_dir}/ (resume with: harness run --resume {run_dir})", file=stream or sys.stderr,
              flush=True)  # fmt: skip

    try:  # one Ray session or local pool for the rollouts and the MI family scored where the models live
        with contextlib.ExitStack() as stack:
            if ray_address is not None:
                stack.enter_context(ray_session(ray_address, workers))
            pool = stack.enter_context(process_pool(workers)) if ray_address is None and workers > 1 else None
            return _execute(config, run_dir, agents, workers, ray_address, pool, progress, parquet, plots, stream)
    except KeyboardInterrupt:
        raise RunInterrupted(run_dir) from None


def work_units(config: RunConfig) -> int:
    """The most tasks a run can keep busy at once: its chunks, or its (agent, env) MI batches if more."""
    batches = len(config.agents) * len(config.envs) if config.mi_samples else 0
    return max(len(chunk_jobs(plan_jobs(config), config.batch_size)), batches)


def turn_budgets(config: RunConfig) -> dict[str, int]:
    """Each env's turn budget per episode (its ``max_turns``): the unit of rollout progress."""
    from ragen_envs.plugins import ensure_registered

    out = {}
    for plan in config.envs:
        ensure_registered(plan.env_id)
        env = gym.make(plan.env_id, **plan.kwargs)
        out[plan.env_id] = max(1, int(getattr(env.unwrapped, "max_turns", 1)))
        env.close()
    return out


def _execute(config, run_dir, agents, workers, ray_address, pool, progress, parquet, plots, stream) -> RunResult:
    from harness import report
    from harness.summary import count_mi_pairs, mi_batches, summarize

    episodes_path = run_dir / EPISODES
    records, valid_length = read_episodes(episodes_path)
    done = {episode_key(r) for r in records}
    jobs = [job for job in plan_jobs(config) if job.key not in done]
    unexpected = done - {job.key for job in plan_jobs(config)}
    if unexpected:
        raise ValueError(f"{episodes_path} holds episodes this run does not plan, e.g. {sorted(unexpected)[0]}")
    chunks = chunk_jobs(jobs, config.batch_size)
    budget = turn_budgets(config)
    planned = {spec: sum(plan.episodes * plan.samples for plan in config.envs) for spec in config.agents}
    totals = {spec: sum(plan.episodes * plan.samples * budget[plan.env_id] for plan in config.envs)
              for spec in config.agents}  # fmt: skip
    played = dict.fromkeys(config.agents, 0)
    episodes = dict.fromkeys(config.agents, 0)
    for record in records:  # a resumed run: what is done is shown, not timed
        spec, turns = record["agent"], len(record["turns"])
        played[spec] += turns
        totals[spec] -= budget[record["env_id"]] - turns
        episodes[spec] += 1
    bar = Progress(totals, initial=played, enabled=progress, stream=stream or sys.stderr, unit="turns")
    with bar, EpisodeWriter(episodes_path, valid_length) as writer:

        def emit(agent: str, lines: list[bytes]) -> None:
            for line in lines:
                writer.write_line(line)
                record = loads_line(line)
                episodes[agent] += 1
                bar.advance(agent, len(record["turns"]), budget=budget[record["env_id"]],
                            note=f"{episodes[agent]}/{planned[agent]} episodes")  # fmt: skip

        if not chunks:
            pass
        elif ray_address is not None:
            execute_ray(config, chunks, ray_address, workers, emit)
        elif pool is None:
            execute_serial(config, chunks, agents, emit, begin=bar.start)
        else:
            execute_processes(config, chunks, pool, emit)

    records, _ = read_episodes(episodes_path)
    missing = {job.key for job in plan_jobs(config)} - {episode_key(r) for r in records}
    if missing:
        raise RuntimeError(f"{len(missing)} planned episodes are missing from {episodes_path}, e.g. {min(missing)}")
    try:
        # counted in pairs (each scored under every prompt of its batch): both schemes plan mi_samples per env
        pairs = len(SCHEMES) * config.mi_samples * len(config.envs)
        scoring = Progress(dict.fromkeys(config.agents, pairs), enabled=progress and config.mi_samples > 0,
                           stream=stream or sys.stderr, unit="MI pairs")  # fmt: skip
        timings: dict[str, float] = {}
        scored = {}
        if config.mi_samples and (ray_address is not None or pool is not None):
            started = time.perf_counter()

            def count(key: tuple[str, str], family: dict) -> None:
                count_mi_pairs(scoring, key[0], family, config.mi_samples)

            if pool is not None:  # every batch, in the workers that hold the agents
                for spec in config.agents:
                    scoring.start(spec)
                scored = score_processes(config, mi_batches(records), pool, done=count)
            else:  # a GPU agent's batches: in a task holding its GPUs
                scored = score_ray(config, mi_batches(records), ray_address, workers)
                for key, family in scored.items():
                    count(key, family)
            timings["mi_s"] = time.perf_counter() - started
        if config.mi_samples:  # the others score here with each agent
            elsewhere = {spec for spec, _ in scored}
            agents.update({s: make_agent(s, config.agent_options) for s in config.agents
                           if s not in agents and s not in elsewhere})  # fmt: skip
        summary = summarize(config, records, agents, run_id=run_dir.name, progress=scoring, timings=timings,
                            mi_scored=scored)  # fmt: skip
        scoring.close()
        report.write_report(run_dir, summary, records=records, parquet=parquet, plots=plots)
    finally:
        for agent in agents.values():
            agent.close()
    return RunResult(run_dir, summary, len(jobs), timings.get("mi_s", 0.0))
