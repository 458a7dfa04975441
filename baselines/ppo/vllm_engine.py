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

from baselines.ppo.generation import STOP_TEXT
from baselines.ppo.rollout import Episode, collect_rollouts
from harness.agents.decoding import Decoded


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

    def sample(self, prompts: list[list[int]], seeds: list[int]) -> list[Decoded]:
        """One continuation per prompt id list, seeded per request, with sampled-token log-probs."""
        cfg = self.config
        params = [
            self.vllm.SamplingParams(
                temperature=cfg.temperature,
                max_tokens=cfg.max_new_tokens,
                logprobs=0,
                stop=[STOP_TEXT],
                include_stop_str_in_output=True,
                seed=seed % (2**31),
            )  # fmt: skip
            for seed in seeds
        ]
        outputs = self.llm.generate([{"prompt_token_ids": p} for p in prompts], params, use_tqdm=False)
        sampled = []
        for out in outputs:
            completion = out.outputs[0]
            logprobs = [float(next(iter(lp.values())).logprob) for lp in (completion.logprobs or [])]
            ids = tuple(completion.token_ids)
            stopped = completion.finish_reason == "stop"
            sampled.append(Decoded(ids, tuple(logprobs), (), stopped))  # vLLM returns no full entropies
        return sampled

    def collect(self, iteration: int, groups: list[int]) -> list[Episode]:
        """The shared rollout loop, sampling with the engine."""
        return collect_rollouts(None, self.tokenizer, self.config, iteration, groups, sampler=self.sample)
