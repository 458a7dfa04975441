"""What a run does: :class:`RunConfig` (written to config.json) and the named presets (``baseline``).

Episodes: for each agent and env, ``episodes`` env seeds (``seed_start``, ``seed_start + 1``, …) and
``samples`` rollouts per seed, all on the *same* env seed (a prompt group: pass@k and the in-group reward
spread come from it). Every response's sampling seed is derived from the run ``seed`` and (env, env seed,
sample, turn), so results do not depend on worker count, batching or backend.
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.agents.options import AgentOptions
from harness.agents.registry import parse_spec
from ragen_envs.core import check_range


@dataclass(frozen=True)
class EnvPlan:
    """How one env is rolled out in a run."""

    env_id: str
    episodes: int
    """Distinct env seeds (prompt groups)."""
    samples: int
    """Rollouts per seed (the group size K of pass@k)."""
    seed_start: int = 0
    kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for ``gym.make``."""
    probe: bool = False
    """Play the env's fixed MI probe: ``episodes`` seeds from ``seed_start`` on whose first prompts share no key
    feature (:func:`harness.probe.probe_seeds`), instead of consecutive seeds."""

    def __post_init__(self) -> None:
        check_range(f"episodes ({self.env_id})", self.episodes, 1, integer=True)
        check_range(f"samples ({self.env_id})", self.samples, 1, integer=True)
        check_range(f"seed_start ({self.env_id})", self.seed_start, 0, integer=True)

    @property
    def seeds(self) -> Sequence[int]:
        """The env seeds of this plan: ``seed_start`` up to ``seed_start + episodes``, or the probe's."""
        if self.probe:
            from harness.probe import probe_seeds

            return probe_seeds(self.env_id, self.kwargs, self.episodes, self.seed_start)
        return range(self.seed_start, self.seed_start + self.episodes)


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run's episodes and summary (execution options such as workers excluded)."""

    agents: tuple[str, ...]
    envs: tuple[EnvPlan, ...]
    seed: int = 0
    """Run seed: every response's sampling seed derives from it."""
    context_turns: int | None = None
    """Earlier turns kept in the prompt; None keeps the full history."""
    agent_options: AgentOptions = field(default_factory=AgentOptions)
    batch_size: int = 16
    """Episodes rolled out in lockstep by one worker task (one batched generate call per turn)."""
    mi_samples: int = 64
    """Pairs per MI sampling scheme (first-turn and trajectory-uniform); 0 disables the MI family."""
    mi_columns: int | None = None
    """Column subsampling: score each pair's reasoning under its own prompt and ``mi_columns - 1`` other
    uniformly drawn prompts of the batch instead of all of them (cost ~ mi_columns/N of the full matrix; see
    ``harness.mi.estimator.collapse_metrics(scored=...)``). None: every column, the exact estimator."""
    preset: str | None = None
    skipped_envs: dict[str, str] = field(default_factory=dict)
    """Envs the run would have had (a preset's, or every registered one) that cannot be built on this machine,
    each with the reason and what to install (``available_plans``); the report lists them."""

    def __post_init__(self) -> None:
        if not self.agents:
            raise ValueError("agents must name at least one agent")
        for spec in self.agents:
            parse_spec(spec)
        if len(set(self.agents)) != len(self.agents):
            raise ValueError(f"agents must be distinct, got {self.agents}")
        if not self.envs:
            raise ValueError("envs must name at least one env")
        ids = [plan.env_id for plan in self.envs]
        if len(set(ids)) != len(ids):
            raise ValueError(f"envs must be distinct, got {ids}")
        check_range("seed", self.seed, 0, integer=True)
        if self.context_turns is not None:
            check_range("context_turns", self.context_turns, 0, integer=True)
        check_range("batch_size", self.batch_size, 1, integer=True)
        check_range("mi_samples", self.mi_samples, 0, integer=True)
        if self.mi_columns is not None:
            check_range("mi_columns", self.mi_columns, 2, integer=True)

    def to_json(self) -> dict[str, Any]:
        """The config as JSON-ready data (config.json), the inverse of :meth:`from_json`."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunConfig:
        """Rebuild a config from :meth:`to_json`'s data."""
        data = dict(data)
        data["agents"] = tuple(data["agents"])
        data["envs"] = tuple(EnvPlan(**plan) for plan in data["envs"])
        data["agent_options"] = AgentOptions(**data.get("agent_options", {}))
        return cls(**data)

    @property
    def total_episodes(self) -> int:
        """Episodes in the run: agents × the sum over env plans of episodes × samples."""
        return len(self.agents) * sum(plan.episodes * plan.samples for plan in self.envs)


def available_plans(plans: Sequence[EnvPlan]) -> tuple[tuple[EnvPlan, ...], dict[str, str]]:
    """The plans whose env can be built here, and for each other env why not.

    "Cannot be built" is a missing system facility: CodeExec without a secure code sandbox
    (``SandboxUnavailable``, whose message says what to install). Any other construction error is a bug or a
    bad argument and propagates.
    """
    import gymnasium as gym

    from ragen_envs.sandbox import SandboxUnavailable as EnvUnavailable

    kept, skipped = [], {}
    for plan in plans:
        try:
            gym.make(plan.env_id, **plan.kwargs).close()
        except EnvUnavailable as exc:
            skipped[plan.env_id] = str(exc)
        else:
            kept.append(plan)
    return tuple(kept), skipped


# ---- presets --------------------------------------------------------------------------------------------------
BASELINE_AGENTS = ("random", "oracle", "tiny")
"""``tiny`` is the LM shipped in ``baselines/tiny/model``: real success, MI and entropy from a language model."""

BASELINE_DEFAULT = (8, 4)
"""(seeds, samples per seed) per env and agent: 32 episodes, 8 distinct first-turn prompts for the MI family
(RAGEN-2's own first-turn batches have N = 8 prompts). Sized so that the tiny LM, the slow agent here, keeps
``harness run baseline`` within minutes on 2 CPU cores; use ``--episodes``/``--samples`` for tighter CIs."""

BASELINE_OVERRIDES = (
    ("ragen/CodeExec*", (2, 4)),
    ("ragen/*Code*", (2, 4)),
    ("ragen/WebShop*", (2, 4)),
    ("ragen/SearchQA*", (4, 4)),
    ("ragen/Sokoban-10x10*", (2, 4)),
    ("ragen/Sokoban-8x8*", (4, 4)),
    ("ragen/FrozenLake-8x8*", (4, 4)),
)
"""Slower envs (a sandboxed process per step; page rendering; search results of ~1,000 characters per turn;
10–20-turn episodes whose prompts grow with the history, which the tiny LM re-reads every turn) get fewer seeds
so that ``harness run baseline`` stays within a few minutes on 2 CPU cores. First match wins."""

BASELINE_MAX_NEW_TOKENS = 96
"""Per-turn token budget of the baseline preset: the tiny LM answers in ~45 tokens; a derailed response
would otherwise run to the 200-token default and bloat every later prompt of a 20-turn episode."""

BASELINE_CONTEXT_TURNS = 2
"""Earlier turns the baseline preset keeps in the prompt (``--context full`` restores the whole history). An LM
agent re-reads its prompt every turn, so full history makes a 20-turn Sokoban-10x10 episode cost quadratically
in turns; two turns of history keep the preset within minutes on CPU."""


def baseline_plan(env_id: str) -> tuple[int, int]:
    """(seeds, samples) the baseline preset uses for ``env_id``."""
    for pattern, counts in BASELINE_OVERRIDES:
        if fnmatch.fnmatchcase(env_id, pattern):
            return counts
    return BASELINE_DEFAULT


def preset_config(name: str, **overrides: Any) -> RunConfig:
    """The config of a named preset; ``overrides`` replace RunConfig fields."""
    import ragen_envs

    if name not in PRESETS:
        close = difflib.get_close_matches(name, list(PRESETS), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"Unknown preset {name!r}.{hint} Available: {', '.join(PRESETS)}")
    envs = tuple(EnvPlan(env_id, *baseline_plan(env_id)) for env_id in ragen_envs.registered_ids())
    return RunConfig(agents=BASELINE_AGENTS, envs=envs, preset=name, **overrides)


PRESETS = {"baseline": "random, oracle and the tiny shipped LM on every registered env; CPU, no network"}
