"""Batched sampling for transformers causal LMs, on token ids (torch; imported lazily).

:func:`generate_ids`: left-padded batch, one prefill forward (identical prompts run once and share their
keys/values), then one forward per new token over the KV cache (:mod:`harness.lm.kv_cache`). Every row samples
with its *own* seeded ``torch.Generator`` (Gumbel-max on ``logits / temperature``), so a row's tokens are a
function of its prompt and seed only, not of which other rows share its batch; a row stops at any of
``stop_ids`` (kept in its output) or after ``max_new_tokens``; finished rows leave the batch so the cache shrinks
as they finish. Each token comes with its log-prob and the entropy of the distribution it was drawn from
(temperature applied; ``temperature == 0`` is greedy and reports the temperature-1 distribution).
:func:`scaled_logprobs` is that distribution, which teacher-forced scoring (:mod:`harness.lm.scoring`) uses too.

Shapes are noted as ``(B, T)`` (batch, time) and ``(B, T, V)`` (…, vocabulary).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.lm.kv_cache import CachedPrefix, cache_keyword, cache_of, growing_cache, plain_layers, row_prefix


@dataclass(frozen=True)
class Decoded:
    """One row's new tokens, their log-probs and the entropies (nats) of the distributions they came from."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    entropies: tuple[float, ...]
    stopped: bool
    """True when a stop id ended the row (False: the token budget did)."""
    prefix: CachedPrefix | None = field(default=None, compare=False, repr=False)
    """With ``keep_prefixes``: the row's ids (prompt and the new tokens it fed) and their keys/values."""


def left_pad(rows: Sequence[Sequence[int]], pad_id: int, device):
    """``(ids, attention_mask)``, each ``(B, T)``: the rows right-aligned after ``pad_id`` padding."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r) :] = torch.tensor(list(r), dtype=torch.long)
            mask[i, width - len(r) :] = 1
    return ids.to(device), mask.to(device)


def scaled_logprobs(logits, temperature: float):
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
    prefixes: Sequence[CachedPrefix | None] | None = None,
    keep_prefixes: bool = False,
) -> list[Decoded]:
    """Sample a continuation of every prompt; see the module docstring.

    ``stop_text=(tokenizer, "</answer>")`` also stops a row once its decoded tail contains the string (for
    tokenizers in which the stop string is several tokens).

    ``prefixes`` (one per prompt, or None): keys/values a row may start from, e.g. its episode's previous turn
    (prompt + response); the prefill then runs only the tokens past the common prefix, so a multi-turn episode
    costs O(turns) prefill instead of O(turns^2). ``keep_prefixes``: each :class:`Decoded` carries its row's
    :class:`CachedPrefix` for that. Both only for models whose cache layers are plain ``DynamicLayer`` (full
    attention; not sliding windows) in transformers >= 4.56; otherwise no prefix is kept or used.
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
    kept: list[CachedPrefix | None] = [None] * len(prompts)

    # identical prompts (the samples of one env seed, group sampling) share one prefill: its keys/values and
    # last logits are copied to each of their rows, which then sample apart with their own generators
    distinct: dict[tuple[int, ...], int] = {}
    copy_of = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
    unique = list(distinct)
    live = list(range(len(prompts)))  # original row of each batch row
    cache_kw = cache_keyword(model)
    fresh = growing_cache(model, max_new_tokens)
    # the cached prefix each distinct prompt starts from and how many of its tokens it covers (only with the
    # in-place plain cache: a sliding window would count the padded columns)
    start: list[tuple[CachedPrefix, int] | None] = [None] * len(unique)
    for row, cached in enumerate((prefixes or ()) if fresh is not None else ()):
        if cached is not None and start[copy_of[row]] is None:
            covered = cached.reusable(unique[copy_of[row]])
            if covered > 0:
                start[copy_of[row]] = (cached, covered)
    with torch.inference_mode():
        output, mask, positions = _prefill(model, cache_kw, fresh, unique, start, pad_id, device)
        cache = cache_of(output)
        logits = output.logits[:, -1, :]  # (U, V)
        next_pos = positions[:, -1] + 1  # (U,)
        keep_kv = keep_prefixes and plain_layers(cache) is not None
        if len(distinct) < len(prompts):
            rows = torch.tensor(copy_of, dtype=torch.long, device=device)
            cache.batch_select_indices(rows)
            logits, mask, next_pos = logits[rows], mask[rows], next_pos[rows]  # (B, ...)
        for _ in range(max_new_tokens):
            logp = scaled_logprobs(logits, temperature)  # (B, V)
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
            # one conversion per tensor and step, not one per row and value (indexing a tensor per row costs
            # more than the step's small matmuls at 64 rows); the same Python floats and ints
            step_ids, step_lp, step_h = chosen.tolist(), chosen_lp.tolist(), entropy.tolist()
            done_now = torch.isin(chosen, stop).tolist()
            keep = []
            for b, row in enumerate(live):
                out_ids[row].append(step_ids[b])
                out_lp[row].append(step_lp[b])
                out_h[row].append(step_h[b])
                if done_now[b] or (stop_text is not None and _tail_has(out_ids[row], stop_text)):
                    stopped[row] = True
                else:
                    keep.append(b)
            last = not keep or len(out_ids[live[keep[0]]]) >= max_new_tokens
            if keep_kv:  # rows leaving the batch: their fed tokens' keys/values, before the cache drops them
                for b in range(len(live)) if last else sorted(set(range(len(live))) - set(keep)):
                    row = live[b]
                    kept[row] = row_prefix(cache, b, mask[b], tuple(prompts[row]) + tuple(out_ids[row][:-1]))
            if last:
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
            cache = cache_of(output)
            logits = output.logits[:, -1, :]
            next_pos = next_pos + 1
    return [
        Decoded(tuple(out_ids[i]), tuple(out_lp[i]), tuple(out_h[i]), stopped[i], kept[i]) for i in range(len(prompts))
    ]


def _prefill(model, cache_kw, cache, prompts, start, pad_id, device):
    """The prefill forward of the distinct ``prompts``, some starting from cached keys/values (``start[u]`` is
    ``(CachedPrefix, r_u)`` or None); returns the output, the 2D attention mask and the position ids.

    Row ``u`` lays out as ``[pad | its r_u cached positions | pad | its s_u new tokens]``: the cache holds the
    cached part right-aligned in ``max r`` columns, the input the new tokens right-aligned in ``max s``
    columns, and the mask is 1 on real positions only (position ids count real positions, so they are the
    same as in a plain left-padded prefill, which is the case max r = 0). ``cache`` None: the model's own.
    """
    import torch

    reuse = [0 if s is None else s[1] for s in start]
    width_c = max(reuse)
    suffix_ids, suffix_mask = left_pad([p[r:] for p, r in zip(prompts, reuse, strict=True)], pad_id, device)  # (U, S)
    if width_c:
        layers = next(s for s in start if s is not None)[0].layers
        if len(layers) != len(cache.layers):
            raise ValueError(f"the cached prefixes have {len(layers)} layers, the model {len(cache.layers)}")
        for index, (layer, (k0, v0)) in enumerate(zip(cache.layers, layers, strict=True)):
            keys = k0.new_zeros((len(prompts), k0.shape[0], width_c, k0.shape[2]))
            values = v0.new_zeros((len(prompts), v0.shape[0], width_c, v0.shape[2]))
            for u, (s, r) in enumerate(zip(start, reuse, strict=True)):
                if r:
                    keys[u, :, width_c - r :] = s[0].layers[index][0][:, :r]
                    values[u, :, width_c - r :] = s[0].layers[index][1][:, :r]
            layer.reserve += suffix_ids.shape[1]  # the suffix comes next, then the token budget
            layer.update(keys.to(device), values.to(device))
    head_mask = torch.zeros((len(prompts), width_c), dtype=torch.long)
    for u, r in enumerate(reuse):
        head_mask[u, width_c - r :] = 1
    mask = torch.cat([head_mask.to(device), suffix_mask], dim=1)  # (U, C + S)
    positions = ((mask.cumsum(-1) - 1).clamp(min=0))[:, width_c:]  # (U, S)
    output = model(
        input_ids=suffix_ids,
        attention_mask=mask,
        position_ids=positions,
        use_cache=True,
        logits_to_keep=1,
        **({} if cache is None else {cache_kw: cache}),
    )
    return output, mask, positions


def _tail_has(ids: list[int], stop_text: tuple) -> bool:
    tokenizer, text = stop_text
    return text in tokenizer.decode(ids[-(len(text) + 2) :], skip_special_tokens=True)
