"""The text-env contract as checks you run on your own env: ``check_text_env("mypkg/Guess-v0")``.

Every ``ragen/*`` env passes these (``tests/ragen_envs/test_env_contract.py`` runs them over the registry); an env from
another package (``docs/extending.md``) should pass them before ``harness run`` meets it. Each ``check_*`` takes
the env id and the keyword arguments for ``gym.make`` and raises :class:`ContractError` saying what broke;
:func:`check_text_env` runs them all and reports every failure at once.

- Gymnasium's own ``check_env``; ``reset`` gives a text observation inside the observation space and
  ``info["instructions"]``
- same seed ⇒ the same episode, byte for byte, in this process and in a fresh interpreter with another
  ``PYTHONHASHSEED`` (the harness's workers are fresh interpreters: the id must be registered there too)
- different seeds ⇒ different episodes (the oracle's play, or the first observation with ``first_observation``)
- a pickled env continues identically; the oracle solves every seed it is asked about
- a response that does not parse costs the format penalty, keeps the state and says so; the info keys are always
  there; ``max_turns`` truncates; ``step`` before ``reset`` raises ``ResetNeeded``
- no response text raises (seeded random text built from the tags and separators the parser looks for)
- a misspelled keyword argument raises ``ValueError`` naming the closest one
- the tool format (``response_format="tool"``, which every env supports through ``TextEnv``): the checks above
  that depend on the format pass again in it, ``info["tools"]`` holds the schemas the system prompt lists, and a
  tool call that is refused (not JSON, nested too deep, an unknown tool, a wrong argument) costs the format
  penalty, keeps the state and says why
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Iterable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.error import ResetNeeded

from ragen_envs.core import INFO_KEYS, TextEnv

__all__ = [
    "CHECKS",
    "TOOL_FORMAT_CHECKS",
    "ContractError",
    "check_text_env",
    "check_gymnasium_api",
    "check_same_seed_same_episode",
    "check_seeds_differ",
    "check_pickle_round_trip",
    "check_oracle_solves",
    "check_invalid_format",
    "check_refused_tool_calls",
    "check_truncation",
    "check_step_before_reset",
    "check_hostile_responses",
    "check_unknown_kwarg",
    "hostile_responses",
    "play",
    "play_in_subprocess",
]

JUNK_RESPONSES = ("", "<answer>", "<think>a</think>", "<think></think><answer>  </answer>", "hello")
INVALID_RESPONSES = ("", "no tags at all", "<think>only thinking</think>", "<answer>x",
                     "<think>a</think>text<answer>b</answer>")  # fmt: skip
INVALID_TOOL_RESPONSES = ("", "no tags at all", "<think>a</think><answer>b</answer>", '<tool_call>{"name": "x"}',
                          "</tool_call>")  # fmt: skip
"""Responses that do not parse in the tool format (no complete ``<tool_call>`` block)."""
HOSTILE_PIECES = ("<think>", "</think>", "<answer>", "</answer>", "||", "\n", " ", "\x00", "√", "9", "(", "a")
HOSTILE_TOOL_PIECES = ("<tool_call>", "</tool_call>", "{", "}", "[", '"name"', '"arguments"', ":", ",", '"', "\\",
                       "null", "1e999", "<think>", "\n", "√", "a")  # fmt: skip
REFUSED_TOOL_CALLS = {
    "not JSON": (
        "<tool_call>move up</tool_call>",
        "not valid JSON (unexpected character, expected a JSON value at character 0)",
    ),
    "truncated JSON": ('<tool_call>{"name": "{tool}", "arguments": {</tool_call>', "not valid JSON"),
    "deep nesting": ("<tool_call>" + "[" * 200_000 + "</tool_call>", "not valid JSON (depth limit exceeded"),
    "long integer": ("<tool_call>" + "9" * 5000 + "</tool_call>", "not valid JSON (number is infinity"),
    "not an object": ('<tool_call>["{tool}", "x"]</tool_call>', "must be a JSON object"),
    "no name": ('<tool_call>{"arguments": {}}</tool_call>', 'needs a "name" string'),
    "unknown tool": ('<tool_call>{"name": "teleport", "arguments": {}}</tool_call>', "unknown tool 'teleport'"),
    "arguments not an object": ('<tool_call>{"name": "{tool}", "arguments": [1]}</tool_call>', "must be a JSON object"),
    "arguments string not JSON": ('<tool_call>{"name": "{tool}", "arguments": "{"}</tool_call>', "is not valid JSON"),
    "missing argument": ('<tool_call>{"name": "{tool}", "arguments": {}}</tool_call>', "needs the argument"),
    "extra argument": ('<tool_call>{"name": "{tool}", "arguments": {"{arg}": "x", "why": 1}}</tool_call>', "not 'why'"),
    "wrong type": ('<tool_call>{"name": "{tool}", "arguments": {"{arg}": {"a": [true]}}}</tool_call>', "got an object"),
}
"""Tool calls every env refuses, each with a piece of the reason its feedback must give; ``{tool}`` and ``{arg}``
stand for the env's first tool and its argument."""


class ContractError(AssertionError):
    """An env breaks the text-env contract; the message says which promise and how."""


def _make(env_id: str, kwargs: dict[str, Any] | None) -> gym.Env:
    from ragen_envs.plugins import ensure_registered

    ensure_registered(env_id)
    return gym.make(env_id, **(kwargs or {}))


def _text_env(env_id: str, kwargs: dict[str, Any] | None) -> TextEnv:
    env = _make(env_id, kwargs).unwrapped
    if not isinstance(env, TextEnv):
        raise ContractError(f"{env_id}: {type(env).__qualname__} is not a ragen_envs.core.TextEnv subclass")
    return env


def play(env_id: str, seed: int, turns: int = 50, junk_every: int = 3, kwargs: dict[str, Any] | None = None) -> str:
    """The oracle's episode on ``seed`` with a junk response every ``junk_every`` turns, as JSON text (bytes to
    compare across processes)."""
    env = _make(env_id, kwargs)
    obs, info = env.reset(seed=seed)
    record = [{"obs": obs, "info": info}]
    for t in range(turns):
        if junk_every and t % junk_every == junk_every - 1:
            response = JUNK_RESPONSES[t % len(JUNK_RESPONSES)]
        else:
            response = env.unwrapped.oracle_response()
        obs, reward, terminated, truncated, info = env.step(response)
        record.append({"response": response, "obs": obs, "reward": reward, "terminated": terminated,
                       "truncated": truncated, "info": info})  # fmt: skip
        if terminated or truncated:
            break
    env.close()
    return json.dumps(record, sort_keys=True, default=repr)


def play_in_subprocess(env_id: str, seed: int, hash_seed: str, kwargs: dict[str, Any] | None = None) -> str:
    """:func:`play` in a fresh interpreter with its own ``PYTHONHASHSEED`` (and this one's import path)."""
    code = (
        "import sys; from ragen_envs.contract import play; "
        f"sys.stdout.write(play({env_id!r}, {seed}, kwargs={kwargs!r}))"
    )
    env = {"PYTHONHASHSEED": hash_seed, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise ContractError(
            f"{env_id}: a fresh interpreter could not play seed {seed}: {last} (an env registered only in this "
            "process is invisible to the harness's workers: declare it in the ragen_envs.envs entry-point group)"
        )
    return done.stdout


def check_gymnasium_api(env_id: str, kwargs: dict[str, Any] | None = None) -> None:
    """Gymnasium's ``check_env`` passes, and ``reset`` returns text in the space and the instructions (in the tool
    format also ``info["tools"]``, plain JSON, listed in the instructions as ``<tools>…</tools>``)."""
    from gymnasium.utils.env_checker import check_env

    env = _text_env(env_id, kwargs)
    try:
        check_env(env, skip_render_check=False)
    except Exception as error:
        raise ContractError(f"{env_id}: gymnasium's check_env failed: {type(error).__name__}: {error}") from error
    obs, info = env.reset(seed=0)
    if not (isinstance(obs, str) and obs and obs in env.observation_space):
        raise ContractError(f"{env_id}: reset's observation must be non-empty text inside observation_space")
    if not (isinstance(info.get("instructions"), str) and info["instructions"]):
        raise ContractError(f"{env_id}: reset's info must carry the system prompt as non-empty 'instructions'")
    if env.response_format == "tool":
        tools = info.get("tools")
        if not (isinstance(tools, list) and tools and all(t.get("type") == "function" for t in tools)):
            raise ContractError(f"{env_id}: in the tool format reset's info must carry 'tools', function schemas")
        listed = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
        if f"<tools>\n{listed}\n</tools>" not in info["instructions"] or json.loads(json.dumps(tools)) != tools:
            raise ContractError(f"{env_id}: info['tools'] must be plain JSON, listed in the instructions' <tools>")
    elif "tools" in info:
        raise ContractError(f"{env_id}: info['tools'] belongs to the tool format only")
    env.close()


def check_same_seed_same_episode(env_id: str, kwargs: dict[str, Any] | None = None, seed: int = 11) -> None:
    """The same seed plays the same episode here, again here, and in fresh interpreters with other hash seeds."""
    here = play(env_id, seed, kwargs=kwargs)
    if play(env_id, seed, kwargs=kwargs) != here:
        raise ContractError(f"{env_id}: seed {seed} played twice in one process gave two episodes")
    for hash_seed in ("1", "2"):
        if play_in_subprocess(env_id, seed, hash_seed, kwargs) != here:
            raise ContractError(
                f"{env_id}: seed {seed} gave another episode in a fresh interpreter (PYTHONHASHSEED={hash_seed}): "
                "draw every random choice from self.np_random, never from set order or the global RNGs"
            )


def check_seeds_differ(env_id: str, kwargs: dict[str, Any] | None = None, first_observation: bool = False) -> None:
    """Seeds 0..7 give more than one episode (with ``first_observation``: more than one first observation; an env
    whose state is hidden from the first prompt passes only without it)."""
    turns = 0 if first_observation else 50
    if len({play(env_id, seed, turns=turns, kwargs=kwargs) for seed in range(8)}) < 2:
        what = "first observation" if first_observation else "episode"
        raise ContractError(f"{env_id}: seeds 0-7 all give the same {what}: reset ignores its seed")


def check_pickle_round_trip(env_id: str, kwargs: dict[str, Any] | None = None) -> None:
    """A pickled env, mid-episode, continues exactly as the original."""
    env = _text_env(env_id, kwargs)
    env.reset(seed=3)
    env.step("<think>x</think><answer>nonsense</answer>")
    if env._done:
        env.reset(seed=3)
    try:
        clone = pickle.loads(pickle.dumps(env))
    except Exception as error:  # vector envs and process pools pickle envs
        raise ContractError(f"{env_id}: the env cannot be pickled: {type(error).__name__}: {error}") from error
    for _ in range(3):
        response = env.oracle_response()
        if clone.oracle_response() != response:
            raise ContractError(f"{env_id}: the unpickled env's oracle answers differently")
        a, b = env.step(response), clone.step(response)
        if repr(a) != repr(b):
            raise ContractError(f"{env_id}: the unpickled env's step differs: {repr(b)[:120]} vs {repr(a)[:120]}")
        if a[2] or a[3]:
            break


def check_oracle_solves(env_id: str, kwargs: dict[str, Any] | None = None, seeds: Iterable[int] = range(5)) -> None:
    """The oracle's responses, turn after turn, end every given seed's episode in success."""
    env = _make(env_id, kwargs)
    for seed in seeds:
        env.reset(seed=seed)
        terminated = truncated = False
        info: dict[str, Any] = {}
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(env.unwrapped.oracle_response())
        if not (terminated and info.get("success")):
            raise ContractError(f"{env_id} seed {seed}: the oracle did not succeed")


def check_invalid_format(env_id: str, kwargs: dict[str, Any] | None = None) -> None:
    """A response that does not parse costs the format penalty, keeps the state and says it was invalid."""
    tool_format = _text_env(env_id, kwargs).response_format == "tool"
    for response in INVALID_TOOL_RESPONSES if tool_format else INVALID_RESPONSES:
        env = _text_env(env_id, kwargs)
        env.reset(seed=5)
        before = env._observe()
        obs, reward, terminated, _, info = env.step(response)
        problems = [
            f"reward {reward} is not the format penalty {env.format_penalty}" if reward != env.format_penalty else "",
            "it ended the episode" if terminated else "",
            "info calls it valid or a success" if info.get("action_is_valid") or info.get("success") else "",
            "the state changed" if env._observe() != before else "",
            "the observation does not say it was invalid and show the state" if not (
                obs.endswith(before) and "invalid" in obs) else "",
            f"info lacks {sorted(set(INFO_KEYS) - set(info))}" if not set(INFO_KEYS) <= set(info) else "",
        ]  # fmt: skip
        problems = [p for p in problems if p]
        if problems:
            raise ContractError(f"{env_id}: the unparseable response {response!r}: {'; '.join(problems)}")


def check_refused_tool_calls(env_id: str, kwargs: dict[str, Any] | None = None) -> None:
    """In the tool format, each of :data:`REFUSED_TOOL_CALLS` costs the format penalty, keeps the state and starts
    the next observation with "Tool call 1 was refused: " and the reason."""
    for name, (response, reason) in REFUSED_TOOL_CALLS.items():
        env = _text_env(env_id, {**(kwargs or {}), "response_format": "tool"})
        tool = env.action_tools[0]
        env.reset(seed=5)
        before = env._observe()
        obs, reward, terminated, _, info = env.step(
            response.replace("{tool}", tool.name).replace("{arg}", tool.parameter)
        )
        said = obs.splitlines()[0] if obs else ""
        problems = [
            f"reward {reward} is not the format penalty {env.format_penalty}" if reward != env.format_penalty else "",
            "it ended the episode" if terminated else "",
            "info calls it valid or a success" if info.get("action_is_valid") or info.get("success") else "",
            "the state changed" if env._observe() != before else "",
            f"the observation's first line {said[:100]!r} does not say 'Tool call 1 was refused: …{reason}…'" if not (
                said.startswith("Tool call 1 was refused: ") and reason in said and obs.endswith(before)) else "",
        ]  # fmt: skip
        problems = [p for p in problems if p]
        env.close()
        if problems:
            raise ContractError(f"{env_id}: the refused tool call ({name}): {'; '.join(problems)}")


def check_truncation(env_id: str, kwargs: dict[str, Any] | None = None) -> None:
    """``max_turns`` invalid turns truncate the episode, counting turns in info; a further step raises."""
    env = _text_env(env_id, kwargs)
    env.reset(seed=0)
    truncated = False
    for turn in range(1, env.max_turns + 1):
        _, _, terminated, truncated, info = env.step("not a valid response")
        if info["turn"] != turn or terminated:
            raise ContractError(f"{env_id}: turn {turn} of invalid responses: info turn {info['turn']}, terminated")
    if not truncated:
        raise ContractError(f"{env_id}: {env.max_turns} turns (max_turns) did not truncate the episode")
    try:
        env.step("again")
    except ResetNeeded:
        return
    raise ContractError(f"{env_id}: step after the episode ended must raise gymnasium.error.ResetNeeded")


def check_step_before_reset(env_id: str, kwargs: dict[str, Any] | None = None) -> None:
    """``step`` before ``reset`` raises ``ResetNeeded``, wrapped or not."""
    for env in (_make(env_id, kwargs), _make(env_id, kwargs).unwrapped):
        try:
            env.step("<think></think><answer>x</answer>")
        except ResetNeeded:
            continue
        raise ContractError(f"{env_id}: step before reset must raise gymnasium.error.ResetNeeded")


def hostile_responses(count: int, seed: int = 0, response_format: str = "think") -> list[str]:
    """``count`` seeded texts a model might write at its worst: tag soup, control characters, long repeats (in the
    tool format: JSON soup, in and out of ``<tool_call>`` blocks)."""
    tool_format = response_format == "tool"
    pieces = HOSTILE_TOOL_PIECES if tool_format else HOSTILE_PIECES
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        kind = i % 4
        if kind == 0:
            out.append("".join(chr(int(c)) for c in rng.integers(0, 0x2FFF, size=int(rng.integers(0, 200)))))
        elif kind == 1:
            out.append("".join(pieces[int(j)] for j in rng.integers(0, len(pieces), size=60)))
        elif kind == 2:
            inner = "".join(pieces[int(j)] for j in rng.integers(0, len(pieces), size=8))
            out.append(
                f"{inner}<tool_call>{inner[::-1]}</tool_call>"
                if tool_format
                else f"<think>{inner}</think><answer>{inner[::-1]}</answer>"
            )
        else:
            out.append(pieces[int(rng.integers(len(pieces)))] * int(rng.integers(1, 20_000)))
    return out


def check_hostile_responses(env_id: str, kwargs: dict[str, Any] | None = None, count: int = 200) -> None:
    """No response text raises; observations stay in the charset; info keeps its keys."""
    env = _text_env(env_id, kwargs)
    for response in hostile_responses(count, response_format=env.response_format):
        if env._needs_reset or env._done:
            env.reset(seed=0)
        try:
            obs, reward, _, _, info = env.step(response)
        except Exception as error:
            raise ContractError(f"{env_id}: step({response[:60]!r}…) raised {type(error).__name__}: {error}") from error
        if not (isinstance(obs, str) and isinstance(reward, float) and obs in env.observation_space):
            raise ContractError(f"{env_id}: step({response[:60]!r}…) gave an observation outside the space")
        if not set(INFO_KEYS) <= set(info):
            raise ContractError(f"{env_id}: step's info lacks {sorted(set(INFO_KEYS) - set(info))}")


def check_unknown_kwarg(env_id: str, kwargs: dict[str, Any] | None = None) -> None:
    """A misspelled argument (``max_turn``) raises ``ValueError`` naming ``max_turns``."""
    try:
        _make(env_id, {**(kwargs or {}), "max_turn": 3})
    except ValueError as error:
        if "Did you mean 'max_turns'?" in str(error):
            return
        raise ContractError(f"{env_id}: max_turn=3 raised {error!r}, without naming 'max_turns'") from error
    raise ContractError(f"{env_id}: the misspelled argument max_turn=3 was accepted")


CHECKS: tuple[Callable[..., None], ...] = (
    check_gymnasium_api, check_same_seed_same_episode, check_seeds_differ, check_pickle_round_trip,
    check_oracle_solves, check_invalid_format, check_truncation, check_step_before_reset, check_hostile_responses,
    check_unknown_kwarg,
)  # fmt: skip
"""Every check of the contract, in the order ``check_text_env`` runs them."""
TOOL_FORMAT_CHECKS: tuple[Callable[..., None], ...] = (
    check_gymnasium_api, check_same_seed_same_episode, check_pickle_round_trip, check_oracle_solves,
    check_invalid_format, check_refused_tool_calls, check_truncation, check_hostile_responses,
)  # fmt: skip
"""The checks that run again with ``response_format="tool"``: those whose outcome depends on the format."""


def check_text_env(env_id: str, kwargs: dict[str, Any] | None = None) -> None:
    """Run every check of the contract on ``env_id``, then the format-dependent ones in the tool format; raises
    :class:`ContractError` listing each that failed."""
    failures = []
    tool_kwargs = {**(kwargs or {}), "response_format": "tool"}
    runs = [(check, kwargs, "") for check in CHECKS] + [
        (check, tool_kwargs, " (tool format)") for check in TOOL_FORMAT_CHECKS
    ]
    for check, check_kwargs, label in runs:
        try:
            check(env_id, check_kwargs)
        except ContractError as error:
            failures.append(f"{check.__name__}{label}: {error}")
        except Exception as error:  # a check the env crashed is a broken promise too, and the others still run
            failures.append(f"{check.__name__}{label}: {env_id} raised {type(error).__name__}: {error}")
    if failures:
        raise ContractError(f"{env_id} breaks the text-env contract:\n- " + "\n- ".join(failures))
