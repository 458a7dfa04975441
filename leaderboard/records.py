"""The harness's run files (config.json, episodes.jsonl) as the leaderboard reads them.

This is the only module that knows the field names of :mod:`harness.records` and :mod:`harness.runner`,
so a change there is a change here only. It also turns a suite split into a harness ``RunConfig``
(``harness run … --suite official``) and finds which suite split a run's config.json is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from leaderboard.suite import SUITES, Suite


class RecordError(ValueError):
    """An episode line that does not have the harness's shape."""


@dataclass(frozen=True)
class EpisodeRecord:
    """One line of episodes.jsonl, type-checked; ``raw`` is the parsed dict (harness metrics take it)."""

    line: int
    env_id: str
    env_kwargs: dict[str, Any]
    seed: int
    sample: int
    raw: dict[str, Any]

    @property
    def name(self) -> str:
        """How error messages name this episode: env id, seed, sample and its line in episodes.jsonl."""
        return f"episode {self.env_id} seed {self.seed} sample {self.sample} (episodes.jsonl line {self.line})"

    @property
    def turns(self) -> list[dict[str, Any]]:
        """The record's turns, as parsed from the JSON line."""
        return self.raw["turns"]


def _check(mapping: Any, key: str, kind: type | tuple[type, ...], where: str, nullable: bool = False) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise RecordError(f"{where}: missing field {key!r}")
    value = mapping[key]
    if value is None and nullable:
        return value
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        names = "/".join(k.__name__ for k in kinds)
        raise RecordError(f"{where}: field {key!r} must be {names}, got {type(value).__name__}")
    return value


_TURN_FIELDS = (
    ("user", str, False), ("prefill", str, False), ("response", str, False), ("reasoning", str, True),
    ("observation", str, False), ("reward", (int, float), False), ("terminated", bool, False),
    ("truncated", bool, False), ("info", dict, False), ("turn", int, False),
)  # fmt: skip
_TURN_FIELDS_V1 = (("prompt", list, False),) + _TURN_FIELDS[1:]
"""Harness format 1 stored each turn's whole chat (``prompt``) instead of its new user message (``user``)."""


_EPISODE_FIELDS = (("agent", str, False), ("instructions", str, False), ("initial_observation", str, False),
                   ("turns", list, False), ("success", bool, False), ("return", (int, float), False))  # fmt: skip


def _fields_ok(mapping: dict, fields: tuple) -> bool:
    """Fast path: every field present with its type (a bool is not a number)."""
    for key, kind, nullable in fields:
        value = mapping.get(key, _MISSING)
        if value is None and nullable:
            continue
        if value is _MISSING or not isinstance(value, kind) or (value.__class__ is bool and kind is not bool):
            return False
    return True


_MISSING = object()


def parse_episode(line_number: int, obj: Any) -> EpisodeRecord:
    """One parsed JSON line of episodes.jsonl as an :class:`EpisodeRecord`; :class:`RecordError` if malformed."""
    where = f"episodes.jsonl line {line_number}"
    if not isinstance(obj, dict):
        raise RecordError(f"{where}: an episode must be a JSON object")
    env_id = _check(obj, "env_id", str, where)
    seed = _check(obj, "seed", int, where)
    sample = _check(obj, "sample", int, where)
    kwargs = _check(obj, "env_kwargs", dict, where)
    where = f"episode {env_id} seed {seed} sample {sample} (episodes.jsonl line {line_number})"
    if not _fields_ok(obj, _EPISODE_FIELDS):
        for key, kind, nullable in _EPISODE_FIELDS:
            _check(obj, key, kind, where, nullable)
    if obj.get("context_turns") is not None:
        window = _check(obj, "context_turns", int, where)
        if window < 0:
            raise RecordError(f"{where}: field 'context_turns' must be null or >= 0, got {window}")
    for index, turn in enumerate(obj["turns"], start=1):
        fields = _TURN_FIELDS_V1 if isinstance(turn, dict) and "prompt" in turn else _TURN_FIELDS
        if isinstance(turn, dict) and _fields_ok(turn, fields):
            continue
        at = f"{where} turn {index}"
        if not isinstance(turn, dict):
            raise RecordError(f"{at}: a turn must be a JSON object")
        for key, kind, nullable in fields:
            _check(turn, key, kind, at, nullable)
    return EpisodeRecord(line_number, env_id, kwargs, seed, sample, obj)


def iter_episode_lines(data: bytes) -> Iterator[tuple[int, Any, str]]:
    """``(line number, parsed object or None, error)`` for every non-empty line of an episodes.jsonl."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line), ""
        except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            yield number, None, f"episodes.jsonl line {number}: malformed JSON ({type(exc).__name__}: {exc})"


# ---- config.json <-> suites ---------------------------------------------------------------------------------
def _plans(config: dict[str, Any]) -> dict[str, tuple[tuple[int, ...], int, dict[str, Any]]]:
    """``{env_id: (seeds, samples, kwargs)}`` from config.json's ``run.envs``."""
    plans = {}
    for plan in config["run"]["envs"]:
        seeds = tuple(range(int(plan["seed_start"]), int(plan["seed_start"]) + int(plan["episodes"])))
        plans[plan["env_id"]] = (seeds, int(plan["samples"]), dict(plan.get("kwargs") or {}))
    return plans


def split_plans(suite: Suite, split: str, secret: bytes | None = None) -> dict[str, tuple[tuple[int, ...], int, dict]]:
    """The same shape as :func:`_plans`, for a suite split."""
    return {e.env_id: (suite.seeds(e.env_id, split, secret), e.samples_per_seed, dict(e.kwargs)) for e in suite.entries}


def identify_run(config: Any, suite: Suite | None = None, secret: bytes | None = None) -> tuple[Suite, str]:
    """The (suite, split) whose envs, kwargs, seeds and samples a run's config.json equals; ``ValueError`` if none.

    Tries ``suite`` if given, else every built-in suite; the hidden split only with the secret.
    """
    if not isinstance(config, dict):
        raise ValueError("config.json must hold a JSON object")
    try:
        plans = _plans(config)
        agents = config["run"]["agents"]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"config.json is not a harness run config ({type(exc).__name__}: {exc})") from None
    if not isinstance(agents, list) or not all(isinstance(a, str) for a in agents):
        raise ValueError("config.json: run.agents must be a list of agent specs")
    if len(agents) != 1:
        raise ValueError(f"a submission is one agent, but this run has {len(agents)}: {agents}; run each agent alone")
    context_turns = config["run"].get("context_turns")
    if context_turns is not None and (
        isinstance(context_turns, bool) or not isinstance(context_turns, int) or context_turns < 0
    ):
        raise ValueError(
            f"config.json: run.context_turns must be null or a non-negative integer, got {context_turns!r}"
        )
    candidates = [suite] if suite is not None else list(SUITES.values())
    for candidate in candidates:
        splits = ["official"] + (["hidden"] if candidate.hidden is not None and secret is not None else [])
        for split in splits:
            try:
                if split_plans(candidate, split, secret) == plans:
                    return candidate, split
            except ValueError:
                continue
    names = ", ".join(c.label for c in candidates)
    raise ValueError(
        f"this run's envs, seeds and samples are not a leaderboard split ({names}): "
        "make the run with `harness run <agent> --suite official` (a hidden-split run also needs --secret-file)"
    )


def run_identity(config: Any, suite: Suite | None = None, secret: bytes | None = None) -> dict[str, str]:
    """The submission metadata a run's config.json supplies: versions, commit, agent, suite and split."""
    found, split = identify_run(config, suite, secret)
    return {
        "package_version": str(config.get("package_version") or "unknown"),
        "git_commit": str(config.get("git_commit") or "unknown"),
        "agent": str(config["run"]["agents"][0]),
        "suite": found.name,
        "suite_version": found.version,
        "split": split,
        "suite_fingerprint": found.fingerprint(),
    }


def suite_run_config(suite: Suite, agent: str, split: str = "official", secret: bytes | None = None, **options: Any):
    """The harness ``RunConfig`` that evaluates ``agent`` on a suite split (``options``: other RunConfig fields)."""
    from harness.config import EnvPlan, RunConfig

    envs = []
    for env_id, (seeds, samples, kwargs) in split_plans(suite, split, secret).items():
        if list(seeds) != list(range(seeds[0], seeds[0] + len(seeds))):
            raise ValueError(f"{env_id}: the harness runs seed ranges; suite {suite.label} lists non-consecutive seeds")
        envs.append(EnvPlan(env_id, episodes=len(seeds), samples=samples, seed_start=seeds[0], kwargs=kwargs))
    return RunConfig(agents=(agent,), envs=tuple(envs), **options)
