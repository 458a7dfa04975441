"""Parsing of model responses: pure functions, linear time, never raise on any input string.

Four response formats are supported:

- ``"think"`` (default): ``<think>reasoning</think><answer>actions</answer>``. Whitespace may sit between
  the two blocks; text before ``<think>`` and after ``</answer>`` is ignored (as RAGEN's regex does).
- ``"answer"``: ``<answer>actions</answer>`` anywhere in the text; reasoning is whatever precedes it.
- ``"raw"``: the whole stripped text is the answer.
- ``"tool"``: one or more ``<tool_call>{"name": …, "arguments": {…}}</tool_call>`` blocks, the form Hermes/Qwen
  chat templates teach and vLLM's and TRL's tool parsers read. The answer is the text from the first
  ``<tool_call>`` to the last ``</tool_call>``; :func:`tool_call_bodies` splits it into calls and
  :func:`decode_tool_call` reads one (the env's tools, :mod:`ragen_envs.tools`, turn each into an action).
  Reasoning is the text before the first call: the inside of a ``<think>…</think>`` block there when it has
  one (models that think in tags), else all of that text (free text before the call, as tool-trained chat
  models write it).

This module is also the one home of the reasoning Z the collapse metrics measure (:func:`reasoning_of`), of
the writer of responses (:func:`format_response`), of the random reasoning words scripted responses are made
of (:func:`random_reasoning`) and of the normalisation of one action string (:func:`normalize_action`).

We scan with ``str.find`` rather than a DOTALL regex: a backtracking regex over a megabyte of nested or
unclosed tags is quadratic, and model output is hostile input.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

__all__ = [
    "RESPONSE_FORMATS",
    "ParsedResponse",
    "decode_tool_call",
    "format_instructions",
    "format_response",
    "normalize_action",
    "parse_response",
    "reasoning_of",
    "split_actions",
]

RESPONSE_FORMATS = ("think", "answer", "raw", "tool")
"""The response formats an env accepts (its ``response_format`` argument)."""
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
TOOL_CALL_OPEN, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"

REASONING_VOCAB = (
    "maybe", "this", "looks", "right", "I", "think", "the", "next", "step", "should", "work", "try",
    "move", "check", "again", "probably", "best", "option", "now", "so", "then", "because", "closer", "goal",
    "hmm", "wait", "plan", "left", "up", "down", "safe", "sure",
)  # fmt: skip
"""The words of random, input-agnostic reasoning (:func:`random_reasoning`)."""
SAMPLE_VOCAB = REASONING_VOCAB[:24]
"""The words of an env's ``action_space.sample()`` reasoning. A prefix of :data:`REASONING_VOCAB` rather than the
whole of it: an env's samples for a seed are part of its version, and the random agent's exact scores depend on
its own vocabulary's size, so each keeps the vocabulary it was released with."""
MIN_REASONING_WORDS, MAX_REASONING_WORDS = 3, 11


class ParsedResponse(NamedTuple):
    """The outcome of parsing one response. ``error`` is empty exactly when ``ok`` is True.

    Immutable; a NamedTuple rather than a frozen dataclass because one is built on every env step, and a tuple
    builds in half the time (0.30 vs 0.56-0.59 µs, 4-5% of a Bandit or FrozenLake step: docs/benchmarks.md).
    """

    ok: bool
    thinking: str = ""
    answer: str = ""
    error: str = ""


def _fail(error: str) -> ParsedResponse:
    return ParsedResponse(ok=False, error=error)


def _find_answer(text: str, start: int) -> str | ParsedResponse:
    """The stripped answer of the first ``<answer>…</answer>`` at or after ``start``, else a failure."""
    open_at = text.find(ANSWER_OPEN, start)
    if open_at < 0:
        return _fail(f"missing {ANSWER_OPEN}")
    close_at = text.find(ANSWER_CLOSE, open_at + len(ANSWER_OPEN))
    if close_at < 0:
        return _fail(f"missing {ANSWER_CLOSE} after {ANSWER_OPEN}")
    return text[open_at + len(ANSWER_OPEN) : close_at].strip()


def parse_response(text: object, response_format: str = "think") -> ParsedResponse:
    """Split a model response into reasoning and answer according to ``response_format``."""
    if not isinstance(text, str):
        return _fail(f"response must be a string, got {type(text).__name__}")
    if response_format == "raw":
        answer = text.strip()
        return ParsedResponse(ok=True, answer=answer) if answer else _fail("empty response")
    if response_format == "tool":
        open_at = text.find(TOOL_CALL_OPEN)
        if open_at < 0:
            return _fail(f"missing {TOOL_CALL_OPEN}")
        if text.find(TOOL_CALL_CLOSE, open_at + len(TOOL_CALL_OPEN)) < 0:
            return _fail(f"missing {TOOL_CALL_CLOSE} after {TOOL_CALL_OPEN}")
        answer = text[open_at : text.rfind(TOOL_CALL_CLOSE) + len(TOOL_CALL_CLOSE)]
        return ParsedResponse(ok=True, thinking=_reasoning_before_call(text[:open_at]), answer=answer)
    if response_format == "answer":
        answer = _find_answer(text, 0)
        if isinstance(answer, ParsedResponse):
            return answer
        thinking = text[: text.find(ANSWER_OPEN)].strip()
    elif response_format == "think":
        think_at = text.find(THINK_OPEN)
        if think_at < 0:
            return _fail(f"missing {THINK_OPEN}")
        body_at = think_at + len(THINK_OPEN)
        close_at = text.find(THINK_CLOSE, body_at)
        if close_at < 0:
            return _fail(f"missing {THINK_CLOSE} after {THINK_OPEN}")
        after = close_at + len(THINK_CLOSE)
        if not text.startswith(ANSWER_OPEN, after):  # only whitespace may separate the blocks
            after = len(text) - len(text[after:].lstrip())
            if not text.startswith(ANSWER_OPEN, after):
                return _fail(f"{THINK_CLOSE} must be followed by {ANSWER_OPEN}")
        answer_at = after + len(ANSWER_OPEN)
        answer_close = text.find(ANSWER_CLOSE, answer_at)
        if answer_close < 0:
            return _fail(f"missing {ANSWER_CLOSE} after {ANSWER_OPEN}")
        answer = text[answer_at:answer_close].strip()
        thinking = text[body_at:close_at].strip()
    else:
        return _fail(f"unknown response format {response_format!r}; allowed: {RESPONSE_FORMATS}")
    if not answer:
        return ParsedResponse(ok=False, thinking=thinking, error="empty answer")
    return ParsedResponse(ok=True, thinking=thinking, answer=answer)


def reasoning_of(response: str, response_format: str) -> str | None:
    """The reasoning Z of a response, stripped: what the collapse metrics score and the records store.

    ``think``: the text between the first ``<think>`` and the first ``</think>`` after it, whether or not a
    well-formed answer follows (Z is measured even on turns whose answer the env rejects); ``answer``: the
    text before the first ``<answer>``; ``tool``: the text before the first ``<tool_call>`` (the inside of its
    ``<think>…</think>`` block when it has one), whatever the calls say; ``raw`` (and any other format): no
    reasoning.

    None means the response has no reasoning block (its tags are missing or unclosed, or the format has none);
    ``""`` means the block is there and empty. Records keep the two apart because they are different failures
    (a broken format against reasoning that collapsed to nothing); a reader that wants usable reasoning tests
    truthiness, as the MI estimators do (both are left out).
    """
    if response_format == "think":
        start = response.find(THINK_OPEN)
        if start < 0:
            return None
        body_at = start + len(THINK_OPEN)
        end = response.find(THINK_CLOSE, body_at)
        return response[body_at:end].strip() if end >= 0 else None
    if response_format == "answer":
        end = response.find(ANSWER_OPEN)
        return response[:end].strip() if end >= 0 else None
    if response_format == "tool":
        end = response.find(TOOL_CALL_OPEN)
        return _reasoning_before_call(response[:end]) if end >= 0 else None
    return None


def _reasoning_before_call(before: str) -> str:
    """The reasoning in the text before a tool call: its ``<think>`` block's inside, else the whole text."""
    start = before.find(THINK_OPEN)
    if start >= 0:
        end = before.find(THINK_CLOSE, start + len(THINK_OPEN))
        if end >= 0:
            return before[start + len(THINK_OPEN) : end].strip()
    return before.strip()


def tool_call_bodies(answer: str, limit: int | None = None) -> list[str]:
    """The stripped bodies of the ``<tool_call>…</tool_call>`` blocks in a tool-format answer, in order, at most
    ``limit``; text between blocks and an unclosed last block are ignored."""
    bodies: list[str] = []
    at = answer.find(TOOL_CALL_OPEN)
    while at >= 0 and (limit is None or len(bodies) < limit):
        body_at = at + len(TOOL_CALL_OPEN)
        close_at = answer.find(TOOL_CALL_CLOSE, body_at)
        if close_at < 0:
            break
        bodies.append(answer[body_at:close_at].strip())
        at = answer.find(TOOL_CALL_OPEN, close_at + len(TOOL_CALL_CLOSE))
    return bodies


def _load_json(text: str) -> tuple[Any, str]:
    """``(value, "")`` for JSON text, else ``(None, why not)``; never raises.

    orjson (a required dependency) rather than the stdlib: 4.5x faster on a call's body (0.7 vs 3.3 µs; the tool
    format's step cost: docs/benchmarks.md, "Tool format"), and its depth limit (1,024) answers deeply nested
    input with an error instead of a recursion.
    """
    try:
        return orjson.loads(text), ""
    except orjson.JSONDecodeError as error:
        return None, f"not valid JSON ({error.msg} at character {error.pos})"


def decode_tool_call(body: str) -> tuple[str, dict[str, Any]] | str:
    """``(name, arguments)`` of one tool call's JSON body, or the reason it is not a call (never raises).

    The body is ``{"name": str, "arguments": object}``; ``arguments`` may also be a string holding the JSON object
    (OpenAI's wire form) and may be left out when the tool takes none.
    """
    call, error = _load_json(body)
    if error:
        return f"the tool call is {error}"
    if not isinstance(call, dict):
        return 'a tool call must be a JSON object {"name": ..., "arguments": {...}}'
    name = call.get("name")
    if not isinstance(name, str):
        return 'a tool call needs a "name" string'
    arguments = call.get("arguments", {})
    if isinstance(arguments, str):
        arguments, error = _load_json(arguments) if arguments.strip() else ({}, "")
        if error:
            return f'the "arguments" string of tool call {name[:40]!r} is {error}'
    if not isinstance(arguments, dict):
        return f'the "arguments" of tool call {name[:40]!r} must be a JSON object'
    return name, arguments


def random_reasoning(rng: Any, vocabulary: tuple[str, ...] = REASONING_VOCAB) -> list[str]:
    """``k`` words drawn uniformly with replacement from ``vocabulary``, ``k`` uniform in
    [:data:`MIN_REASONING_WORDS`, :data:`MAX_REASONING_WORDS`]; ``rng`` is a ``numpy.random.Generator`` (two draws:
    ``k``, then the words)."""
    k = int(rng.integers(MIN_REASONING_WORDS, MAX_REASONING_WORDS + 1))
    return [vocabulary[int(i)] for i in rng.integers(len(vocabulary), size=k)]


def normalize_action(text: str, strip_chars: str) -> str:
    """One action string as an env looks it up: without surrounding whitespace and ``strip_chars``, casefolded.

    Each env passes the punctuation it forgives (``"Left."``, ``"`Up`"``); the sets differ per env and stay as
    each env version released them, since widening one changes which responses count as valid.
    """
    return text.strip().strip(strip_chars).casefold()


def split_actions(answer: str, separator: str | None = "||", limit: int | None = None) -> list[str]:
    """Split an answer into stripped, non-empty action strings, keeping at most ``limit`` of them."""
    parts = [answer] if separator is None else answer.split(separator)
    parts = [part for part in map(str.strip, parts) if part]
    return parts if limit is None else parts[:limit]


def format_response(
    thinking: str, answer: str, response_format: str = "think", *, reasoning_before_answer: bool = False
) -> str:
    """The inverse of :func:`parse_response`: write a response in the given format.

    In the ``answer`` format reasoning is optional free text before the tag: ``reasoning_before_answer`` writes a
    non-empty ``thinking`` there on its own line (the scripted agents, whose reasoning is measured); without it the
    ``answer`` format writes the answer block alone (an env's samples and oracle response, fixed per env version).
    In the ``tool`` format ``answer`` is the tool-call blocks (:func:`ragen_envs.tools.write_tool_calls`), and a
    non-empty ``thinking`` always precedes them on its own line.
    """
    if response_format == "think":
        return f"{THINK_OPEN}{thinking}{THINK_CLOSE}{ANSWER_OPEN}{answer}{ANSWER_CLOSE}"
    if response_format == "answer":
        block = f"{ANSWER_OPEN}{answer}{ANSWER_CLOSE}"
        return f"{thinking}\n{block}" if reasoning_before_answer and thinking else block
    if response_format == "raw":
        return answer
    if response_format == "tool":
        return f"{thinking}\n{answer}" if thinking else answer
    raise ValueError(f"response_format must be one of {RESPONSE_FORMATS}, got {response_format!r}")


def format_instructions(response_format: str, example_answer: str, separator: str | None = "||") -> str:
    """The sentence of the system prompt that tells the model how to write its response (the tool format's names
    the env's tools: :func:`ragen_envs.tools.tool_instructions`)."""
    if response_format == "think":
        text = (
            f"Always respond as {THINK_OPEN}your reasoning{THINK_CLOSE}{ANSWER_OPEN}your answer{ANSWER_CLOSE} "
            f"with no other text, e.g. {format_response('...', example_answer, 'think')}"
        )
    elif response_format == "tool":
        raise ValueError("the tool format's instructions name the env's tools: use ragen_envs.tools.tool_instructions")
    elif response_format == "answer":
        text = f"Always respond as {ANSWER_OPEN}your answer{ANSWER_CLOSE}, e.g. {format_response('', example_answer, 'answer')}"
    else:
        text = f"Respond with your answer only, e.g. {example_answer}"
    if separator is not None:
        text += f". Separate several actions with ' {separator.strip()} '."
    return text
