"""The files a run leaves behind (DESIGN.md "Files a run leaves behind") and how they are written.

``runs/<run-id>/``:

- ``config.json``: everything needed to rerun (run config, package version, git commit, env versions).
  Written atomically (temp file + rename) before the first episode.
- ``episodes.jsonl``: one line per finished episode, appended with a single ``write`` and flushed, so a
  killed run loses at most the line being written. A line is accepted only when it ends in a newline and
  parses; a torn last line (the crash case) is cut off before appending resumes. A bad line anywhere else,
  or a duplicated episode, raises :class:`RecordsCorrupt`: the file was edited or two runs wrote into it.
- ``summary.json``, ``summary.csv``, optional ``summary.parquet``/``episodes.parquet``, ``report.md``,
  ``*.png``: written by :mod:`harness.report` at the end (and by ``harness report``).

One episode line (format 2)::

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
``context_turns`` is the window (null: full history); :func:`harness.prompting.record_messages` rebuilds a
turn's exact chat. (Format 1 stored each turn's whole chat as ``prompt``: quadratic in the episode length,
and the instructions twice; readers still accept it.)
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

CONFIG = "config.json"
EPISODES = "episodes.jsonl"
SUMMARY = "summary.json"


class RecordsCorrupt(ValueError):
    """episodes.jsonl holds a malformed line before its end, or the same episode twice."""


def episode_key(record: dict[str, Any]) -> tuple[str, str, int, int]:
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


_LINE_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_json_default)
"""What ``json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_json_default)``
builds on every call (an encoder is stateless between calls), built once."""

_C_ENCODE = (
    None
    if json.encoder.c_make_encoder is None
    else json.encoder.c_make_encoder(
        None, _json_default, json.encoder.encode_basestring, None, ":", ",", False, False, False
    )
)
"""The C encoder ``_LINE_ENCODER.encode`` constructs on every call (markers=None: a record is a tree, so no
circular-reference bookkeeping), built once; the same bytes, ~20% less time per Bandit line."""


def dumps_line(record: dict[str, Any]) -> str:
    """One episodes.jsonl line (with its newline); anything JSON cannot hold goes through :func:`jsonable`."""
    try:  # fast path: plain data (the common case) is encoded as is
        text = "".join(_C_ENCODE(record, 0)) if _C_ENCODE is not None else _LINE_ENCODER.encode(record)
    except (ValueError, TypeError):  # NaN/inf somewhere, or non-string keys
        text = json.dumps(jsonable(record), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text + "\n"


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON to ``path`` via a temp file and rename, so readers never see half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_episodes(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The accepted episode records of an episodes.jsonl and the byte length they span.

    A torn last line (no trailing newline, or unparseable) is not accepted; the returned length stops
    before it so a resumed run can cut it off.
    """
    if not path.exists():
        return [], 0
    data = path.read_bytes()
    records, seen, good_end, start = [], set(), 0, 0
    while start < len(data):
        newline = data.find(b"\n", start)
        if newline < 0:
            break  # torn tail: no newline was ever written for it
        line = data[start:newline]
        try:
            record = json.loads(line)
            key = episode_key(record)
        except (ValueError, KeyError, TypeError) as exc:
            if data[newline + 1 :].strip():
                raise RecordsCorrupt(f"{path}: malformed line at byte {start} ({exc}); refusing to guess") from None
            break  # a garbled last line counts as torn
        if key in seen:
            raise RecordsCorrupt(f"{path}: episode {key} is recorded twice (byte {start})")
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
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()

    def write_line(self, line: str) -> None:
        self._handle.write(line)
        self._handle.flush()

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sort_episodes(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records in canonical order (agent, env, seed, sample): the order every summary is computed in."""
    return sorted(records, key=episode_key)
