"""Batched decoding and teacher-forced scoring for transformers causal LMs (torch; imported lazily).

Used by the ``hf:``/``tiny`` agents and by ``baselines.tiny.serve``. Three functions, all on token ids:

:func:`generate_ids`
    Left-padded batch, one prefill forward, then one forward per new token over the KV cache. Every row
    samples with its *own* seeded ``torch.Generator`` (Gumbel-max on ``logits / temperature``), so a row's
    tokens are a function of its prompt and seed only, not of which other rows share its batch; a row
    stops at any of ``stop_ids`` (kept in its output) or after ``max_new_tokens``; finished rows leave the
    batch so the cache shrinks as they finish. Each token comes with its log-prob and the entropy of the
    distribution it was drawn from (temperature applied; ``temperature == 0`` is greedy and reports the
    temperature-1 distribution).
:func:`score_ids`
    Summed log-prob of each continuation after its prompt, one right-padded forward per chunk, under the
    same distribution (``logits / temperature``).
:func:`score_matrix_ids`
    Every continuation under every prompt, reusing each prompt's KV cache across all continuations: one
    prompt forward per prompt instead of one per (prompt, continuation) pair. This is what makes the MI
    family cheap.

Shapes are noted as ``(B, T)`` (batch, time) and ``(B, T, V)`` (…, vocabulary).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Decoded:
    """One row's new tokens, their log-probs and the entropies (nats) of the distributions they came from."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    entropies: tuple[float, ...]
    stopped: bool
    """True when a stop id ended the row (False: the token budget did)."""


def _cache_keyword(model) -> str:
    """The forward() keyword of the KV cache: ``cache`` in transformers 5, ``past_key_values`` before."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(output):
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _left_pad(rows: Sequence[Sequence[int]], pad_id: int, device):
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(list(r), dtype=torch.long)
            mask[i, width - len(r) :] = 1
    return ids.to(device), mask.to(device)


def _scaled_logprobs(logits, temperature: float):
    """``log_softmax(logits / T)`` in float32; T = 0 (greedy) reports the T = 1 distribution."""
    import torch

    t = 1.0 if temperature == 0 else temperature
    return torch.log_softmax(logits.float() / t, dim=-1)


def generate_ids(
    model,
    prompts: Sequence[Sequence[int]],
    seeds: Sequence[int],
    *,
    temperature: float,
    max_new_tokens: int,
    stop_ids: Sequence[int],
    pad_id: int,
    stop_text: tuple | None = None,
) -> list[Decoded]:
    """Sample a continuation of every prompt; see the module docstring.

    ``stop_text=(tokenizer, "</answer>")`` also stops a row once its decoded tail contains the string (for
    tokenizers in which the stop string is several tokens).
    """
    import torch

    if not prompts:
        return []
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt must have at least one token")
    device = next(model.parameters()).device
    stop = torch.tensor(sorted(set(stop_ids)), dtype=torch.long, device=device)
    generators = []
    for seed in seeds:
        g = torch.Generator(device=device)
        g.manual_seed(int(seed) % (2**63))
        generators.append(g)
    out_ids: list[list[int]] = [[] for _ in prompts]
    out_lp: list[list[float]] = [[] for _ in prompts]
    out_h: list[list[float]] = [[] for _ in prompts]
    stopped = [False] * len(prompts)

    input_ids, mask = _left_pad(prompts, pad_id, device)  # (B, T)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    live = list(range(len(prompts)))  # original row of each batch row
    cache_kw = _cache_keyword(model)
    with torch.inference_mode():
        output = model(
            input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1
        )
        cache = _cache_of(output)
        logits = output.logits[:, -1, :]  # (B, V)
        next_pos = positions[:, -1] + 1  # (B,)
        for _ in range(max_new_tokens):
            logp = _scaled_logprobs(logits, temperature)  # (B, V)
            entropy = -(logp.exp() * logp).sum(-1)  # (B,)
            if temperature == 0:
                chosen = logp.argmax(-1)
            else:
                gumbel = torch.stack(
                    [
                        -torch.log(
                            -torch.log(
                                torch.rand(logp.shape[-1], generator=generators[row], device=device).clamp_(1e-20, 1.0)
                            )
                        )
                        for row in live
                    ]
                )
                chosen = (logp + gumbel).argmax(-1)  # (B,)
            chosen_lp = logp.gather(-1, chosen[:, None])[:, 0]
            done_now = torch.isin(chosen, stop)
            keep = []
            for b, row in enumerate(live):
                out_ids[row].append(int(chosen[b]))
                out_lp[row].append(float(chosen_lp[b]))
                out_h[row].append(float(entropy[b]))
                if bool(done_now[b]) or (stop_text is not None and _tail_has(out_ids[row], stop_text)):
                    stopped[row] = True
                else:
                    keep.append(b)
            if not keep or len(out_ids[live[keep[0]]]) >= max_new_tokens:
                break
            if len(keep) < len(live):
                index = torch.tensor(keep, dtype=torch.long, device=device)
                cache.batch_select_indices(index)
                chosen, mask, next_pos = chosen[index], mask[index], next_pos[index]
                live = [live[b] for b in keep]
            mask = torch.cat([mask, torch.ones((len(live), 1), dtype=mask.dtype, device=device)], dim=1)
            output = model(
                input_ids=chosen[:, None],
                attention_mask=mask,
                position_ids=next_pos[:, None],
                use_cache=True,
                **{cache_kw: cache},
            )
            cache = _cache_of(output)
            logits = output.logits[:, -1, :]
            next_pos = next_pos + 1
    return [Decoded(tuple(out_ids[i]), tuple(out_lp[i]), tuple(out_h[i]), stopped[i]) for i in range(len(prompts))]


def _tail_has(ids: list[int], stop_text: tuple) -> bool:
    tokenizer, text = stop_text
    return text in tokenizer.decode(ids[-(len(text) + 2) :], skip_special_tokens=True)


def score_ids(
    model,
    prompts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    *,
    temperature: float = 1.0,
    pad_id: int = 0,
    batch_size: int = 16,
) -> list[tuple[float, int]]:
    """``(sum log p(continuation | prompt), len(continuation))`` per pair, teacher-forced."""
    import torch

    device = next(model.parameters()).device
    results: list[tuple[float, int]] = []
    for start in range(0, len(prompts), batch_size):
        chunk = list(zip(prompts[start : start + batch_size], continuations[start : start + batch_size]))
        rows = [list(p) + list(c) for p, c in chunk]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1
        with torch.inference_mode():
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits  # (B, T, V)
            logp = _scaled_logprobs(logits[:, :-1], temperature)  # predicts tokens 1..T-1
            token_lp = logp.gather(-1, ids[:, 1:].to(device)[..., None])[..., 0].cpu()  # (B, T-1)
        for i, (p, c) in enumerate(chunk):
            if not c:
                results.append((0.0, 0))
                continue
            if not p:
                raise ValueError("every prompt must have at least one token")
            results.append((float(token_lp[i, len(p) - 1 : len(p) - 1 + len(c)].sum()), len(c)))
    return results


def score_matrix_ids(
    model,
    prompts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    *,
    temperature: float = 1.0,
    pad_id: int = 0,
    batch_size: int = 32,
):
    """``(sums, counts)`` of shape ``(len(continuations), len(prompts))``; each prompt's KV cache is reused."""
    import numpy as np
    import torch

    device = next(model.parameters()).device
    sums = np.zeros((len(continuations), len(prompts)), dtype=np.float64)
    counts = np.array([[len(c)] * len(prompts) for c in continuations], dtype=np.int64).reshape(
        len(continuations), len(prompts)
    )
    nonempty = [i for i, c in enumerate(continuations) if c]
    cache_kw = _cache_keyword(model)
    for j, prompt in enumerate(prompts):
        if not prompt:
            raise ValueError("every prompt must have at least one token")
        prompt_ids = torch.tensor([list(prompt)], dtype=torch.long, device=device)  # (1, P)
        with torch.inference_mode():
            head = model(input_ids=prompt_ids, use_cache=True)
            last_lp = _scaled_logprobs(head.logits[0, -1], temperature)  # (V,): predicts each text's first token
            for start in range(0, len(nonempty), batch_size):
                rows = nonempty[start : start + batch_size]
                width = max(len(continuations[i]) for i in rows)
                ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
                mask = torch.zeros((len(rows), len(prompt) + width), dtype=torch.long)
                mask[:, : len(prompt)] = 1
                for b, i in enumerate(rows):
                    c = continuations[i]
                    ids[b, : len(c)] = torch.tensor(list(c), dtype=torch.long)
                    mask[b, len(prompt) : len(prompt) + len(c)] = 1
                ids, mask = ids.to(device), mask.to(device)
                cache = _repeat_cache(_cache_of(head), len(rows))
                positions = torch.arange(len(prompt), len(prompt) + width, device=device)[None].expand(len(rows), -1)
                logits = model(
                    input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, **{cache_kw: cache}
                ).logits  # (B, W, V)
                logp = _scaled_logprobs(logits[:, :-1], temperature)  # predicts tokens 1..W-1 of each text
                rest = logp.gather(-1, ids[:, 1:, None])[..., 0] if width > 1 else None  # (B, W-1)
                first = last_lp[ids[:, 0]]  # (B,)
                for b, i in enumerate(rows):
                    n = len(continuations[i])
                    total = float(first[b]) + (float(rest[b, : n - 1].sum()) if n > 1 else 0.0)
                    sums[i, j] = total
    return sums, counts


def _repeat_cache(cache, times: int):
    """A copy of a batch-1 KV cache repeated ``times`` along the batch (the original stays reusable)."""
    import copy

    clone = copy.deepcopy(cache)
    clone.batch_repeat_interleave(times)
    return clone
