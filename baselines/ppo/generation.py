"""Batched sampling with a KV cache that returns what training needs: token ids, log-probs and entropies.

We sample ourselves instead of calling ``model.generate`` because the learner needs the exact token ids it
will later score (no decode/re-encode drift), the sampling log-probs and entropies at every step, and one
``torch.Generator`` per sequence so a response is a pure function of (prompt, seed) whatever else shares the
batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Sampled:
    """One generated continuation."""

    ids: list[int]
    logprobs: list[float]
    """log π(token) under the temperature-scaled sampling distribution."""
    entropies: list[float]
    """Entropy (nats) of the sampling distribution at each step."""


def _cache_kwarg(model) -> str:
    """Name of the KV-cache argument: ``cache`` in transformers ≥ 5.2x, ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(out):
    return getattr(out, "cache", None) if getattr(out, "cache", None) is not None else out.past_key_values


def _stop_hit(tokenizer, ids: list[int], stop_text: str | None, tail_tokens: int = 8) -> bool:
    if not stop_text or not ids:
        return False
    return stop_text in tokenizer.decode(ids[-tail_tokens:], skip_special_tokens=False)


@torch.no_grad()
def sample_batch(
    model,
    tokenizer,
    prompts: list[list[int]],
    seeds: list[int],
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    stop_text: str | None = "</answer>",
) -> list[Sampled]:
    """Sample one continuation per prompt (left-padded batch, KV cache, per-sequence generators)."""
    device = next(model.parameters()).device
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    eos_id = tokenizer.eos_token_id
    width = max(len(p) for p in prompts)
    input_ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, prompt in enumerate(prompts):
        input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        attention[row, width - len(prompt) :] = 1
    input_ids, attention = input_ids.to(device), attention.to(device)
    positions = (attention.cumsum(-1) - 1).clamp_min(0)
    generators = [torch.Generator(device="cpu").manual_seed(int(seed) % (2**63)) for seed in seeds]

    cache_arg = _cache_kwarg(model)
    outputs = [Sampled([], [], []) for _ in prompts]
    active = [True] * len(prompts)
    out = model(input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=True)
    for _ in range(max_new_tokens):
        logits = out.logits[:, -1, :].float() / temperature  # (B, V)
        logp = torch.log_softmax(logits, dim=-1).cpu()
        probs = logp.exp()
        entropy = -(probs * logp).sum(-1)
        next_tokens = torch.full((len(prompts),), pad_id, dtype=torch.long)
        for row in range(len(prompts)):
            if not active[row]:
                continue
            token = int(torch.multinomial(probs[row], 1, generator=generators[row]))
            next_tokens[row] = token
            sampled = outputs[row]
            sampled.ids.append(token)
            sampled.logprobs.append(float(logp[row, token]))
            sampled.entropies.append(float(entropy[row]))
            if token == eos_id or _stop_hit(tokenizer, sampled.ids, stop_text):
                active[row] = False
        if not any(active):
            break
        attention = torch.cat([attention, torch.ones((len(prompts), 1), dtype=torch.long, device=device)], dim=1)
        positions = positions[:, -1:] + 1
        out = model(
            input_ids=next_tokens.unsqueeze(1).to(device),
            attention_mask=attention,
            position_ids=positions,
            use_cache=True,
            **{cache_arg: _cache_of(out)},
        )
    return outputs


Spans = list[tuple[int, int]]
"""Half-open token ranges ``[start, end)`` of one sequence whose tokens are scored (the responses)."""


def sequence_logprobs(
    model, sequences: list[list[int]], spans: list[Spans], temperature: float = 1.0, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Teacher-forced log-probs of the tokens in ``spans[i]`` of ``sequences[i]`` (right-padded batch).

    Returns ``(logp, mask, entropy, hidden)``, each (B, W-1) aligned to predicted positions (column t
    predicts token t+1; ``mask`` marks the span tokens), the entropy over the vocabulary when asked, and the
    last hidden states (B, W-1, H) for a value head.
    """
    device = next(model.parameters()).device
    width = max(len(s) for s in sequences)
    ids = torch.zeros((len(sequences), width), dtype=torch.long)
    attention = torch.zeros_like(ids)
    mask = torch.zeros((len(sequences), width - 1))
    for row, (seq, row_spans) in enumerate(zip(sequences, spans)):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        attention[row, : len(seq)] = 1
        for start, end in row_spans:
            mask[row, start - 1 : end - 1] = 1
    ids, attention, mask = ids.to(device), attention.to(device), mask.to(device)
    out = model(input_ids=ids, attention_mask=attention, output_hidden_states=True)
    logits = out.logits[:, :-1, :].float() / temperature  # (B, W-1, V)
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1) if with_entropy else None
    hidden = out.hidden_states[-1][:, :-1, :]
    return logp, mask, entropy, hidden
