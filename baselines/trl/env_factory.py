"""``environment_factory`` for TRL's ``GRPOTrainer``: any registered env as a stateful collection of tools.

TRL's documented way to train on environments (and its OpenEnv integration's) is ``environment_factory``: a class
whose ``reset(**row)`` starts an episode and whose public methods are the tools the model calls; TRL runs the
tool-calling loop (generate, parse the calls, call the methods, append their results as ``tool`` messages, generate
again) with its own generation backend, transformers or vLLM. :func:`tool_environment` builds that class for an env
id from the env's own action tools (``TextEnv.action_tools``: Sokoban's ``move(direction)``, Bandit's ``pull(arm)``,
WebShop's ``search(query)`` and ``click(target)``, ...), so the model gets meaningful tool names, descriptions and
argument choices.

Each call is played as one env turn of the env's ``tool`` response format (the call written as the
``<tool_call>`` block a Hermes/Qwen template writes), so rules, rewards, format penalties and feedback are the
env's, and the tool returns the env's next observation. After the episode ends a call only says so.
:func:`env_return` is the reward (the episode's return, as :func:`baselines.trl.episode_return` is on the
``rollout_func`` path); :func:`make_tool_dataset` gives one row per env seed, a group being one seed.

The SNR filter (:class:`baselines.trl.SNRFilterGRPOTrainer`) works unchanged on this path (it ranks the groups'
rewards), and :class:`baselines.trl.MICallback` accepts the environment class: :func:`env_return` keeps each
rollout's messages on its environment, which turns them into a harness episode record for the MI family.

Needs a chat template that renders tool calls (TRL checks it); a model trained to call tools makes it meaningful.
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from baselines.env_check import check_env, check_seed
from ragen_envs.parsing import TOOL_CALL_CLOSE, TOOL_CALL_OPEN, reasoning_of
from ragen_envs.tools import ActionTool

FORMAT = "tool"
ENDED = "The episode has ended; no further action is taken."


@dataclass
class ToolBatch:
    """The rollouts of one generation batch on this process, in TRL's row order (what the MI callback scores)."""

    call: int
    global_step: int
    records: list[dict[str, Any]] = field(default_factory=list)
    trainer: Any = None


class RagenToolEnv:
    """One episode of a ragen env at a time, its actions as tool methods; subclasses come from
    :func:`tool_environment` (``env_id``, ``env_kwargs`` and the tool methods are set there)."""

    env_id: str = ""
    env_kwargs: dict[str, Any] = {}
    last: ToolBatch | None = None
    """This process's latest batch of this environment class (set by :func:`env_return`)."""

    def __init__(self) -> None:
        if not self.env_id:
            raise ValueError("build the environment class with baselines.trl.tool_environment(env_id)")
        self.env = gym.make(self.env_id, **self.env_kwargs, response_format=FORMAT)
        self.seed: int | None = None
        self.observations: list[str] = []
        self.calls: list[str] = []
        self.rewards: list[float] = []
        self.episode_return = 0.0
        self.success = False
        self.done = True
        self.messages: list[dict] | None = None

    def reset(self, env_seed: int, **_row) -> str:
        """Start the episode of ``env_seed`` (the dataset row's column); returns its first observation."""
        self.seed = check_seed(int(env_seed))
        observation, _ = self.env.reset(seed=self.seed)
        self.observations, self.calls, self.rewards = [observation], [], []
        self.episode_return, self.success, self.done, self.messages = 0.0, False, False, None
        return observation

    def _play(self, name: str, arguments: dict[str, Any]) -> str:
        """One env turn: the call as the tool format writes it; returns the env's answer to it."""
        if self.done:
            return ENDED
        call = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False).replace("</", "<\\/")
        block = f"{TOOL_CALL_OPEN}\n{call}\n{TOOL_CALL_CLOSE}"
        observation, reward, terminated, truncated, info = self.env.step(block)
        self.calls.append(block)
        self.rewards.append(float(reward))
        self.observations.append(observation)
        self.episode_return += float(reward)
        if terminated or truncated:
            self.done, self.success = True, bool(info.get("success", False))
            outcome = "solved" if self.success else "not solved"
            return f"{observation}\nThe episode has ended ({outcome})."
        return observation


def episode_record(environment: RagenToolEnv, sample: int = 0) -> dict[str, Any]:
    """An environment's last episode as a harness episode record (what the MI family reads): one turn per assistant
    message of the rollout (kept by :func:`env_return`), its user text the observation it answered, its response
    the message's text followed by its calls. (A function, not a method: TRL exposes public methods as tools.)"""
    if environment.seed is None:
        raise ValueError("the environment has not played an episode yet")
    calls, observations, rewards = environment.calls, environment.observations, environment.rewards
    turns, played = [], 0
    for message in environment.messages or []:
        if message.get("role") != "assistant":
            continue
        count = len(message.get("tool_calls") or [])
        response = "\n".join([message.get("content") or "", *calls[played : played + count]]).strip()
        turns.append(
            {
                "turn": len(turns) + 1,
                "user": observations[min(played, len(observations) - 1)],
                "prefill": "",
                "response": response,
                "reasoning": reasoning_of(response, FORMAT),
                "reward": float(sum(rewards[played : played + count])),
            }
        )
        played += count
    return {
        "env_id": environment.env_id, "env_kwargs": {**environment.env_kwargs, "response_format": FORMAT},
        "seed": environment.seed, "sample": sample, "context_turns": None,
        "instructions": environment.env.unwrapped.instructions, "turns": turns,
        "return": environment.episode_return, "success": environment.success, "num_turns": len(turns),
    }  # fmt: skip


def _tool_method(tool: ActionTool):
    """The method TRL exposes as ``tool``: name, description, typed argument (with its choices) from the env's
    declaration, the docstring in the Google style transformers reads tool schemas from."""

    def method(self, **arguments) -> str:
        return self._play(tool.name, arguments)

    choices = f" (choices: {json.dumps(list(tool.choices))})" if tool.choices else ""
    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = (
        f"{tool.description}\n\nArgs:\n    {tool.parameter}: {tool.parameter_description}{choices}\n\n"
        "Returns:\n    The env's answer: feedback on the action and the new state."
    )
    kind = (str | float) if tool.accepts_numbers else str
    method.__signature__ = inspect.Signature(
        [
            inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter(tool.parameter, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=kind),
        ],
        return_annotation=str,
    )
    method.__annotations__ = {tool.parameter: kind, "return": str}
    return method


def tool_environment(env_id: str, *, env_kwargs: dict[str, Any] | None = None) -> type[RagenToolEnv]:
    """The ``environment_factory`` class of ``env_id`` (any registered id; ``env_kwargs`` as for ``gym.make``,
    ``response_format`` excepted: this path is the tool format). Raises ``ValueError`` with a "did you mean" for an
    unknown id or argument."""
    kwargs = dict(env_kwargs or {})
    if "response_format" in kwargs:
        raise ValueError("env_kwargs must not set response_format: the environment_factory path plays the tool format")
    resolved = check_env(env_id, {**kwargs, "response_format": FORMAT})
    env = gym.make(resolved, **kwargs, response_format=FORMAT)
    tools = env.unwrapped.action_tools
    env.close()
    reserved = {"reset", "get_reward", *vars(RagenToolEnv)}  # the base class's names
    clash = [t.name for t in tools if t.name in reserved or t.name.startswith("_")]
    if clash:
        raise ValueError(f"{resolved}: tool name {clash[0]!r} collides with the environment class's own methods")
    namespace = {tool.name: _tool_method(tool) for tool in tools}
    namespace.update(env_id=resolved, env_kwargs=kwargs, __doc__=f"{resolved} as TRL tools: {', '.join(namespace)}.")
    name = resolved.split("/")[-1].split("-v")[0].replace("-", "") + "ToolEnv"
    return type(name, (RagenToolEnv,), namespace)


def rules_of(env_id: str, env_kwargs: dict[str, Any], seed: int) -> str:
    """The env's rules as the system message of this path: the instructions without the tool section (the chat
    template renders the tools TRL passes it)."""
    env = gym.make(env_id, **env_kwargs, response_format=FORMAT)
    try:
        env.reset(seed=seed)
        rules = env.unwrapped._instructions().rstrip()
    finally:
        env.close()
    return f"{rules}\nAct by calling the tools; each call is one move in the environment."


def make_tool_dataset(env_id: str, seeds: Iterable[int], *, env_kwargs: dict[str, Any] | None = None):
    """A ``datasets.Dataset`` for the ``environment_factory`` path: one row per env seed, ``prompt`` the env's rules
    (system) and an empty user message that TRL completes with ``reset``'s observation, ``env_seed`` the column
    ``reset`` reads. TRL's ``num_generations`` copies of a row are its group: one seed."""
    from datasets import Dataset

    kwargs = dict(env_kwargs or {})
    resolved = check_env(env_id, {**kwargs, "response_format": FORMAT})
    seeds = [check_seed(s) for s in seeds]
    if not seeds:
        raise ValueError("seeds must name at least one env seed")
    rows = []
    for seed in seeds:
        system = rules_of(resolved, kwargs, seed)
        rows.append(
            {"prompt": [{"role": "system", "content": system}, {"role": "user", "content": ""}], "env_seed": seed}
        )
    return Dataset.from_list(rows)


def env_return(completions, environments=None, log_metric=None, **_) -> list[float]:
    """TRL reward function of the ``environment_factory`` path: each rollout's episode return (format penalties
    included, 0 for a rollout that never called a tool); keeps each rollout's messages on its environment (for
    :class:`baselines.trl.MICallback`) and logs the success rate as ``rollout/success``."""
    if environments is None:
        raise ValueError("env_return reads the environments: pass environment_factory=tool_environment(env_id)")
    samples: dict[int, int] = {}
    records = []
    for environment, completion in zip(environments, completions, strict=True):
        environment.messages = list(completion) if isinstance(completion, list) else []
        samples[environment.seed] = samples.get(environment.seed, -1) + 1
        records.append(episode_record(environment, samples[environment.seed]))
    if environments:
        # the trainer is the owner of the log_metric TRL hands reward functions; the MI callback scores with it
        kind, trainer = type(environments[0]), getattr(log_metric, "__self__", None)
        previous = kind.last.call if kind.last is not None else -1
        kind.last = ToolBatch(previous + 1, trainer.state.global_step if trainer else 0, records, trainer)
    if log_metric is not None and environments:
        log_metric("rollout/success", float(sum(e.success for e in environments)) / len(environments))
    return [e.episode_return if math.isfinite(e.episode_return) else 0.0 for e in environments]
