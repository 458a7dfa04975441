"""``hf:<dir-or-name>``: a transformers causal LM as a harness agent (extra ``llm``; torch imported lazily).

Generation: the chat template (``add_generation_prompt``) plus the prefill is tokenized per request; a batch
is left-padded, run once over the prompt, then one token at a time over the KV cache. Each row samples with
its *own* ``torch.Generator`` seeded from the request's seed (so a response does not depend on its batch
mates, up to float noise of padding), from ``softmax(logits / temperature)`` (greedy at temperature 0), and
stops at an EOS token, at ``</answer>`` (text after it is cut) or after ``max_new_tokens``. Every token
comes with its log-prob and the entropy of the distribution it was drawn from (temperature applied; the
temperature-1 distribution when greedy).

Scoring (teacher forcing): ``log p(text | context)`` = sum over the text's tokens (tokenized on its own,
without special tokens, appended to the prompt's ids) of ``log softmax(logits / T)``, the same
distribution generation samples from. ``score_matrix`` reuses each prompt's KV cache: one forward over
prompt ``j``, then all texts in one batched forward on top of it (N prompt forwards instead of N×M).
A tokenizer without a chat template gets a plain ``<role>: content`` layout.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.agents.base import Agent, Context, Generation, Request, Score
from harness.agents.registry import AgentOptions

STOP_TEXT = "</answer>"
LLM_EXTRA = "pip install torch==2.13.0 && pip install 'ragen-envs[llm]'"
_FALLBACK_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>: {% endif %}"
)


def _torch():
    try:
        import torch
    except ImportError:
        raise ImportError(f"the hf: agent needs torch and transformers: {LLM_EXTRA}") from None
    return torch


def _cache_keyword(model: Any) -> str:
    """forward()'s KV-cache keyword: ``cache`` in transformers 5, ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


class HFAgent(Agent):
    """A transformers causal LM; see the module docstring."""

    can_score = True

    def __init__(self, model: Any, tokenizer: Any, options: AgentOptions | None = None, spec: str = "hf") -> None:
        torch = _torch()
        self.options = options or AgentOptions()
        self.spec = spec
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.device = next(model.parameters()).device
        self._cache_kw = _cache_keyword(model)
        eos = tokenizer.eos_token_id
        self.stop_ids = set() if eos is None else {eos} if isinstance(eos, int) else set(eos)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.stop_ids, default=0)
        if getattr(tokenizer, "chat_template", None) is None:
            tokenizer.chat_template = _FALLBACK_TEMPLATE
        self._torch = torch

    @classmethod
    def from_pretrained(cls, name_or_path: str, options: AgentOptions | None = None) -> HFAgent:
        """Load tokenizer and model from a local directory (or, when online, a hub name)."""
        torch = _torch()
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise ImportError(f"the hf: agent needs transformers: {LLM_EXTRA}") from None
        options = options or AgentOptions()
        local = Path(name_or_path).expanduser()
        offline = os.environ.get("HF_HUB_OFFLINE") == "1" or local.is_dir()
        if not local.is_dir() and offline:
            raise ValueError(
                f"hf:{name_or_path}: no such directory, and HF_HUB_OFFLINE=1 forbids downloading it; "
                "pass a local checkpoint directory"
            )
        device = options.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        dtypes = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
        if options.dtype == "auto":
            dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
        elif options.dtype in dtypes:
            dtype = dtypes[options.dtype]
        else:
            raise ValueError(f"dtype must be one of {('auto', *dtypes)}, got {options.dtype!r}")
        path = str(local) if local.is_dir() else name_or_path
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=offline)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=offline).to(device)
        return cls(model, tokenizer, options, spec=f"hf:{name_or_path}")

    def describe(self) -> dict[str, Any]:
        return {"spec": self.spec, "model_class": type(self.model).__name__, "device": str(self.device)}

    # ---- prompts ------------------------------------------------------------------------------------------
    def prompt_ids(self, context: Context) -> list[int]:
        """Token ids of the chat template (with generation prompt) followed by the prefill."""
        text = self.tokenizer.apply_chat_template(list(context.messages), tokenize=False, add_generation_prompt=True)
        return self.tokenizer(text + context.prefill, add_special_tokens=False)["input_ids"]

    def text_ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _forward(self, ids: Any, mask: Any, positions: Any, cache: Any = None) -> Any:
        kwargs = {self._cache_kw: cache} if cache is not None else {}
        return self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **kwargs)

    def _logprobs(self, logits: Any) -> Any:
        temperature = self.options.temperature or 1.0
        return self._torch.log_softmax(logits.float() / temperature, dim=-1)

    # ---- generation ---------------------------------------------------------------------------------------
    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        out: list[Generation] = []
        size = self.options.batch_size
        for start in range(0, len(requests), size):
            out.extend(self._generate_batch(requests[start : start + size]))
        return out

    def _generate_batch(self, requests: Sequence[Request]) -> list[Generation]:
        torch = self._torch
        rows = [self.prompt_ids(r.context) for r in requests]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):  # left padding: every prompt ends at the last column
            ids[i, width - len(row) :] = torch.tensor(row, dtype=torch.long)
            mask[i, width - len(row) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        generators = []
        for r in requests:
            gen = torch.Generator(device=self.device)
            gen.manual_seed(int(r.seed) % (1 << 63))
            generators.append(gen)
        tokens: list[list[int]] = [[] for _ in rows]
        logps: list[list[float]] = [[] for _ in rows]
        ents: list[list[float]] = [[] for _ in rows]
        texts = [""] * len(rows)
        done = [False] * len(rows)
        with torch.inference_mode():
            output = self._forward(ids, mask, positions)
            for _ in range(self.options.max_new_tokens):
                logp = self._logprobs(output.logits[:, -1, :])  # (B, V)
                entropy = -(logp.exp() * logp).sum(-1)  # (B,)
                step = torch.full((len(rows), 1), self.pad_id, dtype=torch.long, device=self.device)
                for i in range(len(rows)):
                    if done[i]:
                        continue
                    if self.options.temperature == 0:
                        token = int(logp[i].argmax())
                    else:
                        token = int(torch.multinomial(logp[i].exp(), 1, generator=generators[i]))
                    step[i, 0] = token
                    tokens[i].append(token)
                    logps[i].append(float(logp[i, token]))
                    ents[i].append(float(entropy[i]))
                    if token in self.stop_ids:
                        done[i] = True
                    else:
                        texts[i] = self.tokenizer.decode(tokens[i], skip_special_tokens=True)
                        done[i] = STOP_TEXT in texts[i]
                if all(done):
                    break
                mask = torch.cat([mask, torch.ones((len(rows), 1), dtype=mask.dtype, device=self.device)], dim=1)
                positions = positions[:, -1:] + 1
                output = self._forward(step, mask, positions, _cache_of(output))
        out = []
        for i in range(len(rows)):
            text = texts[i]
            cut = text.find(STOP_TEXT)
            if cut >= 0:
                text = text[: cut + len(STOP_TEXT)]
            out.append(Generation(text, len(tokens[i]), tuple(logps[i]), tuple(ents[i])))
        return out

    # ---- scoring ------------------------------------------------------------------------------------------
    def _score_under_prompt(self, prompt: list[int], texts: Sequence[list[int]]) -> list[float]:
        """Summed log-probs of each token sequence after ``prompt``: one prompt forward, its cache reused."""
        torch = self._torch
        sums = [0.0] * len(texts)
        with torch.inference_mode():
            p_ids = torch.tensor([prompt], dtype=torch.long, device=self.device)
            p_mask = torch.ones_like(p_ids)
            p_out = self._forward(p_ids, p_mask, torch.arange(len(prompt), device=self.device)[None])
            first = self._logprobs(p_out.logits[0, -1, :])  # (V,): the distribution of every text's first token
            cache = _cache_of(p_out)
            order = [i for i in range(len(texts)) if texts[i]]
            size = self.options.batch_size
            for start in range(0, len(order), size):
                chunk = order[start : start + size]
                width = max(len(texts[i]) for i in chunk)
                ids = torch.full((len(chunk), width), self.pad_id, dtype=torch.long)
                valid = torch.zeros((len(chunk), width), dtype=torch.long)
                for row, i in enumerate(chunk):  # right padding after the shared prompt
                    ids[row, : len(texts[i])] = torch.tensor(texts[i], dtype=torch.long)
                    valid[row, : len(texts[i])] = 1
                ids, valid = ids.to(self.device), valid.to(self.device)
                mask = torch.cat([p_mask.expand(len(chunk), -1), valid], dim=1)
                positions = (len(prompt) + torch.arange(width, device=self.device))[None].expand(len(chunk), -1)
                chunk_cache = copy.deepcopy(cache)
                chunk_cache.batch_repeat_interleave(len(chunk))
                logits = self._forward(ids, mask, positions, chunk_cache).logits  # (B, T, V)
                logp = self._logprobs(logits[:, :-1, :])  # predicts tokens 1..T-1
                picked = logp.gather(-1, ids[:, 1:, None])[..., 0] * valid[:, 1:]  # (B, T-1)
                totals = picked.sum(-1) + first[ids[:, 0]]
                for row, i in enumerate(chunk):
                    sums[i] = float(totals[row])
        return sums

    def score(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[Score]:
        if len(contexts) != len(texts):
            raise ValueError(f"score needs as many contexts as texts, got {len(contexts)} and {len(texts)}")
        groups: dict[str, list[int]] = {}
        for i, context in enumerate(contexts):
            groups.setdefault(context.key(), []).append(i)
        out: list[Score | None] = [None] * len(texts)
        for members in groups.values():
            ids = [self.text_ids(texts[i]) for i in members]
            sums = self._score_under_prompt(self.prompt_ids(contexts[members[0]]), ids)
            for i, tok, total in zip(members, ids, sums):
                out[i] = Score(total, len(tok))
        return out  # type: ignore[return-value]

    def score_matrix(self, contexts: Sequence[Context], texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        ids = [self.text_ids(t) for t in texts]
        sums = np.zeros((len(texts), len(contexts)))
        counts = np.repeat(np.array([[len(t)] for t in ids], dtype=np.int64), len(contexts), axis=1)
        done: dict[str, int] = {}
        for j, context in enumerate(contexts):
            key = context.key()
            if key in done:  # text-identical prompt: same column
                sums[:, j] = sums[:, done[key]]
                continue
            sums[:, j] = self._score_under_prompt(self.prompt_ids(context), ids)
            done[key] = j
        return sums, counts.reshape(len(texts), len(contexts))

    def close(self) -> None:
        self.model = None  # type: ignore[assignment]
