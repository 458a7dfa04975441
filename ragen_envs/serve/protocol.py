"""The WebSocket messages of OpenEnv's protocol, checked strictly: every bad request gets one line naming the
field, what is allowed and (where it helps) the fix, and the session goes on untouched.

Client → server: ``{"type": "reset", "data": {"seed": 3}}``, ``{"type": "step", "data": {"response": "..."}}``,
``{"type": "state"}``, ``{"type": "close"}``. Server → client: ``{"type": "observation", "data": {"observation":
{...}, "reward": r, "done": d}}``, ``{"type": "state", "data": {...}}`` or ``{"type": "error", "data":
{"code": ..., "message": ...}}``. Error codes are OpenEnv's (``WSErrorCode``) plus the few this server adds.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

MESSAGE_TYPES = ("reset", "step", "state", "close")
RESET_FIELDS = ("seed", "episode_id")
MAX_SEED = 2**64 - 1  # numpy's SeedSequence takes any size; a bound keeps a hostile 4,000-digit seed out
MAX_EPISODE_ID_CHARS = 255  # OpenEnv's ResetRequest bound

# OpenEnv's WSErrorCode values ...
INVALID_JSON = "INVALID_JSON"
UNKNOWN_TYPE = "UNKNOWN_TYPE"
VALIDATION_ERROR = "VALIDATION_ERROR"
EXECUTION_ERROR = "EXECUTION_ERROR"
CAPACITY_REACHED = "CAPACITY_REACHED"
FACTORY_ERROR = "FACTORY_ERROR"
# ... and this server's: each names a condition a client handles differently.
MESSAGE_TOO_LARGE = "MESSAGE_TOO_LARGE"
RESET_NEEDED = "RESET_NEEDED"
TIMEOUT = "TIMEOUT"
BUSY = "BUSY"
IDLE_TIMEOUT = "IDLE_TIMEOUT"
SESSION_ENDING = frozenset({CAPACITY_REACHED, FACTORY_ERROR, TIMEOUT, IDLE_TIMEOUT})
"""Errors the server sends just before it closes the session."""


class BadRequest(ValueError):
    """A request the server answers with an error and otherwise ignores."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Request:
    """One parsed client message: its ``type`` and its ``data`` object."""

    type: str
    data: dict[str, Any]


def _hint(name: str, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, allowed, n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def parse_request(text: str) -> Request:
    """The request in one text frame; :class:`BadRequest` naming what is wrong otherwise."""
    try:
        message = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadRequest(INVALID_JSON, f"Invalid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    except (ValueError, RecursionError) as e:  # a 5,000-digit number, 100,000 nested arrays
        raise BadRequest(INVALID_JSON, f"Invalid JSON: {str(e)[:200]}") from None
    if not isinstance(message, dict):
        raise BadRequest(
            VALIDATION_ERROR, f'A message must be a JSON object like {{"type": "reset"}}, got {_kind(message)}'
        )
    kind = message.get("type")
    if not isinstance(kind, str):
        got = "no 'type'" if "type" not in message else f"'type' {_kind(kind)}"
        raise BadRequest(VALIDATION_ERROR, f"A message needs a string 'type', one of {list(MESSAGE_TYPES)}; got {got}")
    if kind not in MESSAGE_TYPES:
        raise BadRequest(
            UNKNOWN_TYPE,
            f"Unknown message type {kind[:40]!r}.{_hint(kind, MESSAGE_TYPES)} Allowed: {', '.join(MESSAGE_TYPES)}",
        )
    extra = sorted(set(message) - {"type", "data"})
    if extra:
        raise BadRequest(VALIDATION_ERROR, f"Unknown key {extra[0][:40]!r} in a {kind} message; allowed: type, data")
    data = message.get("data", {})
    if data is None and kind != "step":
        data = {}
    if not isinstance(data, dict):
        raise BadRequest(VALIDATION_ERROR, f"'data' of a {kind} message must be an object, got {_kind(data)}")
    if kind == "reset":
        _check_reset(data)
    elif kind == "step":
        _check_step(data)
    elif data:
        raise BadRequest(VALIDATION_ERROR, f"A {kind} message takes no data, got keys {sorted(data)[:5]}")
    return Request(kind, data)


def _check_reset(data: dict[str, Any]) -> None:
    for name in data:
        if name not in RESET_FIELDS:
            raise BadRequest(
                VALIDATION_ERROR,
                f"Unknown reset field {name[:40]!r}.{_hint(name, RESET_FIELDS)} Allowed: {', '.join(RESET_FIELDS)}",
            )
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
        shown = repr(seed)[:40] if isinstance(seed, (int, float, str)) else _kind(seed)
        raise BadRequest(VALIDATION_ERROR, f"reset 'seed' must be an integer in [0, 2**64 - 1] or null, got {shown}")
    episode_id = data.get("episode_id")
    if episode_id is not None and (not isinstance(episode_id, str) or len(episode_id) > MAX_EPISODE_ID_CHARS):
        raise BadRequest(
            VALIDATION_ERROR,
            f"reset 'episode_id' must be a string of at most {MAX_EPISODE_ID_CHARS} characters or null",
        )


def _check_step(data: Any) -> None:
    if not isinstance(data, dict) or "response" not in data:
        raise BadRequest(VALIDATION_ERROR, 'A step message needs data {"response": "<the model\'s text>"}')
    for name in data:
        if name not in ("response", "metadata"):
            raise BadRequest(
                VALIDATION_ERROR,
                f"Unknown step field {name[:40]!r}.{_hint(name, ('response',))} Allowed: response, metadata",
            )
    if not isinstance(data["response"], str):
        raise BadRequest(VALIDATION_ERROR, f"step 'response' must be a string, got {_kind(data['response'])}")
    if not isinstance(data.get("metadata", {}), dict):
        raise BadRequest(VALIDATION_ERROR, "step 'metadata' must be an object")


def error_message(code: str, message: str) -> str:
    """The JSON text of an ``error`` message with ``code`` and ``message``."""
    return json.dumps({"type": "error", "data": {"code": code, "message": message}})


def reply(kind: str, data: dict[str, Any]) -> str:
    # json, not pydantic's dumper: it keeps floats exactly (repr round-trips) and escapes lone surrogates.
    """The JSON text of a ``kind`` message carrying ``data`` (floats kept exactly)."""
    return json.dumps({"type": kind, "data": data})
