"""The transcript of an episode: the chat each response is written under, built, advanced and replayed.

RAGEN-style prompts: the system message is the env's instructions; turn ``k`` adds a user message
``"Reward: <r>\\nTurn k:\\nState:\\n<observation>"`` (no reward line on turn 1); the agent's previous responses
stay in the conversation as assistant messages. The assistant prefix (the prefill) is ``"<think>"`` when the
env's response format asks for reasoning (the model continues from it). With a context window of ``k`` turns
only the last ``k`` earlier exchanges are kept (the system prompt always is).

Every loop that plays or replays episodes holds a :class:`Transcript`: the harness's rollout, the learner's
rollout (:mod:`baselines.ppo.rollout`) and the leaderboard's verification replay. A language model sees a
context through :func:`render_prompt` (chat template, generation prompt, prefill). The learner additionally
chains token ids across turns (turn k+1's prompt ids are turn k's prompt and response ids plus the tokens of
the text the template adds); that is an extension over the rendered text of these same contexts, and it falls
back to :func:`render_prompt` whenever the rendered text does not extend the previous turn's.

A record stores each turn's prompt as its delta: the turn's new user message (``turn["user"]``) once, the
system prompt once (``record["instructions"]``), the assistant messages as the responses, and the window as
``record["context_turns"]``; :func:`record_messages` and :func:`replay_contexts` rebuild the exact chat of any
turn from these. Records of format 1 stored every turn's full chat in ``turn["prompt"]``; it is returned as is.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from harness.agents.base import Context, EnvHandle, Message
from harness.records import EpisodeRecord, TurnRecord


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


RENDERED = "rendered"
"""The role of a context's only message when it is a prompt already rendered to text (a trainer's rollout dump
that logged the templated prompt): it is scored as written, with no chat template around it."""


def render_prompt(tokenizer: Any, context: Context) -> str:
    """The text a language model continues: the chat template with the generation prompt, then the prefill (a
    :data:`RENDERED` prompt as written, then the prefill)."""
    if len(context.messages) == 1 and context.messages[0]["role"] == RENDERED:
        return context.messages[0]["content"] + context.prefill
    chat = tokenizer.apply_chat_template(list(context.messages), tokenize=False, add_generation_prompt=True)
    return chat + context.prefill


def continuation_ids(tokenizer: Any, prompt: str, prompt_ids: list[int], text: str) -> list[int]:
    """``text``'s token ids after ``prompt`` (whose ids are ``prompt_ids``): those of the joint encoding when the
    prompt's ids are its prefix, so the text is scored as the model would have produced it after the prompt;
    else the text encoded alone (a merge across the boundary)."""
    joint = tokenizer.encode(prompt + text, add_special_tokens=False)
    if joint[: len(prompt_ids)] == prompt_ids:
        return joint[len(prompt_ids) :]
    return tokenizer.encode(text, add_special_tokens=False)


class Transcript:
    """One episode's chat, turn by turn: :meth:`context` is what the current turn's response is written under,
    :meth:`advance` adds that response and the env's answer to it.

    ``turn`` is the 1-based number of the current turn, ``current`` its user message, ``exchanges`` the earlier
    (user, assistant) pairs, ``prefill`` the assistant prefix every response starts with, ``response_format`` the
    env's (what a response's reasoning is read by).
    """

    __slots__ = ("system", "response_format", "prefill", "context_turns", "exchanges", "current", "turn", "_messages")

    def __init__(
        self, instructions: str, observation: str, response_format: str, context_turns: int | None = None
    ) -> None:
        self.system: Message = {"role": "system", "content": instructions}
        self.response_format = response_format
        self.prefill = prefill_for(response_format)
        self.context_turns = context_turns
        self.exchanges: list[tuple[Message, Message]] = []
        self.turn = 1
        self.current = user_message(1, observation, None)
        self._messages = [self.system, self.current]  # the full history, grown in place rather than rebuilt per turn

    def context(self, env: EnvHandle | None = None) -> Context:
        """The context of the current turn's response (``env``: the side channel scripted agents read)."""
        if self.context_turns is None:
            return Context(tuple(self._messages), self.prefill, env)
        return build_context(self.system, self.exchanges, self.current, self.prefill, self.context_turns, env)

    def advance(self, response: str, observation: str, reward: float) -> None:
        """Close the current turn with the full ``response`` (prefill included) and open the next one on the
        env's ``observation`` and ``reward``."""
        assistant = {"role": "assistant", "content": response}
        self.exchanges.append((self.current, assistant))
        self.turn += 1
        self.current = user_message(self.turn, observation, reward)
        self._messages.append(assistant)
        self._messages.append(self.current)


def record_messages(record: EpisodeRecord, index: int) -> tuple[Message, ...]:
    """The chat turn ``index`` (0-based) of an episode record saw, rebuilt from the record's deltas."""
    turns: Sequence[TurnRecord] = record["turns"]
    turn = turns[index]
    window = record.get("context_turns")
    first = 0 if window is None else max(0, index - window)
    messages: list[Message] = [{"role": "system", "content": record["instructions"]}]
    for earlier in turns[first:index]:
        messages.append({"role": "user", "content": earlier["user"]})
        messages.append({"role": "assistant", "content": earlier["response"]})
    messages.append({"role": "user", "content": turn["user"]})
    return tuple(messages)


def replay_contexts(record: EpisodeRecord) -> Iterator[Context]:
    """The context of every turn of an episode record, in order, as the rollout that wrote it built them
    (without the env side channel: :mod:`harness.mi` adds one that replays the env when a scripted agent asks)."""
    for index, turn in enumerate(record["turns"]):
        yield Context(record_messages(record, index), turn["prefill"])
