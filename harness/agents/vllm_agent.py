"""``vllm:<model>``: vLLM's offline engine on a GPU (the ``gpu`` extra: ``pip install -e '.[gpu]'``).

vLLM pins its own torch and has no CPU backend, so it is never part of the CPU install and is imported only
when this agent is built; without it the agent raises an ``ImportError`` that names the extra.

Generation renders each context with the model's chat template plus the prefill, samples with a per-request
``seed`` (so a response is a function of its context and seed, whatever the batch), stops at
``</answer>`` (kept in the text) within ``max_new_tokens``, and returns the sampled tokens' log-probs.
Entropies need the full distribution, which vLLM does not return: they stay ``None``.

Scoring asks vLLM for the *prompt* log-probs (``prompt_logprobs=0``) of the rendered context followed by
the text, and sums those of the text's tokens: the text's tokens are what follows the context's own
tokenization (the chat template ends in special tokens or the prefill, so the boundary is stable; a
context whose tokens are not a prefix of the joint tokenization is rejected rather than mis-scored).

Options (``AgentOptions.extra``): ``gpu_memory_utilization`` (0.5), ``max_model_len`` (4096),
``tensor_parallel_size`` (1), ``enforce_eager`` (False), ``seed`` (0, the engine's), ``enable_prefix_caching``
(True: an episode's turns share their history's cached blocks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.agents.base import Agent, Context, Generation, Request, Score
from harness.agents.registry import AgentOptions

STOP = "</answer>"
ENGINE_OPTIONS = (
    "gpu_memory_utilization", "max_model_len", "tensor_parallel_size", "enforce_eager", "seed", "enable_prefix_caching",
)  # fmt: skip


def import_vllm():
    """``vllm``, or an ImportError that says how to install it."""
    try:
        import vllm
    except ImportError as error:
        raise ImportError(
            "the vllm: agent needs vLLM on a CUDA machine: pip install -e '.[gpu]' "
            "(vLLM pins its own torch; use a separate environment from the CPU install)"
        ) from error
    return vllm


class VLLMAgent(Agent):
    """A model served by vLLM's offline ``LLM`` engine; see the module docstring."""

    can_score = True

    def __init__(self, model: str, options: AgentOptions | None = None) -> None:
        self.options = options or AgentOptions()
        extra = dict(self.options.extra)
        unknown = sorted(set(extra) - set(ENGINE_OPTIONS))
        if unknown:
            raise ValueError(f"unknown vllm agent option(s) {unknown}; allowed: {list(ENGINE_OPTIONS)}")
        vllm = import_vllm()
        dtype = "bfloat16" if self.options.dtype == "auto" else self.options.dtype
        self.model_name = model
        self.llm = vllm.LLM(
            model=model,
            dtype=dtype,
            gpu_memory_utilization=float(extra.get("gpu_memory_utilization", 0.5)),
            max_model_len=int(extra.get("max_model_len", 4096)),
            tensor_parallel_size=int(extra.get("tensor_parallel_size", 1)),
            enforce_eager=bool(extra.get("enforce_eager", False)),
            seed=int(extra.get("seed", 0)),
            # a turn's prompt extends the previous turn's: cached blocks spare re-running the history (on by
            # default in vLLM's V1 engine; explicit for older engines)
            enable_prefix_caching=bool(extra.get("enable_prefix_caching", True)),
        )
        self.tokenizer = self.llm.get_tokenizer()
        self._vllm = vllm

    def _render(self, context: Context) -> str:
        chat = self.tokenizer.apply_chat_template(list(context.messages), tokenize=False, add_generation_prompt=True)
        return chat + context.prefill

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        if not requests:
            return []
        SamplingParams = self._vllm.SamplingParams
        params = [
            SamplingParams(
                temperature=self.options.temperature,
                max_tokens=self.options.max_new_tokens,
                seed=int(r.seed),
                stop=[STOP],
                include_stop_str_in_output=True,
                logprobs=0,
            )
            for r in requests
        ]
        prompts = [self._render(r.context) for r in requests]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        generations = []
        for out in outputs:
            completion = out.outputs[0]
            logprobs = None
            if completion.logprobs:
                logprobs = tuple(
                    float(step[token].logprob) for token, step in zip(completion.token_ids, completion.logprobs)
                )
            generations.append(
                Generation(text=completion.text, num_tokens=len(completion.token_ids), token_logprobs=logprobs)
            )
        return generations

    def score(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[Score]:
        if not contexts:
            return []
        SamplingParams = self._vllm.SamplingParams
        temperature = 1.0 if self.options.temperature == 0 else self.options.temperature
        params = SamplingParams(max_tokens=1, temperature=temperature, prompt_logprobs=0)
        heads = [self.tokenizer.encode(self._render(c), add_special_tokens=False) for c in contexts]
        joints = [self.tokenizer.encode(self._render(c) + t, add_special_tokens=False) for c, t in zip(contexts, texts)]
        for head, joint in zip(heads, joints):
            if joint[: len(head)] != head:
                raise ValueError("the context's tokens are not a prefix of context + text; cannot score this text")
        prompts = [{"prompt_token_ids": joint} for joint in joints]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        scores = []
        for head, joint, out in zip(heads, joints, outputs):
            steps = out.prompt_logprobs  # one dict per prompt token (None for the first)
            picked = [float(steps[k][joint[k]].logprob) for k in range(len(head), len(joint))]
            scores.append(Score(logprob_sum=sum(picked), num_tokens=len(picked)))
        return scores

    def describe(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "model": self.model_name,
            "temperature": self.options.temperature,
            "max_new_tokens": self.options.max_new_tokens,
            "engine": dict(self.options.extra),
        }

    def close(self) -> None:
        self.llm = None
