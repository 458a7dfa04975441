"""Rollouts with vLLM's offline engine on a GPU (``generation_backend="vllm"``, the ``gpu`` extra).

Colocated with the trainer: the engine holds its own copy of the weights, refreshed from the policy before
each iteration's rollouts. We refresh by writing the policy to a scratch directory and loading it through
vLLM's ``load_weights`` when the engine exposes it (``collective_rpc`` on recent versions), otherwise by
rebuilding the engine from that directory (correct but slower; documented fallback). vLLM pins its own torch
and has no CPU backend, so it is imported lazily and never part of the CPU install.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import gymnasium as gym

from baselines.ppo.rollout import Episode, TurnSample, env_seed_for, render_prompt
from harness.prompting import build_context, prefill_for, user_message
from harness.seeding import derive_seed


def _import_vllm():
    try:
        import vllm
    except ImportError as error:
        raise ImportError(
            "generation_backend='vllm' needs vLLM on a CUDA machine: pip install 'ragen-envs[gpu]'. "
            "Use generation_backend='transformers' on CPU."
        ) from error
    return vllm


class VLLMEngine:
    def __init__(self, config, tokenizer) -> None:
        self.vllm = _import_vllm()
        self.config = config
        self.tokenizer = tokenizer
        self.scratch = Path(tempfile.mkdtemp(prefix="ragen-vllm-"))
        self.llm = self.vllm.LLM(model=config.model, gpu_memory_utilization=0.35, enforce_eager=True, seed=config.seed)

    def sync(self, policy) -> None:
        """Copy the policy's current weights into the engine."""
        state = {k: v.detach() for k, v in policy.state_dict().items()}
        try:
            self.llm.collective_rpc("load_weights", args=(list(state.items()),))
        except Exception:
            policy.save_pretrained(self.scratch)
            self.tokenizer.save_pretrained(self.scratch)
            self.llm = self.vllm.LLM(model=str(self.scratch), gpu_memory_utilization=0.35, enforce_eager=True)

    def collect(self, iteration: int, groups: list[int]) -> list[Episode]:
        cfg = self.config
        slots = []
        for group in groups:
            seed = env_seed_for(cfg.seed, iteration, group)
            for sample in range(cfg.samples_per_prompt):
                env = gym.make(cfg.env_id, **cfg.env_kwargs)
                obs, info = env.reset(seed=seed)
                slots.append([env, Episode(group, sample, seed, chained=False), {"role": "system", "content": info["instructions"]},
                              [], user_message(1, obs, None), prefill_for(env.unwrapped.response_format), False])  # fmt: skip
        turn = 0
        while any(not s[6] for s in slots):
            turn += 1
            live = [s for s in slots if not s[6]]
            contexts = [build_context(s[2], s[3], s[4], s[5], cfg.context_turns) for s in live]
            prompts = [render_prompt(self.tokenizer, c) for c in contexts]
            params = [
                self.vllm.SamplingParams(
                    temperature=cfg.temperature,
                    max_tokens=cfg.max_new_tokens,
                    logprobs=0,
                    stop=["</answer>"],
                    include_stop_str_in_output=True,
                    seed=derive_seed("train-sample", cfg.seed, iteration, s[1].group, s[1].sample, turn) % (2**31),
                )  # fmt: skip
                for s in live
            ]
            outputs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
            for slot, context, prompt, out in zip(live, contexts, prompts, outputs):
                completion = out.outputs[0]
                ids = list(completion.token_ids)
                logprobs = [float(next(iter(lp.values())).logprob) for lp in (completion.logprobs or [])]
                text = completion.text
                obs, reward, terminated, truncated, info = slot[0].step(context.prefill + text)
                episode = slot[1]
                episode.turns.append(TurnSample(episode.group, episode.sample, turn, context, prompt, ids, logprobs,
                                                [], context.prefill + text, float(reward)))  # fmt: skip
                episode.episode_return += float(reward)
                slot[3].append((slot[4], {"role": "assistant", "content": context.prefill + text}))
                slot[4] = user_message(turn + 1, obs, float(reward))
                if terminated or truncated:
                    episode.success = bool(info.get("success", False))
                    slot[6] = True
        return [s[1] for s in slots]
