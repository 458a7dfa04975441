"""The transcript: one definition of each turn's chat, shared by the harness rollout, the learner and verify."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import ragen_envs  # noqa: F401  (registers the ids)
from harness.agents import Agent
from harness.agents.base import Context
from harness.config import EnvPlan, RunConfig
from harness.records import dumps_line
from harness.rollout import EnvPool, Job, rollout_chunk
from harness.transcript import Transcript, build_context, record_messages, render_prompt, replay_contexts
from ragen_envs.parsing import reasoning_of


class _Recording(Agent):
    """The random agent, keeping every context it was asked for."""

    can_score = False

    def __init__(self):
        from harness.agents.scripted import RandomAgent

        self.inner, self.seen = RandomAgent(), []

    def generate(self, requests):
        self.seen += [Context(r.context.messages, r.context.prefill) for r in requests]
        return self.inner.generate(requests)


def _rollout(env_id: str, seed: int, window: int | None) -> tuple[dict, list[Context]]:
    config = RunConfig(agents=("random",), envs=(EnvPlan(env_id, seed + 1, 1),), context_turns=window)
    agent = _Recording()
    (record,) = rollout_chunk(agent, config, [Job("random", env_id, seed, 0)], EnvPool(config))
    return json.loads(dumps_line(record)), agent.seen  # as read back from episodes.jsonl


def _replay(record: dict) -> dict:
    """Play the record's responses on a fresh env through a Transcript; return the turns it rebuilds."""
    env = gym.make(record["env_id"], **record["env_kwargs"])
    observation, info = env.reset(seed=record["seed"])
    transcript = Transcript(info["instructions"], observation, env.unwrapped.response_format, record["context_turns"])
    turns = []
    for recorded in record["turns"]:
        response = recorded["response"]
        user, prefill, turn = transcript.current["content"], transcript.prefill, transcript.turn
        observation, reward, terminated, truncated, _ = env.step(response)
        turns.append(
            {
                "turn": turn, "user": user, "prefill": prefill, "response": response,
                "reasoning": reasoning_of(response, env.unwrapped.response_format), "observation": observation,
                "reward": float(reward), "terminated": terminated, "truncated": truncated,
            }
        )  # fmt: skip
        if not (terminated or truncated):
            transcript.advance(response, observation, float(reward))
    env.close()
    return {"instructions": info["instructions"], "turns": turns}


@pytest.mark.parametrize("window", [None, 1])
def test_the_replay_of_a_recorded_episode_equals_the_record(window):
    for seed in range(3):
        record, seen = _rollout("ragen/Sokoban-v0", seed, window)
        replayed = _replay(record)
        assert replayed["instructions"] == record["instructions"]
        keys = replayed["turns"][0].keys()
        assert [{k: t[k] for k in keys} for t in record["turns"]] == replayed["turns"]
        # the chat of every turn, rebuilt from the record alone, is the one the agent was shown
        assert list(replay_contexts(record)) == seen
        assert [record_messages(record, i) for i in range(len(seen))] == [c.messages for c in seen]


def test_the_leaderboard_replays_a_harness_record_through_the_same_transcript():
    from leaderboard.records import parse_episode
    from leaderboard.verify import Replayer

    record, _ = _rollout("ragen/Sokoban-v0", 0, 2)
    assert len(record["turns"]) > 2  # the window cuts
    assert Replayer(2).replay(parse_episode(1, record)) is None
    edited = json.loads(json.dumps(record))
    edited["turns"][1]["user"] = edited["turns"][1]["user"].replace("Turn 2", "Turn 3")
    assert "turn 2: the recorded user message differs" in Replayer(2).replay(parse_episode(1, edited))


def test_context_advance_and_window():
    transcript = Transcript("rules", "s1", "think", context_turns=1)
    assert transcript.turn == 1 and transcript.prefill == "<think>"
    assert transcript.context().messages == (
        {"role": "system", "content": "rules"},
        {"role": "user", "content": "Turn 1:\nState:\ns1"},
    )
    transcript.advance("<think>a</think><answer>Up</answer>", "s2", -0.1)
    transcript.advance("<think>b</think><answer>Up</answer>", "s3", 1.0)
    assert transcript.turn == 3 and transcript.current == {"role": "user", "content": "Reward: 1\nTurn 3:\nState:\ns3"}
    kept = transcript.context().messages  # system, then only the last exchange, then the current turn
    assert [m["role"] for m in kept] == ["system", "user", "assistant", "user"]
    assert kept[1]["content"] == "Reward: -0.1\nTurn 2:\nState:\ns2"
    assert kept[2]["content"] == "<think>b</think><answer>Up</answer>"
    full = Transcript("rules", "s1", "answer")
    full.advance("<answer>Up</answer>", "s2", 0.0)
    assert full.prefill == "" and len(full.context().messages) == 4
    assert full.context() == build_context(full.system, full.exchanges, full.current, "", None)


def test_render_prompt_is_the_chat_template_with_the_generation_prompt_then_the_prefill():
    class Template:
        def apply_chat_template(self, messages, tokenize, add_generation_prompt):
            assert tokenize is False and add_generation_prompt is True
            return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"

    context = Transcript("rules", "s1", "think").context()
    assert render_prompt(Template(), context) == "<system>rules<user>Turn 1:\nState:\ns1<assistant><think>"


class _CharTokenizer:
    """One id per character (0 is the end of sequence): enough for the learner's prompt chaining."""

    eos_token_id = 0

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        return "".join(f"<{m['role']}>{m['content']}\n" for m in messages) + (
            "<assistant>" if add_generation_prompt else ""
        )

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [ord(c) for c in text]}

    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if i or not skip_special_tokens)


def test_the_learner_rollout_builds_the_transcript_and_chains_its_token_ids():
    from baselines.algos.rollout import RolloutSpec
    from baselines.ppo.rollout import collect_rollouts
    from harness.lm.generation import Decoded

    tokenizer = _CharTokenizer()
    moves = ["Up", "Left", "Down", "Right"]

    def sampler(prompts, seeds):
        texts = [f"go</think><answer>{moves[seed % 4]}</answer>" for seed in seeds]
        return [
            Decoded(tuple(ord(c) for c in t) + (0,), (0.0,) * (len(t) + 1), (0.0,) * (len(t) + 1), True) for t in texts
        ]

    config = RolloutSpec(env_id="ragen/Sokoban-v0", max_turns=4, seed=0, samples_per_prompt=2)
    episodes = collect_rollouts(None, tokenizer, config, 0, [0, 1], sampler=sampler)
    for episode in episodes:
        assert len(episode.turns) > 1 and episode.chained
        record = {
            "env_id": "ragen/Sokoban-v0", "env_kwargs": {"max_turns": 4}, "seed": episode.env_seed,
            "context_turns": None, "turns": [{"response": t.response_text} for t in episode.turns],
        }  # fmt: skip
        replayed = _replay(record)
        for sample, turn in zip(episode.turns, replayed["turns"], strict=True):
            messages = sample.context.messages
            assert messages[-1]["content"] == turn["user"] and sample.context.prefill == turn["prefill"]
            assert sample.reward == turn["reward"]
        # the chained ids are the rendered transcript's: the previous prompt and response, then the template's text
        for before, after in zip(episode.turns, episode.turns[1:], strict=False):  # consecutive turns
            assert after.prompt_ids[: len(before.prompt_ids) + len(before.response_ids)] == (
                before.prompt_ids + before.response_ids
            )
            rendered = render_prompt(tokenizer, after.context)
            assert tokenizer.decode(after.prompt_ids) == rendered
