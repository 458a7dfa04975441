"""What an OpenAI-compatible reply may contain, read as hostile input: every shape is either the values the agent
needs or a :class:`ReplyShapeError` that names the field (``choices[0].logprobs.content[3].logprob: expected a
number, got null``). Pure functions over the decoded JSON; no I/O.

Required: ``choices[0].message.content`` (a string or null) for a chat completion; ``choices[0].logprobs``
``.text_offset`` and ``.token_logprobs`` for a scoring (echo) completion. Optional, checked when present:
``finish_reason`` (string), ``logprobs.content[i].logprob`` (a log-probability: a finite number ≤ 0),
``usage.completion_tokens`` (a non-negative integer). Extra fields are ignored, as servers add their own.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

LOGPROB_SLACK = 1e-4
"""How far above 0 a reported log-probability may be (rounding in the server's arithmetic)."""


class ReplyShapeError(ValueError):
    """A reply field that is missing or of the wrong kind; ``field`` is its path, ``missing`` says which."""

    def __init__(self, field: str, problem: str, *, missing: bool = False) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.missing = missing


class ChatReply(NamedTuple):
    """The parts of a chat completion the agent uses."""

    text: str
    finish_reason: str | None
    token_logprobs: tuple[float, ...] | None
    completion_tokens: int | None


def decode(raw: bytes) -> Any:
    """The JSON value of a reply body; ``ValueError`` for bytes that are not JSON (nesting too deep included)."""
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"not UTF-8 ({error.reason})") from None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def field(data: Any, *path: str | int) -> Any:
    """``data[path[0]][path[1]]…``; :class:`ReplyShapeError` at the first step that is missing or of the wrong kind."""
    value, where = data, "reply"
    for step in path:
        if isinstance(step, int):
            if not isinstance(value, list):
                raise ReplyShapeError(where, f"expected a list, got {_kind(value)}")
            if step >= len(value):
                raise ReplyShapeError(f"{where}[{step}]", f"missing (the list has {len(value)} items)", missing=True)
            where = f"{where}[{step}]"
        else:
            if not isinstance(value, dict):
                raise ReplyShapeError(where, f"expected an object, got {_kind(value)}")
            where = step if where == "reply" else f"{where}.{step}"
            if step not in value:
                raise ReplyShapeError(where, "missing", missing=True)
        value = value[step]
    return value


def _optional(data: Any, key: str) -> Any:
    """``data[key]``, or None when absent or null."""
    return data.get(key) if isinstance(data, dict) else None


def _logprob(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ReplyShapeError(where, f"expected a log-probability (a number), got {_kind(value)}")
    if not (math.isfinite(value) and value <= LOGPROB_SLACK):
        raise ReplyShapeError(where, f"expected a log-probability (finite, at most 0), got {value!r}")
    return float(value)


def chat_reply(data: Any) -> ChatReply:
    """The text, finish reason, per-token log-probs and token count of a ``/chat/completions`` reply."""
    choice = field(data, "choices", 0)
    text = field(data, "choices", 0, "message", "content")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise ReplyShapeError("choices[0].message.content", f"expected a string, got {_kind(text)}")
    finish = _optional(choice, "finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise ReplyShapeError("choices[0].finish_reason", f"expected a string, got {_kind(finish)}")
    logprobs = None
    block = _optional(choice, "logprobs")
    if block is not None:
        if not isinstance(block, dict):
            raise ReplyShapeError("choices[0].logprobs", f"expected an object, got {_kind(block)}")
        content = block.get("content")
        if content is not None:
            if not isinstance(content, list):
                raise ReplyShapeError("choices[0].logprobs.content", f"expected a list, got {_kind(content)}")
            where = "choices[0].logprobs.content"
            logprobs = tuple(
                _logprob(field(data, "choices", 0, "logprobs", "content", i, "logprob"), f"{where}[{i}].logprob")
                for i in range(len(content))
            )
    tokens = None
    usage = _optional(data, "usage")
    if usage is not None:
        if not isinstance(usage, dict):
            raise ReplyShapeError("usage", f"expected an object, got {_kind(usage)}")
        tokens = usage.get("completion_tokens")
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0):
            raise ReplyShapeError("usage.completion_tokens", f"expected a non-negative integer, got {tokens!r:.40}")
    if tokens is None and logprobs is not None:
        tokens = len(logprobs)
    return ChatReply(text, finish, logprobs, tokens)


def span_logprobs(data: Any, start: int, end: int) -> list[float]:
    """The prompt log-probs of an echo ``/completions`` reply for the tokens whose first character lies in
    ``[start, end)`` (the scored text). Tokens outside it may carry null (the first token of a prompt has no
    log-prob); inside it every token needs one."""
    offsets = field(data, "choices", 0, "logprobs", "text_offset")
    values = field(data, "choices", 0, "logprobs", "token_logprobs")
    where = "choices[0].logprobs"
    for name, value in (("text_offset", offsets), ("token_logprobs", values)):
        if not isinstance(value, list):
            raise ReplyShapeError(f"{where}.{name}", f"expected a list, got {_kind(value)}")
    if len(offsets) != len(values):
        raise ReplyShapeError(f"{where}.token_logprobs", f"has {len(values)} items but text_offset has {len(offsets)}")
    picked = []
    for i, (offset, value) in enumerate(zip(offsets, values, strict=True)):
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ReplyShapeError(f"{where}.text_offset[{i}]", f"expected a character offset, got {offset!r:.40}")
        if start <= offset < end:
            picked.append(_logprob(value, f"{where}.token_logprobs[{i}]"))
        elif value is not None:
            _logprob(value, f"{where}.token_logprobs[{i}]")
    return picked


def error_message(raw: bytes) -> str | None:
    """The message of an OpenAI-style error body (``{"error": {"message": …}}`` or ``{"error": "…"}``), if any."""
    try:
        data = decode(raw)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return str(message)[:300] if isinstance(message, (str, int, float)) and message != "" else None
