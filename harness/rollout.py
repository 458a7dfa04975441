"""Episodes in lockstep: the jobs of a run, reusable envs, and the rollout of one chunk of jobs.

A run is a list of :class:`Job` (agent, env, env seed, sample) split into chunks of ``batch_size``
consecutive jobs of one (agent, env). :func:`rollout_chunk` plays a chunk in lockstep
(:func:`harness.episode.play_lockstep`), one batched ``generate`` per turn, and yields each finished episode's record (the episodes.jsonl schema of
:mod:`harness.records`). Every response's sampling seed is a pure function of the run seed and
(env, env seed, sample, turn), so a record does not depend on which chunk or process produced it. Each request
names its episode (the job's key) and the agent hears when episodes end (``Agent.end_episodes``), so an agent
may keep per-episode state between turns (the ``hf:`` agent keeps the history's keys/values).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import gymnasium as gym

from harness.agents.base import Agent, EnvHandle, Generation, Request
from harness.config import RunConfig
from harness.episode import LiveEpisode, play_lockstep
from harness.records import EpisodeRecord
from harness.seeding import ResponseSeeds


@dataclass(frozen=True)
class Job:
    """One episode to roll out."""

    agent: str
    env_id: str
    seed: int
    sample: int

    @property
    def key(self) -> tuple[str, str, int, int]:
        """``(agent, env_id, seed, sample)``: the episode's identity in a run."""
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


class EnvPool:
    """Reusable env instances per env id (``gym.make`` is not free; a lockstep batch needs several)."""

    def __init__(self, config: RunConfig) -> None:
        from ragen_envs.plugins import ensure_registered

        self._kwargs = {plan.env_id: plan.kwargs for plan in config.envs}
        self._free: dict[str, list[Any]] = {}
        for env_id in self._kwargs:  # a worker process registers an installed package's envs before making them
            ensure_registered(env_id)

    def get(self, env_id: str) -> Any:
        """A free env for ``env_id``, or a new one made with the plan's kwargs."""
        free = self._free.setdefault(env_id, [])
        return free.pop() if free else gym.make(env_id, **self._kwargs[env_id])

    def put(self, env_id: str, env: Any) -> None:
        """Return an env taken with :meth:`get` for reuse."""
        self._free[env_id].append(env)


class _Episode(LiveEpisode):
    __slots__ = ("job", "handle", "seeds")

    def __init__(self, job: Job, env: Any, kwargs: dict[str, Any], seed_base: int, window: int | None) -> None:
        super().__init__(
            job.key, env, agent=job.agent, env_id=job.env_id, env_kwargs=kwargs, seed=job.seed, sample=job.sample,
            context_turns=window,
        )  # fmt: skip
        self.job = job
        self.handle = EnvHandle(self.unwrapped)  # the side channel reads the live env, so one handle serves every turn
        self.seeds = ResponseSeeds(seed_base, job.env_id, job.seed, job.sample)


def rollout_chunk(agent: Agent, config: RunConfig, jobs: Sequence[Job], pool: EnvPool) -> Iterator[EpisodeRecord]:
    """Roll ``jobs`` out in lockstep with one batched ``generate`` per turn; yield each finished record.

    A turn's record holds its new user message (``user``), not the whole chat: the chat of every turn is
    rebuilt from the record by :func:`harness.transcript.record_messages` (records stay linear in the episode
    length instead of quadratic, and the instructions are not written twice).
    """
    kwargs = {plan.env_id: plan.kwargs for plan in config.envs}
    episodes = [
        _Episode(job, pool.get(job.env_id), kwargs[job.env_id], config.seed, config.context_turns) for job in jobs
    ]

    def generate(active: Sequence[_Episode]) -> Sequence[Generation]:
        requests = []
        for ep in active:  # the seed is derived when read
            requests.append(Request(ep.transcript.context(ep.handle), partial(ep.seeds, ep.transcript.turn), ep.key))
        generations = agent.generate(requests)
        if len(generations) != len(requests):
            raise RuntimeError(f"agent {agent.spec!r} returned {len(generations)} generations for {len(requests)}")
        return generations

    end_episodes = getattr(agent, "end_episodes", None)  # duck-typed agents may lack it
    for ep in play_lockstep(episodes, generate, end_episodes=end_episodes):
        pool.put(ep.job.env_id, ep.env)
        yield ep.record
