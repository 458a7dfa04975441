"""Greedy rollouts of a saved causal LM on the envs it is trained on, side by side with ``random`` on the same seeds.

``python -m baselines.tiny.evaluate [DIR] --seeds 50`` prints success rate and parse rate per env; the
training script calls :func:`compare_with_random` at its end and the tests use :func:`rollout_lm`.
Episodes run in lockstep through the ``hf:`` agent (:class:`harness.agents.hf.HFAgent`), with the
harness's own prompts: each turn, the pending prompts of every live episode go through one batched call.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable
from pathlib import Path

import gymnasium as gym
import numpy as np

from baselines.tiny import MODEL_DIR
from baselines.tiny.data import SHIPPED_ENVS
from harness.transcript import Transcript
from ragen_envs.parsing import parse_response


def load_agent(model_dir: str = str(MODEL_DIR), temperature: float = 0.0, max_new_tokens: int = 128):
    """The model as the harness runs it: an ``hf:`` agent (greedy by default), offline, on CPU."""
    from harness.agents import AgentOptions
    from harness.agents.hf import HFAgent

    options = AgentOptions(temperature=temperature, max_new_tokens=max_new_tokens, device="cpu")
    return HFAgent.from_pretrained(model_dir, options)


def rollout_lm(agent, env_id: str, seeds: Iterable[int], sample_seed: int = 0) -> list[dict]:
    """Episodes of an LM agent, one per env seed, prompted exactly as ``harness run`` prompts it.

    Per episode: ``seed``, ``success``, ``turns``, ``parsed`` (turns whose response parsed), ``return``.
    """
    from harness.agents import Request

    seeds = list(seeds)
    envs = [gym.make(env_id) for _ in seeds]
    transcripts, results = [], []
    for env, seed in zip(envs, seeds, strict=True):
        obs, info = env.reset(seed=seed)
        transcripts.append(Transcript(info["instructions"], obs, env.unwrapped.response_format))
        results.append({"seed": seed, "success": False, "turns": 0, "parsed": 0, "return": 0.0})
    live = list(range(len(envs)))
    while live:
        requests = [
            Request(transcripts[i].context(), seed=sample_seed * 1_000_003 + seeds[i] * 101 + results[i]["turns"])
            for i in live
        ]
        generations = agent.generate(requests)
        still = []
        for i, generation in zip(live, generations, strict=True):
            response = transcripts[i].prefill + generation.text
            obs, reward, terminated, truncated, info = envs[i].step(response)
            record = results[i]
            record["turns"] += 1
            record["parsed"] += parse_response(response, envs[i].unwrapped.response_format).ok
            record["return"] += reward
            record["success"] = bool(info["success"])
            if terminated or truncated:
                record["last_response"] = response
            else:
                transcripts[i].advance(response, obs, reward)
                still.append(i)
        live = still
    for env in envs:
        env.close()
    return results


def rollout_random(env_id: str, seeds: Iterable[int]) -> list[dict]:
    """Episodes of the random valid-format policy (``action_space.sample()``), one per seed."""
    env = gym.make(env_id)
    results = []
    for seed in seeds:
        env.reset(seed=seed)
        env.unwrapped.action_space.seed(seed)
        done, info, total = False, {}, 0.0
        while not done:
            _, reward, terminated, truncated, info = env.step(env.unwrapped.action_space.sample())
            total += reward
            done = terminated or truncated
        results.append({"seed": seed, "success": bool(info["success"]), "return": total})
    env.close()
    return results


def trained_envs(model_dir: str) -> tuple[str, ...]:
    """The envs a saved model was trained on, from its ``training_log.json`` (the shipped recipe's if it has none)."""
    log = Path(model_dir) / "training_log.json"
    if log.exists():
        envs = json.loads(log.read_text()).get("config", {}).get("data", {}).get("envs")
        if envs:
            return tuple(envs)
    return SHIPPED_ENVS


def compare_with_random(
    model_dir: str, seeds: Iterable[int], log: Callable[[str], None] = print, envs: tuple[str, ...] | None = None
) -> dict:
    """Success rate (and parse rate) of the model and of ``random`` per env (default: those it was trained on)."""
    agent = load_agent(model_dir)
    seeds = list(seeds)
    summary = {}
    for env_id in trained_envs(model_dir) if envs is None else envs:
        lm = rollout_lm(agent, env_id, seeds)
        rnd = rollout_random(env_id, seeds)
        summary[env_id] = {
            "episodes": len(seeds),
            "tiny_success": float(np.mean([r["success"] for r in lm])),
            "tiny_parse_rate": sum(r["parsed"] for r in lm) / sum(r["turns"] for r in lm),
            "random_success": float(np.mean([r["success"] for r in rnd])),
        }
        log(f"{env_id}: {json.dumps(summary[env_id])}")
    return summary


def main(argv: list[str] | None = None) -> int:
    """``python -m baselines.tiny.evaluate``: the model's success and parse rate beside ``random``'s, per env."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model_dir", nargs="?", default=str(MODEL_DIR))
    parser.add_argument("--seeds", type=int, default=50, help="seeds 0..N-1 per env")
    args = parser.parse_args(argv)
    compare_with_random(args.model_dir, range(args.seeds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
