"""Rolling agents out over envs: lockstep batches, local worker processes or Ray tasks, resumable files.

A run is a list of episode jobs (agent, env, env seed, sample) split into chunks of ``batch_size``
consecutive jobs of one (agent, env). A chunk is rolled out in lockstep (one batched ``generate`` per
turn) by the parent (``workers=1``), a local process pool, or Ray tasks. Every response's sampling seed is
a pure function of the run seed and (env, env seed, sample, turn), so the episodes, and therefore the
summary, are identical whatever the backend and worker count. The parent is the only writer of
episodes.jsonl: it appends each finished episode's line and flushes.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

from harness.agents.base import Agent, EnvHandle, Request
from harness.agents.registry import make_agent
from harness.config import RunConfig
from harness.progress import Progress
from harness.prompting import build_context, prefill_for, user_message
from harness.records import (
    CONFIG,
    EPISODES,
    EpisodeWriter,
    dumps_line,
    episode_key,
    read_episodes,
    write_json_atomic,
)
from harness.seeding import response_seed

HARNESS_FORMAT_VERSION = 1


@dataclass(frozen=True)
class Job:
    """One episode to roll out."""

    agent: str
    env_id: str
    seed: int
    sample: int

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.agent, self.env_id, self.seed, self.sample)


def plan_jobs(config: RunConfig) -> list[Job]:
    """Every episode of the run, in canonical order."""
    return [
        Job(agent, plan.env_id, seed, sample)
        for agent in config.agents
        for plan in config.envs
        for seed in plan.seeds
        for sample in range(plan.samples)
    ]


def chunk_jobs(jobs: Sequence[Job], batch_size: int) -> list[list[Job]]:
    """Consecutive jobs of one (agent, env), at most ``batch_size`` per chunk."""
    chunks: list[list[Job]] = []
    for job in jobs:
        last = chunks[-1] if chunks else None
        if last and len(last) < batch_size and (last[0].agent, last[0].env_id) == (job.agent, job.env_id):
            last.append(job)
        else:
            chunks.append([job])
    return chunks


def reasoning_of(response: str, response_format: str) -> str | None:
    """The reasoning text Z of a response (between the think tags, or before ``<answer>``), stripped."""
    if response_format == "think":
        start = response.find("<think>")
        end = response.find("</think>", start + 7) if start >= 0 else -1
        return response[start + 7 : end].strip() if end >= 0 else None
    if response_format == "answer":
        end = response.find("<answer>")
        return response[:end].strip() if end >= 0 else None
    return None


class EnvPool:
    """Reusable env instances per env id (``gym.make`` is not free; a lockstep batch needs several)."""

    def __init__(self, config: RunConfig) -> None:
        self._kwargs = {plan.env_id: plan.kwargs for plan in config.envs}
        self._free: dict[str, list[Any]] = {}

    def get(self, env_id: str) -> Any:
        free = self._free.setdefault(env_id, [])
        return free.pop() if free else gym.make(env_id, **self._kwargs[env_id])

    def put(self, env_id: str, env: Any) -> None:
        self._free[env_id].append(env)


class _Episode:
    __slots__ = (
        "job",
        "env",
        "handle",
        "response_format",
        "prefill",
        "system",
        "exchanges",
        "current",
        "record",
        "turn",
    )

    def __init__(self, job: Job, env: Any, kwargs: dict[str, Any]) -> None:
        observation, info = env.reset(seed=job.seed)
        self.job, self.env, self.turn = job, env, 1
        self.handle = EnvHandle(env.unwrapped)  # the side channel reads the live env, so one handle serves every turn
        self.response_format = env.unwrapped.response_format
        self.prefill = prefill_for(self.response_format)
        self.system = {"role": "system", "content": info["instructions"]}
        self.exchanges: list[tuple[dict, dict]] = []
        self.current = user_message(1, observation, None)
        self.record: dict[str, Any] = {
            "agent": job.agent,
            "env_id": job.env_id,
            "env_kwargs": kwargs,
            "seed": job.seed,
            "sample": job.sample,
            "instructions": info["instructions"],
            "initial_observation": observation,
            "reset_info": {k: v for k, v in info.items() if k != "instructions"},
            "turns": [],
        }


def rollout_chunk(agent: Agent, config: RunConfig, jobs: Sequence[Job], pool: EnvPool) -> Iterator[dict[str, Any]]:
    """Roll ``jobs`` out in lockstep with one batched ``generate`` per turn; yield each finished record."""
    kwargs = {plan.env_id: plan.kwargs for plan in config.envs}
    active = [_Episode(job, pool.get(job.env_id), kwargs[job.env_id]) for job in jobs]
    while active:
        requests = []
        for ep in active:
            context = build_context(ep.system, ep.exchanges, ep.current, ep.prefill, config.context_turns, ep.handle)
            seed = response_seed(config.seed, ep.job.env_id, ep.job.seed, ep.job.sample, ep.turn)
            requests.append(Request(context, seed))
        generations = agent.generate(requests)
        if len(generations) != len(requests):
            raise RuntimeError(f"agent {agent.spec!r} returned {len(generations)} generations for {len(requests)}")
        still = []
        for ep, request, gen in zip(active, requests, generations):
            response = ep.prefill + gen.text
            observation, reward, terminated, truncated, info = ep.env.step(response)
            entropies = gen.token_entropies
            logprobs = gen.token_logprobs
            ep.record["turns"].append(
                {
                    "turn": ep.turn,
                    "prompt": list(request.context.messages),
                    "prefill": ep.prefill,
                    "response": response,
                    "reasoning": reasoning_of(response, ep.response_format),
                    "observation": observation,
                    "reward": float(reward),
                    "terminated": bool(terminated),
                    "truncated": bool(truncated),
                    "info": info,  # made JSON-safe when the line is written (records.dumps_line)
                    "tokens": gen.num_tokens,
                    "entropy_sum": None if entropies is None else float(sum(entropies)),
                    "logprob_sum": None if logprobs is None else float(sum(logprobs)),
                }
            )
            if terminated or truncated:
                turns = ep.record["turns"]
                ep.record["return"] = float(sum(t["reward"] for t in turns))
                ep.record["success"] = bool(info.get("success", False))
                ep.record["num_turns"] = len(turns)
                pool.put(ep.job.env_id, ep.env)
                yield ep.record
            else:
                ep.exchanges.append((ep.current, {"role": "assistant", "content": response}))
                ep.turn += 1
                ep.current = user_message(ep.turn, observation, float(reward))
                still.append(ep)
        active = still


# ---- worker processes -----------------------------------------------------------------------------------------
_WORKER: dict[str, Any] = {}


def _worker_state(config_json: str) -> tuple[RunConfig, dict[str, Agent], EnvPool]:
    """Per-process config, agents and env pool, built once per config (Ray reuses worker processes)."""
    if _WORKER.get("config_json") != config_json:
        for agent in _WORKER.get("agents", {}).values():
            agent.close()
        config = RunConfig.from_json(json.loads(config_json))
        _WORKER.update(config_json=config_json, config=config, agents={}, pool=EnvPool(config))
    return _WORKER["config"], _WORKER["agents"], _WORKER["pool"]


def _single_thread_worker() -> None:
    """Worker processes share the cores: one intra-op thread each (read by torch/numpy BLAS at import)."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")


def run_chunk_lines(config_json: str, jobs: list[tuple[str, str, int, int]]) -> list[str]:
    """Worker entry point: roll out a chunk and return its episodes.jsonl lines."""
    config, agents, pool = _worker_state(config_json)
    spec = jobs[0][0]
    if spec not in agents:
        agents[spec] = make_agent(spec, config.agent_options)
    return [dumps_line(r) for r in rollout_chunk(agents[spec], config, [Job(*j) for j in jobs], pool)]


def _execute_serial(config: RunConfig, chunks: list[list[Job]], agents: dict[str, Agent], emit: Callable) -> None:
    pool = EnvPool(config)
    for chunk in chunks:
        spec = chunk[0].agent
        if spec not in agents:
            agents[spec] = make_agent(spec, config.agent_options)
        agent = agents[spec]
        for record in rollout_chunk(agent, config, chunk, pool):
            emit([dumps_line(record)])


def _execute_processes(config: RunConfig, chunks: list[list[Job]], workers: int, emit: Callable) -> None:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    config_json = json.dumps(config.to_json())
    # spawn, not fork: a forked torch (or a forked thread pool) can deadlock, and spawn is what Ray does too.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_single_thread_worker) as executor:
        pending = {executor.submit(run_chunk_lines, config_json, [j.key for j in chunk]) for chunk in chunks}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                emit(future.result())


def _execute_ray(config: RunConfig, chunks: list[list[Job]], address: str, workers: int, emit: Callable) -> None:
    try:
        import ray
    except ImportError:
        raise ImportError("--ray needs Ray: pip install 'ragen-envs[ray]'") from None
    started = not ray.is_initialized()
    if started:
        if address == "local":
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
        else:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1)(run_chunk_lines)
        config_ref = ray.put(json.dumps(config.to_json()))
        pending = [remote.remote(config_ref, [j.key for j in chunk]) for chunk in chunks]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                emit(ray.get(ref))
    finally:
        if started:
            ray.shutdown()


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
    if not path.exists():
        raise FileNotFoundError(f"{run_dir} is not a run folder: {CONFIG} is missing")
    document = json.loads(path.read_text(encoding="utf-8"))
    return RunConfig.from_json(document["run"]), document


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


@dataclass
class RunResult:
    run_dir: Path
    summary: dict[str, Any]
    new_episodes: int


def run(
    config: RunConfig | None,
    out: Path | str = "runs",
    *,
    run_id: str | None = None,
    resume: Path | str | None = None,
    workers: int = 1,
    ray_address: str | None = None,
    progress: bool = True,
    parquet: bool = False,
    plots: bool = True,
    argv: Sequence[str] | None = None,
    stream: Any = None,
) -> RunResult:
    """Roll out a run (or finish one with ``resume``), then write its summary and report."""
    from harness import report

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
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
        if workers == 1 and ray_address is None:  # build agents first: a bad checkpoint leaves no empty run folder
            agents = {spec: make_agent(spec, config.agent_options) for spec in config.agents}
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        run_id = run_id or default_run_id(config, out)
        run_dir = out / run_id
        run_dir.mkdir(exist_ok=False)
        write_json_atomic(run_dir / CONFIG, config_document(config, run_id, argv))

    episodes_path = run_dir / EPISODES
    records, valid_length = read_episodes(episodes_path)
    done = {episode_key(r) for r in records}
    jobs = [job for job in plan_jobs(config) if job.key not in done]
    unexpected = done - {job.key for job in plan_jobs(config)}
    if unexpected:
        raise ValueError(f"{episodes_path} holds episodes this run does not plan, e.g. {sorted(unexpected)[0]}")
    chunks = chunk_jobs(jobs, config.batch_size)
    bar = Progress(config.total_episodes, initial=len(done), enabled=progress, stream=stream or sys.stderr)
    with EpisodeWriter(episodes_path, valid_length) as writer:

        def emit(lines: list[str]) -> None:
            for line in lines:
                writer.write_line(line)
            bar.advance(len(lines))

        if not chunks:
            pass
        elif ray_address is not None:
            _execute_ray(config, chunks, ray_address, workers, emit)
        elif workers == 1:
            _execute_serial(config, chunks, agents, emit)
        else:
            _execute_processes(config, chunks, min(workers, len(chunks)), emit)
    bar.close()

    records, _ = read_episodes(episodes_path)
    missing = {job.key for job in plan_jobs(config)} - {episode_key(r) for r in records}
    if missing:
        raise RuntimeError(f"{len(missing)} planned episodes are missing from {episodes_path}, e.g. {min(missing)}")
    try:
        summary = report.summarize(config, records, agents, run_id=run_dir.name)
        report.write_report(run_dir, summary, records=records, parquet=parquet, plots=plots)
    finally:
        for agent in agents.values():
            agent.close()
    return RunResult(run_dir, summary, len(jobs))
