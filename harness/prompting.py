"""RAGEN-style prompts: system = env instructions; each turn appends the state (and the last reward).

Turn ``k`` adds a user message ``"Reward: <r>\\nTurn k:\\nState:\\n<observation>"`` (no reward line on turn
1); the agent's previous responses stay in the conversation as assistant messages. The assistant prefix is
``"<think>"`` when the env's response format asks for reasoning (the model continues from it). With a
context window of ``k`` turns only the last ``k`` earlier exchanges are kept (the system prompt always is).

A record stores each turn's prompt as its delta: the turn's new user message (``turn["user"]``) once, the
system prompt once (``record["instructions"]``), the assistant messages as the responses, and the window as
``record["context_turns"]``; :func:`record_messages` rebuilds the exact chat of any turn from these.
Records of format 1 stored every turn's full chat in ``turn["prompt"]``; it is returned as is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.agents.base import Context, EnvHandle, Message


def prefill_for(response_format: str) -> str:
    """The assistant prefix for a response format: ``"<think>"`` for ``think``, nothing otherwise."""
    return "<think>" if response_format == "think" else ""


def user_message(turn: int, observation: str, last_reward: float | None) -> Message:
    """The user message of one turn."""
    reward = "" if last_reward is None else f"Reward: {last_reward:g}\n"
    return {"role": "user", "content": f"{reward}Turn {turn}:\nState:\n{observation}"}


def build_context(
    system: Message,
    exchanges: list[tuple[Message, Message]],
    current: Message,
    prefill: str,
    context_turns: int | None,
    env: EnvHandle | None = None,
) -> Context:
    """The context of the next response: system, the kept (user, assistant) exchanges, the current user turn."""
    kept = exchanges if context_turns is None else exchanges[max(0, len(exchanges) - context_turns) :]
    messages = [system]
    for user, assistant in kept:
        messages.append(user)
        messages.append(assistant)
    messages.append(current)
    return Context(tuple(messages), prefill, env)


def record_messages(record: dict[str, Any], index: int) -> tuple[Message, ...]:
    """The chat turn ``index`` (0-based) of an episode record saw, rebuilt from the record's deltas."""
    turns: Sequence[dict[str, Any]] = record["turns"]
    turn = turns[index]
    if "prompt" in turn:  # format 1: the full chat is stored
        return tuple(turn["prompt"])
    window = record.get("context_turns")
    first = 0 if window is None else max(0, index - window)
    messages: list[Message] = [{"role": "system", "content": record["instructions"]}]
    for earlier in turns[first:index]:
        messages.append({"role": "user", "content": earlier["user"]})
        messages.append({"role": "assistant", "content": earlier["response"]})
    messages.append({"role": "user", "content": turn["user"]})
    return tuple(messages)
