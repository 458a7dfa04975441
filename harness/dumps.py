"""Rollout dumps of other trainers as (step, prompt, response) samples, for ``harness mi``.

One reader per format, each recognised from a line's keys (docs/metrics.md shows an example line of each):

- ``ragen-envs``: our episode records (``episodes.jsonl`` of ``harness run``): lines with ``turns`` and
  ``env_id``; the sample is turn 1 (its chat rebuilt by :func:`harness.transcript.record_messages`, its prefill and
  response as recorded); step ``iteration`` or ``step`` when present, else 0.
- ``trl``: TRL's completion logs (``GRPOConfig(log_completions=True)`` writes ``completions/completions_<step>.parquet``;
  the same columns as JSONL work too): ``step``, ``prompt`` (a chat, or text TRL fed the model as is) and
  ``completion`` (the assistant message(s), or text).
- ``verl``: verl's rollout dumps (``trainer.rollout_data_dir`` writes ``<step>.jsonl``): ``input`` (the prompt
  after the chat template, decoded without special tokens), ``output``, ``step``. The prompt is scored as that
  text: the special tokens verl dropped are not restored, so MI from a verl dump is close to, not exactly, the
  MI under the prompt the policy saw (for exact numbers, log chats in one of the other formats).
- ``ragen``: RAGEN-style chat transcripts: ``messages`` (system, user, assistant, …); the first assistant message is
  the first turn's response and the messages before it its prompt; step ``step`` or ``global_step``.

The reasoning is the text between ``<think>`` and ``</think>`` (:func:`ragen_envs.parsing.reasoning_of`); a
response that starts inside the block (the prompt ended with ``<think>``) gives the text before ``</think>``.
Responses without reasoning are counted and left out, as in RAGEN.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agents.base import Context
from harness.transcript import RENDERED, record_messages
from ragen_envs.parsing import reasoning_of

FORMATS = ("ragen-envs", "trl", "verl", "ragen")
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


@dataclass(frozen=True)
class Sample:
    """One first-turn sample of a dump: its training step, the context the model wrote after, and the response
    text (what came after the context's prefill)."""

    step: int
    context: Context
    response: str

    @property
    def reasoning(self) -> str | None:
        """The reasoning Z of the response (None without a reasoning block)."""
        return split_reasoning(self.context.prefill, self.response)


def split_reasoning(prefill: str, response: str) -> str | None:
    """Z of ``response`` written after ``prefill``: inside ``<think>…</think>``, or, when the prefill opened the block
    (``<think>``) and the response has no opening tag, the text before ``</think>``."""
    if prefill.rstrip().endswith(THINK_OPEN) and THINK_OPEN not in response:
        end = response.find(THINK_CLOSE)
        return response[:end].strip() if end >= 0 else None
    return reasoning_of(response, "think")


def detect_format(row: dict[str, Any]) -> str:
    """The format of one dump line, from its keys (a clear error naming the accepted keys otherwise)."""
    if "turns" in row and "env_id" in row:
        return "ragen-envs"
    if "prompt" in row and "completion" in row:
        return "trl"
    if "input" in row and "output" in row:
        return "verl"
    if isinstance(row.get("messages"), list):
        return "ragen"
    raise ValueError(
        f"a dump line with keys {sorted(row)[:8]} is none of the formats {', '.join(FORMATS)}: expected turns+env_id "
        "(ragen-envs), prompt+completion (trl), input+output (verl) or messages (ragen); see docs/metrics.md"
    )


def _step(row: dict[str, Any], *keys: str) -> int:
    for key in keys:
        if row.get(key) is not None:
            try:
                return int(row[key])
            except (TypeError, ValueError):
                raise ValueError(f"step field {key!r} must be an integer, got {row[key]!r}") from None
    return 0


def _chat(messages: Any, what: str) -> tuple[dict[str, str], ...]:
    if not isinstance(messages, list) or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise ValueError(f"{what} must be text or a list of {{role, content}} messages, got {str(messages)[:80]!r}")
    return tuple({"role": str(m["role"]), "content": str(m.get("content") or "")} for m in messages)


def _sample(step: int, prompt: Any, response: str, what: str) -> Sample:
    """A prompt (a chat, or text already rendered) and its response. The reasoning is scored after the prompt and
    ``<think>``, as the harness scores its own: a response that opens with ``<think>`` gives it to the prefill, a
    chat gets it as the prefill the harness writes, and a rendered prompt that ends with it (the trainer's prefill)
    keeps it."""
    if isinstance(prompt, str):
        messages: tuple[dict[str, str], ...] = ({"role": RENDERED, "content": prompt},)
        opened = prompt.rstrip().endswith(THINK_OPEN)
    else:
        messages, opened = _chat(prompt, what), False
    head = response.lstrip()
    if not opened and head.startswith(THINK_OPEN):
        return Sample(step, Context(messages, THINK_OPEN), head[len(THINK_OPEN) :])
    return Sample(step, Context(messages, "" if opened or isinstance(prompt, str) else THINK_OPEN), response)


def _text(value: Any, what: str) -> str:
    if isinstance(value, str):
        return value
    return "".join(m["content"] for m in _chat(value, what) if m["role"] == "assistant")


def sample_of(row: dict[str, Any], form: str) -> Sample | None:
    """The first-turn sample of one line of format ``form`` (None when the line holds no response)."""
    if form == "ragen-envs":
        if not row["turns"]:
            return None
        turn = row["turns"][0]
        context = Context(record_messages(row, 0), turn.get("prefill", ""))
        return Sample(_step(row, "iteration", "step"), context, turn["response"])
    if form == "trl":
        return _sample(_step(row, "step"), row["prompt"], _text(row["completion"], "trl completion"), "trl prompt")
    if form == "verl":
        return _sample(_step(row, "step"), str(row["input"]), str(row["output"]), "verl input")
    messages = _chat(row["messages"], "messages")
    first = next((i for i, m in enumerate(messages) if m["role"] == "assistant"), None)
    if first is None or first == 0:
        return None
    return _sample(_step(row, "step", "global_step"), list(messages[:first]), messages[first]["content"], "messages")


def _rows(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, row) of a JSONL or Parquet file."""
    if path.suffix == ".parquet":
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "reading Parquet dumps needs pandas and pyarrow: pip install 'ragen-envs[report]'"
            ) from None
        for i, row in enumerate(pd.read_parquet(path).to_dict(orient="records")):
            yield f"{path} row {i}", {k: _plain(v) for k, v in row.items()}
        return
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not a JSON line ({error.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{number}: a dump line must be a JSON object")
            yield f"{path}:{number}", row


def _plain(value: Any) -> Any:
    """Parquet's arrays (a chat column) as lists of plain dicts."""
    if hasattr(value, "tolist") and not isinstance(value, str):
        value = value.tolist()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def dump_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files named, a folder standing for its ``*.jsonl`` and ``*.parquet`` files (sorted)."""
    out: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            found = sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".parquet"))
            if not found:
                raise FileNotFoundError(f"{path}: no .jsonl or .parquet files in this folder")
            out += found
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"{path}: no such dump file or folder")
    return out


def read_dump(paths: Iterable[str | Path]) -> tuple[list[Sample], str, int]:
    """Every first-turn sample of the dump files, their format (one per dump) and how many lines had no
    response."""
    samples: list[Sample] = []
    form: str | None = None
    empty = 0
    for path in dump_files(paths):
        for where, row in _rows(path):
            kind = detect_format(row)
            if form is None:
                form = kind
            elif kind != form:
                raise ValueError(f"{where}: a {kind} line in a {form} dump (one format per call)")
            try:
                sample = sample_of(row, kind)
            except (KeyError, ValueError) as error:
                raise ValueError(f"{where}: {error}") from None
            if sample is None:
                empty += 1
            else:
                samples.append(sample)
    if form is None:
        raise ValueError("the dump holds no lines")
    return samples, form, empty
