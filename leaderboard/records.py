"""The harness's run files (config.json, episodes.jsonl) as the leaderboard reads them.

Episode lines are checked against the harness's own schema (:data:`harness.records.EpisodeRecord`, with the
fields a replay needs); config.json's fields are read here only, so a change in :mod:`harness.runner` is a
change here only. It also turns a suite split into a harness ``RunConfig``
(``harness run … --suite official``) and finds which suite split a run's config.json is.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from harness.records import RECORD_FIELDS, TURN_FIELDS, EpisodeRecord, TurnRecord, record_problem
from leaderboard.suite import SUITE_VERSIONS, Suite
from ragen_envs.core import MAX_RESPONSE_CHARS

RESPONSE_CAP_CHARS = MAX_RESPONSE_CHARS
"""The longest response a submission may record per turn (the envs' action-space size; about ten times RAGEN's 400-token turn)."""
TURN_BYTES = 8 * RESPONSE_CAP_CHARS + (32 << 10)
"""A turn's share of a line: its response and reasoning at the cap, 4 UTF-8 bytes a character, and 32 KiB for the
observation, the user message and info (an honest turn of the official suite holds under 4 KiB in all)."""
LINE_BASE_BYTES = 32 << 10
"""A line's share besides its turns: ids, instructions, the initial observation and the totals."""


def max_line_bytes(max_turns: int) -> int:
    """The longest episodes.jsonl line an honest record of an env with ``max_turns`` turns can be."""
    return LINE_BASE_BYTES + max_turns * TURN_BYTES


class RecordError(ValueError):
    """An episode line that is not a replayable :data:`harness.records.EpisodeRecord`."""


@dataclass(frozen=True)
class ParsedEpisode:
    """One line of episodes.jsonl, type-checked; ``raw`` is the parsed record (harness metrics take it)."""

    line: int
    env_id: str
    env_kwargs: dict[str, Any]
    seed: int
    sample: int
    raw: EpisodeRecord

    @property
    def name(self) -> str:
        """How error messages name this episode: env id, seed, sample and its line in episodes.jsonl."""
        return f"episode {self.env_id} seed {self.seed} sample {self.sample} (episodes.jsonl line {self.line})"

    @property
    def turns(self) -> list[TurnRecord]:
        """The record's turns, as parsed from the JSON line."""
        return self.raw["turns"]


def parse_episode(line_number: int, obj: Any) -> ParsedEpisode:
    """One parsed JSON line of episodes.jsonl as a :class:`ParsedEpisode`; :class:`RecordError` naming the field
    when it is not a replayable episode record (:func:`harness.records.record_problem`)."""
    problem = record_problem(obj, replayable=True)
    if problem:
        where = f"episodes.jsonl line {line_number}"
        if (
            isinstance(obj, dict)
            and type(obj.get("env_id")) is str
            and all(type(obj.get(key)) is int for key in ("seed", "sample"))
        ):
            where = f"episode {obj['env_id']} seed {obj['seed']} sample {obj['sample']} ({where})"
        raise RecordError(f"{where}: {problem}")
    for index, turn in enumerate(obj["turns"], start=1):
        if len(turn["response"]) > RESPONSE_CAP_CHARS:
            raise RecordError(
                f"episode {obj['env_id']} seed {obj['seed']} sample {obj['sample']} (episodes.jsonl line"
                f" {line_number}) turn {index}: a response of {len(turn['response']):,} characters, over the"
                f" leaderboard's {RESPONSE_CAP_CHARS:,} per turn"
            )
    return ParsedEpisode(line_number, obj["env_id"], obj["env_kwargs"], obj["seed"], obj["sample"], obj)


def known_fields(record: ParsedEpisode) -> ParsedEpisode:
    """``record`` holding only the fields of the harness's schema (what replay checked and metrics read); fields
    it does not know are not kept in memory past the line."""
    raw = {k: v for k, v in record.raw.items() if k in RECORD_FIELDS}
    raw["turns"] = [{k: v for k, v in turn.items() if k in TURN_FIELDS} for turn in record.raw["turns"]]
    return ParsedEpisode(record.line, record.env_id, record.env_kwargs, record.seed, record.sample, raw)  # type: ignore[arg-type]


def iter_episode_lines(data: bytes, max_bytes: int | None = None) -> Iterator[tuple[int, Any, str]]:
    """``(line number, parsed object or None, error)`` for every non-empty line of an episodes.jsonl, one line in
    memory at a time; a line over ``max_bytes`` is an error before it is parsed."""
    start, number = 0, 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end
        number += 1
        if max_bytes is not None and end - start > max_bytes:
            yield (
                number,
                None,
                (
                    f"episodes.jsonl line {number}: {end - start:,} bytes, over the {max_bytes:,} an honest episode of"
                    " this suite can take; not parsed"
                ),
            )
            start = end + 1
            continue
        line = data[start:end]
        start = end + 1
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

    Tries ``suite`` if given, else every built-in suite version; the hidden split only with the secret.
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
    candidates = [suite] if suite is not None else list(SUITE_VERSIONS)
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
