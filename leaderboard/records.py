"""Reading a harness run's records (config.json, episodes.jsonl) into what the replay needs.

This is the only module that knows the field names of the harness's run files, so a change there is a
change here only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


class RecordError(ValueError):
    """An episode line that does not have the harness's shape."""


@dataclass(frozen=True)
class Turn:
    response: str
    observation: str
    """The observation ``step(response)`` returned."""
    reward: float
    terminated: bool
    truncated: bool
    success: bool


@dataclass(frozen=True)
class EpisodeRecord:
    line: int
    env_id: str
    env_kwargs: dict[str, Any]
    seed: int
    sample: int
    initial_observation: str
    turns: tuple[Turn, ...]
    success: bool
    raw: dict[str, Any]

    @property
    def name(self) -> str:
        return f"episode {self.env_id} seed {self.seed} sample {self.sample} (episodes.jsonl line {self.line})"

    @property
    def episode_return(self) -> float:
        return math.fsum(turn.reward for turn in self.turns)


def _get(mapping: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(mapping, dict) or key not in mapping:
        raise RecordError(f"{where}: missing field {key!r}")
    value = mapping[key]
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise RecordError(f"{where}: field {key!r} must be {names}, got {type(value).__name__}")
    return value


def parse_episode(line_number: int, obj: Any) -> EpisodeRecord:
    """One parsed JSON line of episodes.jsonl as an :class:`EpisodeRecord`; :class:`RecordError` if malformed."""
    where = f"episodes.jsonl line {line_number}"
    env_id = _get(obj, "env_id", str, where)
    seed = _get(obj, "seed", int, where)
    sample = _get(obj, "sample", int, where)
    where = f"episode {env_id} seed {seed} sample {sample} (episodes.jsonl line {line_number})"
    kwargs = obj.get("env_kwargs", {})
    if not isinstance(kwargs, dict):
        raise RecordError(f"{where}: field 'env_kwargs' must be an object")
    turns_raw = _get(obj, "turns", list, where)
    initial = _get(obj, "initial_observation", str, where)
    turns = []
    for index, turn in enumerate(turns_raw):
        at = f"{where} turn {index + 1}"
        reward = _get(turn, "reward", (int, float), at)
        if isinstance(reward, bool):
            raise RecordError(f"{at}: field 'reward' must be a number")
        info = _get(turn, "info", dict, at)
        turns.append(
            Turn(
                response=_get(turn, "response", str, at),
                observation=_get(turn, "observation", str, at),
                reward=reward,
                terminated=_get(turn, "terminated", bool, at),
                truncated=_get(turn, "truncated", bool, at),
                success=_get(info, "success", bool, at + " info"),
            )
        )
    return EpisodeRecord(
        line=line_number,
        env_id=env_id,
        env_kwargs=kwargs,
        seed=seed,
        sample=sample,
        initial_observation=initial,
        turns=tuple(turns),
        success=_get(obj, "success", bool, where),
        raw=obj,
    )


def iter_episode_lines(data: bytes) -> Iterator[tuple[int, Any | None, str]]:
    """``(line number, parsed object or None, error)`` for every non-empty line of an episodes.jsonl."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line), ""
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            yield number, None, f"episodes.jsonl line {number}: malformed JSON ({exc})"


def run_identity(config: dict[str, Any]) -> dict[str, str]:
    """The submission metadata a run's config.json supplies: versions, commit, agent, suite and split."""
    if not isinstance(config, dict):
        raise ValueError("config.json must hold a JSON object")
    suite = config.get("suite")
    if not isinstance(suite, dict):
        raise ValueError(
            "this run was not made on a leaderboard suite: rerun it with `harness run <agent> --suite official`"
        )
    try:
        return {
            "package_version": str(config["package_version"]),
            "git_commit": str(config.get("git_commit") or "unknown"),
            "agent": str(config["agent"]),
            "suite": str(suite["name"]),
            "suite_version": str(suite["version"]),
            "split": str(suite.get("split", "official")),
            "suite_fingerprint": str(suite["fingerprint"]),
        }
    except KeyError as exc:
        raise ValueError(f"config.json is missing the field {exc}") from None
