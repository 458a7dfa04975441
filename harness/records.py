"""The files a run leaves behind (docs/harness.md) and how they are written.

``runs/<run-id>/``:

- ``config.json``: everything needed to rerun (run config, package version, git commit, env versions).
  Written atomically (temp file + rename) before the first episode.
- ``episodes.jsonl``: one line per finished episode, appended with a single ``write`` and flushed, so a
  killed run loses at most the line being written. A line is accepted only when it ends in a newline and
  parses; a torn last line (the crash case) is cut off before appending resumes. A bad line anywhere else,
  or a duplicated episode, raises :class:`RecordsCorrupt`: the file was edited or two runs wrote into it.
- ``summary.json``, ``summary.csv``, optional ``summary.parquet``/``episodes.parquet``, ``report.md``,
  ``*.png``: written by :mod:`harness.report` at the end (and by ``harness report``).

One episode line is an :data:`EpisodeRecord` (its turns :data:`TurnRecord`), the one schema the writer,
the metrics, the MI family, ``--resume`` and the leaderboard read::

    {"agent": "random", "env_id": "ragen/Bandit-v0", "env_kwargs": {}, "seed": 3, "sample": 1,
     "context_turns": null, "instructions": "...", "initial_observation": "...", "reset_info": {...},
     "turns": [{"turn": 1, "user": "Turn 1:\\nState:\\n...", "prefill": "<think>",
                "response": "<think>...</think><answer>Turtle</answer>", "reasoning": "...",
                "observation": "...", "reward": 0.1, "terminated": true, "truncated": false,
                "info": {"success": false, "action_is_valid": true, ...},
                "tokens": 7, "entropy_sum": 24.3, "logprob_sum": null}],
     "return": 0.1, "success": false, "num_turns": 1}

``response`` is the full text sent to ``env.step`` (``prefill`` + the agent's continuation), ``observation``
what ``step`` returned. The chat the agent saw is stored as deltas: ``user`` is the user message the turn
added, the system prompt is ``instructions``, earlier assistant messages are the earlier responses, and
``context_turns`` is the window (null: full history); :func:`harness.transcript.record_messages` rebuilds a
turn's exact chat.
"""

from __future__ import annotations

import json
import math
import os
import re
import types
from pathlib import Path
from typing import Any, NotRequired, TypedDict, get_args, get_origin, get_type_hints

import orjson

__all__ = [
    "CONFIG",
    "EPISODES",
    "SUMMARY",
    "EpisodeRecord",
    "EpisodeWriter",
    "RecordsCorrupt",
    "TurnRecord",
    "read_episodes",
    "sort_episodes",
]

CONFIG = "config.json"
"""A run folder's config file: everything needed to rerun it."""
EPISODES = "episodes.jsonl"
"""A run folder's episode log: one JSON line per finished episode."""
SUMMARY = "summary.json"
"""A run folder's summary: per env × agent metrics with standard errors."""


class RecordsCorrupt(ValueError):
    """episodes.jsonl holds a malformed line before its end, or the same episode twice."""


# The functional syntax: EpisodeRecord needs it (``return`` is a keyword), and under postponed annotations
# Python 3.11 reads a class-syntax ``NotRequired`` as required.
TurnRecord = TypedDict(  # noqa: UP013
    "TurnRecord",
    {
        "turn": int,  # 1-based
        "user": NotRequired[str],  # the user message this turn added to the chat
        "prefill": NotRequired[str],  # the assistant prefix the agent continued from ("<think>" or "")
        "response": str,  # prefill + the agent's continuation: the text sent to env.step
        "reasoning": NotRequired[str | None],  # the response's reasoning (None: none parsed)
        "observation": NotRequired[str],  # what env.step returned
        "reward": float,
        "terminated": NotRequired[bool],
        "truncated": NotRequired[bool],
        "info": dict[str, Any],  # env.step's info (``success``, ``action_is_valid``, ...)
        "tokens": NotRequired[int | None],  # response length in the agent's tokens (None: not reported)
        "entropy_sum": NotRequired[float | None],  # summed per-token policy entropy (None: not reported)
        "logprob_sum": NotRequired[float | None],  # summed per-token log-prob (None: not reported)
    },
)
"""One turn of an episode line (the order is the order written)."""

EpisodeRecord = TypedDict(
    "EpisodeRecord",
    {
        "agent": str,  # the agent spec
        "env_id": str,
        "env_kwargs": NotRequired[dict[str, Any]],
        "seed": int,  # the env seed
        "sample": int,  # which of the seed's samples, >= 0
        "context_turns": NotRequired[int | None],  # the chat window in turns, >= 0 (None: full history)
        "instructions": NotRequired[str],  # the system prompt
        "initial_observation": NotRequired[str],
        "reset_info": NotRequired[dict[str, Any]],  # reset's info without the instructions
        "turns": list[TurnRecord],
        "return": float,  # the turn rewards summed
        "success": bool,
        "num_turns": int,  # len(turns)
    },
)
"""One line of episodes.jsonl: an episode and every turn of it (``return`` is a keyword, hence this syntax)."""


def episode_key(record: EpisodeRecord) -> tuple[str, str, int, int]:
    """What identifies an episode within a run: (agent, env id, env seed, sample index)."""
    return (record["agent"], record["env_id"], int(record["seed"]), int(record["sample"]))


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars/arrays, tuples and sets made JSON-safe; NaN/inf become ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [jsonable(v) for v in sorted(value, key=repr)]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return jsonable(value.tolist())
    return repr(value)


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


_ORJSON_OPTIONS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_APPEND_NEWLINE


def dumps_line(record: EpisodeRecord) -> bytes:
    """One episodes.jsonl line: UTF-8 JSON and its newline.

    orjson writes the line (the stdlib's encoder takes 1.8-2.3x as long: 10-20% of the random agent's rollout
    instead of 5-11%, docs/benchmarks.md). What orjson refuses (non-string keys, integers beyond 64 bits, lone
    surrogates from a hostile model's text) goes through :func:`jsonable` and the stdlib's ASCII escaping
    instead, so no record can fail to be written; NaN/inf become ``null`` either way.
    """
    try:
        return orjson.dumps(record, default=_json_default, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError
        text = json.dumps(jsonable(record), ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        return (text + "\n").encode("ascii")


_LONG_DIGITS = re.compile(rb"[0-9]{19}")
"""19 digits in a row: an integer orjson may read as a float (it holds 64-bit integers only)."""


def loads_line(line: bytes) -> Any:
    """The JSON value of one line (orjson when it takes it; the stdlib for what only it reads: an escaped lone
    surrogate, or an integer beyond 64 bits, which orjson would read as a rounded float)."""
    if not _LONG_DIGITS.search(line):
        try:
            return orjson.loads(line)
        except ValueError:  # orjson.JSONDecodeError
            pass
    return json.loads(line)


def read_run_json(path: Path, missing: str, unreadable: str) -> Any:
    """One JSON file of a run folder, read with the errors a user can act on: ``FileNotFoundError(missing)`` when
    it is absent, ``ValueError`` naming the file, the parse error and ``unreadable`` (the fix) when it is not JSON."""
    if not path.exists():
        raise FileNotFoundError(missing)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); {unreadable}") from None


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to ``path`` via a temp file and rename, so readers never see half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


REPLAY_FIELDS = (
    "env_kwargs", "instructions", "initial_observation",  # of the episode
    "user", "prefill", "reasoning", "observation", "terminated", "truncated",  # of each turn
)  # fmt: skip
"""Fields the metrics do without but a replay needs: every line the harness writes has them, and the
leaderboard's verify requires them (``record_problem(record, replayable=True)``)."""

_INT = "an integer"
_NUMBER = "a finite number"
_STR = "a string"
_BOOL = "true or false"
_DICT = "an object"
_LIST = "a list"
_NONE = "null"
_KIND = {int: _INT, float: _NUMBER, str: _STR, bool: _BOOL, dict: _DICT, list: _LIST, type(None): _NONE}


def _fields(schema: type) -> dict[str, tuple[bool, tuple[str, ...]]]:
    """A TypedDict's fields as name -> (required, the kinds of JSON value allowed), in declaration order."""
    out = {}
    for name, annotation in get_type_hints(schema).items():
        options = get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
        out[name] = (name in schema.__required_keys__, tuple(_KIND[get_origin(o) or o] for o in options))
    return out


RECORD_FIELDS = _fields(EpisodeRecord)
"""An episode line's fields: name -> (required, allowed kinds). Other fields are kept and not checked."""
TURN_FIELDS = _fields(TurnRecord)


def _is(kind: str, value: Any) -> bool:
    if kind == _INT:
        return type(value) is int  # not bool, not 3.0, not "3"
    if kind == _NUMBER:
        return type(value) in (int, float) and math.isfinite(value)
    if kind == _STR:
        return type(value) is str
    if kind == _BOOL:
        return type(value) is bool
    if kind == _DICT:
        return type(value) is dict
    if kind == _LIST:
        return type(value) is list
    return value is None


def _check_fields(
    value: Any, fields: dict[str, tuple[bool, tuple[str, ...]]], where: str, replayable: bool
) -> str | None:
    if type(value) is not dict:
        return f"{where or 'the line'} must be a JSON object, got {_shown(value)}"
    for name, (required, kinds) in fields.items():
        if name not in value:
            if required or (replayable and name in REPLAY_FIELDS):
                return f"field {where}{name!r} is missing"
            continue
        if not any(_is(kind, value[name]) for kind in kinds):
            return f"field {where}{name!r} must be {' or '.join(kinds)}, got {_shown(value[name])}"
    return None


def _shown(value: Any) -> str:
    text = json.dumps(value, allow_nan=True) if not isinstance(value, (dict, list)) else type(value).__name__
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{text} ({'object' if isinstance(value, dict) else type(value).__name__})"


def record_problem(record: Any, *, replayable: bool = False) -> str | None:
    """What makes ``record`` not an :data:`EpisodeRecord` (the field and what it must be), or None when it is one.

    ``replayable``: also require the :data:`REPLAY_FIELDS`, without which an episode cannot be replayed.
    """
    problem = _check_fields(record, RECORD_FIELDS, "", replayable)
    if problem:
        return problem
    if record["sample"] < 0:
        return f"field 'sample' must be >= 0, got {record['sample']}"
    if record.get("context_turns") is not None and record["context_turns"] < 0:
        return f"field 'context_turns' must be null or >= 0, got {record['context_turns']}"
    for i, turn in enumerate(record["turns"]):
        problem = _check_fields(turn, TURN_FIELDS, f"turns[{i}].", replayable)
        if problem:
            return problem
    if record["num_turns"] != len(record["turns"]):
        return f"field 'num_turns' is {record['num_turns']} but the line holds {len(record['turns'])} turns"
    return None


def read_episodes(path: Path) -> tuple[list[EpisodeRecord], int]:
    """The accepted episode records of an episodes.jsonl and the byte length they span.

    A torn last line (no trailing newline, or not JSON) is not accepted; the returned length stops before it
    so a resumed run can cut it off. Every other line must be an episode record, types included
    (:func:`record_problem`): a line that parses but does not fit (a seed of ``"3"`` or ``3.9``, a NaN return,
    turns that are not a list) was not torn by a crash, so it raises :class:`RecordsCorrupt` naming the file,
    the line and the field, rather than silently changing a resumed run's summary.
    """
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    records: list[EpisodeRecord] = []
    seen, good_end, start, number = set(), 0, 0, 0
    while start < len(data):
        newline = data.find(b"\n", start)
        if newline < 0:
            break  # torn tail: no newline was ever written for it
        number += 1
        line = data[start:newline]
        try:
            record = loads_line(line)
        except ValueError as exc:
            if data[newline + 1 :].strip():
                raise RecordsCorrupt(f"{path}: line {number}: malformed line ({exc}); refusing to guess") from None
            break  # a garbled last line counts as torn
        problem = record_problem(record)
        if problem:
            raise RecordsCorrupt(f"{path}: line {number}: {problem}; refusing to resume from a line it cannot trust")
        key = episode_key(record)
        if key in seen:
            raise RecordsCorrupt(f"{path}: line {number}: episode {key} is recorded twice")
        seen.add(key)
        records.append(record)
        start = good_end = newline + 1
    return records, good_end


class EpisodeWriter:
    """Appends episode lines to episodes.jsonl, one flushed ``write`` each, after cutting a torn tail."""

    def __init__(self, path: Path, valid_length: int) -> None:
        self.path = path
        with open(path, "ab") as handle:  # create if missing
            if handle.tell() > valid_length:
                handle.truncate(valid_length)
        # A raw append-only descriptor: one os.write per line is the flush (no text layer or buffer to drain).
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_BINARY", 0))

    def write_line(self, line: bytes) -> None:
        """Append one episodes.jsonl line (bytes, newline included) in full; raises ``ValueError`` once closed."""
        if self._fd is None:
            raise ValueError(f"{self.path} is closed")
        view = memoryview(line)
        while view:  # a regular file takes the whole line at once; a short write is continued, never dropped
            view = view[os.write(self._fd, view) :]

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sort_episodes(records: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """Records in canonical order (agent, env, seed, sample): the order every summary is computed in."""
    return sorted(records, key=episode_key)
