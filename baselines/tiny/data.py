"""Behaviour-cloning data for the tiny model: oracle transcripts mixed with perturbed and failed ones.

Every episode is played in a real env (``gym.make``) and recorded as the chat an LM agent would see
(built with the harness's own prompt functions, :mod:`harness.transcript`, so the model is trained on
exactly the prompts ``harness run`` gives it), with a flag per assistant turn saying whether it is a
training target. Three kinds of episode:

- ``oracle``: every turn is the teacher's response (:mod:`baselines.tiny.teacher`: the oracle's moves with
  step-by-step reasoning); all turns are targets.
- ``perturbed``: at each turn, with probability ``random_prob`` a random valid-format response
  (``env.action_space.sample()``: a random legal action with filler reasoning) and with probability
  ``junk_prob`` a malformed one (the env answers with its "invalid response" feedback); the other turns are
  the oracle's response *from the state actually reached*, and only those are targets. The model so sees
  off-optimal states, its own mistakes and the env's error feedback in its context, and learns to recover.
- ``failed``: perturbed episodes whose perturbations ended them without success (falling into a hole,
  running out of turns) are kept as they are: their oracle turns are still targets, so the model learns
  from states that lead nowhere good as well.

The teacher's reasoning copies and checks the actual state (positions, names), so a model that imitates it
has to read its input: reasoning that depends on the input is what the MI diagnostics measure.

Everything is a pure function of (env id, seed, kind, config): the episode's env seed drives the env, and a
``numpy`` generator seeded from the same numbers drives the perturbations and the action-space sampler.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

import ragen_envs  # noqa: F401  (registers the ids gym.make reads)
from baselines.tiny.teacher import teacher_response
from harness.transcript import Transcript
from ragen_envs.core import check_range

SHIPPED_ENVS = ("ragen/Bandit-v0", "ragen/FrozenLake-v0", "ragen/Sokoban-v0")
"""The envs the shipped tiny model is trained and judged on: the default recipe."""
TRAINABLE_ENVS = (*SHIPPED_ENVS, "ragen/SearchQA-v0")
"""Every env the recipe has a teacher for. SearchQA is opt-in (``--envs``): a full run with it learned SearchQA's
format (parse rate 0.99) but not the task (greedy success 0.00 against random's 0.02: it searched one memorized
title whatever the question), and its ``search[…]`` and ``finish[…]`` answers showed up in Bandit's later turns,
so the shipped weights come from the recipe without it (docs/agents.md)."""

JUNK_RESPONSES = (
    "",
    "I am not sure.",
    "<think>Let me look at the state.</think>",
    "<answer>",
    "<think></think><answer></answer>",
    "<think>hmm</think> and then <answer>stay</answer>",
)


@dataclass(frozen=True)
class Episode:
    """One recorded episode: the chat, a target flag per assistant message, and how it ended."""

    env_id: str
    seed: int
    kind: str
    messages: tuple[dict[str, str], ...]
    targets: tuple[bool, ...]
    success: bool


@dataclass(frozen=True)
class DataConfig:
    """How many episodes of which kind to record per env."""

    episodes_per_env: int = 800
    """Episodes recorded per env (each is one training sequence)."""
    episodes_override: tuple[tuple[str, int], ...] = (
        ("ragen/Bandit-v0", 2000),
        ("ragen/FrozenLake-v0", 1600),
        ("ragen/SearchQA-v0", 600),
    )
    """Per-env exceptions to ``episodes_per_env``. Bandit episodes are one short turn (~50 tokens) and
    FrozenLake ones one to three short turns: more of them cost little, and copying cells into the reasoning
    came slower on FrozenLake than on Sokoban, whose long episodes give the model more tokens to learn from.
    SearchQA's search results make its episodes the longest in tokens (3- and 4-hop ones mostly exceed
    ``TrainConfig.max_seq_len`` and are left out), so fewer of them keep the training time in bounds."""
    oracle_fraction: float = 0.5
    """Share of episodes played by the oracle throughout; the rest are perturbed."""
    random_prob: float = 0.3
    """Per-turn probability, in a perturbed episode, of a random valid-format response instead of the oracle's."""
    junk_prob: float = 0.1
    """Per-turn probability, in a perturbed episode, of a malformed response."""
    first_seed: int = 100_000
    """Training seeds are ``first_seed + i``: far from the small seeds that evaluations use."""
    envs: tuple[str, ...] = SHIPPED_ENVS
    """The envs recorded, in this order (an env's seeds depend on its position); each one of :data:`TRAINABLE_ENVS`."""

    def __post_init__(self) -> None:
        check_range("episodes_per_env", self.episodes_per_env, 1, integer=True)
        for env_id, count in self.episodes_override:
            check_range(f"episodes_override[{env_id!r}]", count, 1, integer=True)
        check_range("oracle_fraction", self.oracle_fraction, 0.0, 1.0)
        check_range("random_prob", self.random_prob, 0.0, 1.0)
        check_range("junk_prob", self.junk_prob, 0.0, 1.0)
        if self.random_prob + self.junk_prob > 1.0:
            raise ValueError(f"random_prob + junk_prob must be <= 1, got {self.random_prob + self.junk_prob}")
        check_range("first_seed", self.first_seed, 0, integer=True)
        check_envs(self.envs)


def check_envs(envs: tuple[str, ...]) -> None:
    """Raise one line naming the allowed envs (and the closest) if ``envs`` is empty, repeats or holds another id."""
    if not envs:
        raise ValueError(f"envs: name at least one of {', '.join(TRAINABLE_ENVS)}")
    for env_id in envs:
        if env_id not in TRAINABLE_ENVS:
            close = difflib.get_close_matches(env_id, TRAINABLE_ENVS, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"envs: {env_id!r} has no teacher; choose from {', '.join(TRAINABLE_ENVS)}{hint}")
    if len(set(envs)) != len(envs):
        raise ValueError(f"envs: each env at most once, got {', '.join(envs)}")


def play_episode(env: gym.Env, seed: int, rng: np.random.Generator, random_prob: float, junk_prob: float) -> Episode:
    """Play one episode, perturbing turns with the given probabilities (0 and 0 = pure oracle)."""
    base = env.unwrapped
    obs, info = env.reset(seed=seed)
    base.action_space.seed(int(rng.integers(2**31)))
    transcript = Transcript(info["instructions"], obs, base.response_format)
    targets: list[bool] = []
    success = False
    done = False
    while not done:
        draw = rng.random()
        if draw < random_prob:
            response, target = base.action_space.sample(), False
        elif draw < random_prob + junk_prob:
            response, target = JUNK_RESPONSES[int(rng.integers(len(JUNK_RESPONSES)))], False
        else:
            response = teacher_response(env)
            response, target = (base.oracle_response(), False) if response is None else (response, True)
        targets.append(target)
        obs, reward, terminated, truncated, info = env.step(response)
        done = terminated or truncated
        success = bool(info["success"])
        if not done:
            transcript.advance(response, obs, reward)
    messages = (*transcript.context().messages, {"role": "assistant", "content": response})
    perturbed = random_prob > 0 or junk_prob > 0
    kind = "oracle" if not perturbed else ("perturbed" if success else "failed")
    return Episode(
        env_id=env.spec.id if env.spec else type(base).__name__,
        seed=seed,
        kind=kind,
        messages=messages,
        targets=tuple(targets),
        success=success,
    )


def record_episodes(env_id: str, config: DataConfig, env_index: int = 0) -> list[Episode]:
    """All episodes of one env; perturbed episodes with no target turn at all are skipped (nothing to learn)."""
    env = gym.make(env_id)
    rng = np.random.default_rng([config.first_seed, env_index])
    total = dict(config.episodes_override).get(env_id, config.episodes_per_env)
    n_oracle = round(total * config.oracle_fraction)
    episodes = []
    for i in range(total):
        seed = config.first_seed + i
        if i < n_oracle:
            episode = play_episode(env, seed, rng, 0.0, 0.0)
        else:
            episode = play_episode(env, seed, rng, config.random_prob, config.junk_prob)
        if any(episode.targets):
            episodes.append(episode)
    env.close()
    return episodes


def record_all(config: DataConfig) -> list[Episode]:
    """Episodes of every env of ``config.envs``, env by env."""
    episodes: list[Episode] = []
    for index, env_id in enumerate(config.envs):
        episodes.extend(record_episodes(env_id, config, index))
    return episodes
