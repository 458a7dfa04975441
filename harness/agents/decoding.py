"""Batched decoding and teacher-forced scoring for transformers causal LMs (torch; imported lazily).

Used by the ``hf:``/``tiny`` agents and by ``baselines.tiny.serve``. Three functions, all on token ids:

:func:`generate_ids`
    Left-padded batch, one prefill forward (identical prompts run once and share their keys/values), then one
    forward per new token over the KV cache. Every row samples with its *own* seeded ``torch.Generator``
    (Gumbel-max on ``logits / temperature``), so a row's tokens are a function of its prompt and seed only, not
    of which other rows share its batch; a row stops at any of ``stop_ids`` (kept in its output) or after
    ``max_new_tokens``; finished rows leave the batch so the cache shrinks as they finish. Each token comes
    with its log-prob and the entropy of the distribution it was drawn from (temperature applied;
    ``temperature == 0`` is greedy and reports the temperature-1 distribution).
:func:`score_ids`
    Summed log-prob of each continuation after its prompt, one right-padded forward per chunk, under the
    same distribution (``logits / temperature``).
:func:`score_matrix_ids`
    Every continuation under every prompt, reusing each prompt's KV cache across all continuations: each
    prompt runs once (prompts batched, left-padded), then many (prompt, continuation) pairs per forward, each
    row on its prompt's cached keys/values. This is what makes the MI family cheap.

Shapes are noted as ``(B, T)`` (batch, time) and ``(B, T, V)`` (…, vocabulary).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class CachedPrefix:
    """Token ids and the keys/values of all of them, per layer ``(heads, len(ids), head_dim)``: what a row of
    :func:`generate_ids` leaves for a later prompt that extends it (the next turn of its episode)."""

    ids: tuple[int, ...]
    layers: tuple[tuple[object, object], ...]

    def reusable(self, prompt: Sequence[int]) -> int:
        """How many leading tokens of ``prompt`` these keys/values cover (its common prefix with ``ids``),
        leaving at least the prompt's last token to run (its logits start the sampling)."""
        limit = min(len(self.ids), len(prompt) - 1)
        n = 0
        while n < limit and self.ids[n] == prompt[n]:
            n += 1
        return n


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
    cache_kw = _cache_keyword(model)
    fresh = _growing_cache(model, max_new_tokens)
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
        cache = _cache_of(output)
        logits = output.logits[:, -1, :]  # (U, V)
        next_pos = positions[:, -1] + 1  # (U,)
        keep_kv = keep_prefixes and _plain_layers(cache) is not None
        if len(distinct) < len(prompts):
            rows = torch.tensor(copy_of, dtype=torch.long, device=device)
            cache.batch_select_indices(rows)
            logits, mask, next_pos = logits[rows], mask[rows], next_pos[rows]  # (B, ...)
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
            last = not keep or len(out_ids[live[keep[0]]]) >= max_new_tokens
            if keep_kv:  # rows leaving the batch: their fed tokens' keys/values, before the cache drops them
                for b in range(len(live)) if last else sorted(set(range(len(live))) - set(keep)):
                    row = live[b]
                    kept[row] = _row_prefix(cache, b, mask[b], tuple(prompts[row]) + tuple(out_ids[row][:-1]))
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
            cache = _cache_of(output)
            logits = output.logits[:, -1, :]
            next_pos = next_pos + 1
    return [
        Decoded(tuple(out_ids[i]), tuple(out_lp[i]), tuple(out_h[i]), stopped[i], kept[i]) for i in range(len(prompts))
    ]


@functools.cache
def _growing_layer_class():
    """``DynamicLayer`` that appends in place. The stock layer concatenates, copying the whole cache at every
    new token (quadratic in a long multi-turn history); this one writes into a buffer with spare room and
    exposes a view. When full it reallocates with room for as many positions again as it holds (at least 64),
    but never more than ``reserve`` (the most positions still to come: the token budget), so a huge budget with
    rows that stop early costs no memory and the copies stay amortised O(1) per token. Batch selection (rows
    leaving) and ``crop`` make the keys a compact copy or a shorter view; the next append moves them into a new
    buffer, so a view handed out earlier is never written over."""
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        def __init__(self, reserve: int) -> None:
            super().__init__()
            self.reserve = reserve
            self._buffers = None

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            length, new = self.get_seq_length(), key_states.shape[-2]
            buffers = self._buffers
            if (
                buffers is None
                or self.keys.data_ptr() != buffers[0].data_ptr()  # replaced (batch selection): not our view
                or buffers[0].shape[0] != key_states.shape[0]
                or length + new > buffers[0].shape[-2]
            ):
                capacity = length + new + min(self.reserve, max(length + new, 64))
                buffers = tuple(s.new_empty((*s.shape[:-2], capacity, s.shape[-1])) for s in (key_states, value_states))
                if length:
                    buffers[0][..., :length, :] = self.keys
                    buffers[1][..., :length, :] = self.values
                self._buffers = buffers
            buffers[0][..., length : length + new, :] = key_states
            buffers[1][..., length : length + new, :] = value_states
            self.keys, self.values = buffers[0][..., : length + new, :], buffers[1][..., : length + new, :]
            return self.keys, self.values

        def crop(self, *args, **kwargs):
            super().crop(*args, **kwargs)
            self._buffers = None  # the shorter keys are a view of the buffer: appending in place would overwrite

    return GrowingLayer


def _growing_cache(model, reserve: int):
    """A ``DynamicCache`` of :func:`_growing_layer_class` layers, or None when the model's cache is not all plain
    ``DynamicLayer`` (sliding windows, other cache classes, transformers < 4.56): then the model builds its own."""
    try:
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer
    except ImportError:
        return None
    config = getattr(model, "config", None)
    try:
        cache = DynamicCache(config=config)
    except Exception:  # a config this transformers cannot map to layer types: let the model decide
        return None
    plain = getattr(cache, "layers", None)
    if not plain or any(type(layer) is not DynamicLayer for layer in plain):
        return None
    cache.layers = [_growing_layer_class()(reserve) for _ in plain]
    return cache


def _plain_layers(cache) -> list | None:
    """The cache's layers when every one is a plain (full-attention, growing) ``DynamicLayer``, else None."""
    layers = getattr(cache, "layers", None)
    if not layers:
        return None
    from transformers.cache_utils import DynamicLayer

    growing = _growing_layer_class()
    return list(layers) if all(type(layer) in (DynamicLayer, growing) for layer in layers) else None


def _row_prefix(cache, b: int, row_mask, ids: tuple[int, ...]) -> CachedPrefix:
    """Batch row ``b``'s keys/values at its real (unpadded) positions, copied out of the batch tensors."""
    real = row_mask.bool()
    layers = tuple((layer.keys[b][:, real], layer.values[b][:, real]) for layer in cache.layers)
    if layers[0][0].shape[1] != len(ids):
        raise RuntimeError(f"cache row {b} holds {layers[0][0].shape[1]} positions for {len(ids)} fed tokens")
    return CachedPrefix(ids, layers)


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
    suffix_ids, suffix_mask = _left_pad([p[r:] for p, r in zip(prompts, reuse)], pad_id, device)  # (U, S)
    if width_c:
        layers = next(s for s in start if s is not None)[0].layers
        if len(layers) != len(cache.layers):
            raise ValueError(f"the cached prefixes have {len(layers)} layers, the model {len(cache.layers)}")
        for index, (layer, (k0, v0)) in enumerate(zip(cache.layers, layers)):
            keys = k0.new_zeros((len(prompts), k0.shape[0], width_c, k0.shape[2]))
            values = v0.new_zeros((len(prompts), v0.shape[0], width_c, v0.shape[2]))
            for u, (s, r) in enumerate(zip(start, reuse)):
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


@dataclass
class _PrefixTree:
    """Texts sharing prefixes, as one row: each distinct prefix is one node (a token at a depth), so a prefix
    common to several texts is run once. Nodes are in creation order, parents before children."""

    tokens: list[int]
    parents: list[int]  # -1 for a root (a text's first token)
    depths: list[int]
    members: list[int]  # text indices
    paths: list[list[int]]  # per member, its nodes in order


def _prefix_trees(continuations: Sequence[Sequence[int]], texts: Sequence[int], node_budget: int) -> list[_PrefixTree]:
    """The (non-empty) ``texts`` in lexicographic token order, cut into prefix trees of at most ``node_budget``
    nodes (a longer text gets a tree of its own). In sorted order a text's longest common prefix with any
    earlier text is the one with the text just before it, so each text adds ``len - lcp`` nodes."""
    trees: list[_PrefixTree] = []
    previous: Sequence[int] = ()
    for i in sorted(texts, key=lambda i: (list(continuations[i]), i)):
        text = continuations[i]
        tree = trees[-1] if trees else None
        lcp = 0
        if tree is not None:
            limit = min(len(text), len(previous))
            while lcp < limit and text[lcp] == previous[lcp]:
                lcp += 1
            if len(tree.tokens) + len(text) - lcp > node_budget:
                tree, lcp = None, 0
        if tree is None:
            tree = _PrefixTree([], [], [], [], [])
            trees.append(tree)
        path = tree.paths[-1][:lcp] if lcp else []
        for depth in range(lcp, len(text)):
            tree.tokens.append(int(text[depth]))
            tree.parents.append(path[-1] if path else -1)
            tree.depths.append(depth)
            path.append(len(tree.tokens) - 1)
        tree.members.append(i)
        tree.paths.append(path)
        previous = text
    return trees


def score_matrix_ids(
    model,
    prompts: Sequence[Sequence[int]],
    continuations: Sequence[Sequence[int]],
    *,
    temperature: float = 1.0,
    pad_id: int = 0,
    batch_size: int = 32,
    token_budget: int = 512,
    cache_budget: int = 1 << 16,
    tree_budget: int = 256,
    tree_masks: bool | None = None,
    wanted=None,
):
    """``(sums, counts)`` of shape ``(len(continuations), len(prompts))``; each prompt runs once, its KV cache
    serves every continuation, and a prefix that several continuations share runs once per prompt.

    ``wanted`` (optional ``(len(continuations), len(prompts))`` bool, column subsampling): only those pairs are
    scored; each prompt gets prefix trees of its own wanted texts (prompts wanting the same texts share them), a
    prompt that wants none does not run, and the other sums are NaN.

    The prompts run left-padded in batches of similar length (up to ``batch_size`` rows; ``logits_to_keep=1``:
    only the last position's distribution is needed, for each text's first token). The continuations, in
    lexicographic token order, are merged into prefix trees of at most ``tree_budget`` nodes (a node per
    distinct prefix: reasonings that open alike, as a collapsed policy's do, share their opening); a tree is
    one row, its nodes at positions continuing the prompt's by their depth, each attending to the prompt and to
    its own ancestors (a 4D attention mask). (prompt, tree) rows, ordered by tree size, run in forwards of as
    many rows as fit ``token_budget`` node positions (rows x width; 512 with trees of <= 256 nodes measured
    fastest for the tiny model on CPU, against 64-512 nodes and 512-2048 positions) and ``cache_budget``
    cached + new positions; each row gets its prompt's cached keys/values (a gather along the batch, no copy
    of the rest). A text's log-prob is its first token's under the prompt plus, along its path, each node's
    distribution at its child's token; so only nodes with a child run (a text's last token is a target, never
    an input: ~3-6% fewer positions on the MI workloads), and per tree the row layout and the scored (node,
    token, text) steps are built once, not per prompt. The result equals teacher forcing every pair with a full forward
    (:func:`score_ids`) up to float rounding.

    ``tree_masks`` (default: whether the model's attention takes a custom 4D mask, as ``eager`` and ``sdpa``
    do; flash-attention kernels do not): when false, every text is a tree of its own, a plain causal chain
    under the usual 2D padding mask.
    """
    import numpy as np
    import torch

    device = next(model.parameters()).device
    sums = np.zeros((len(continuations), len(prompts)), dtype=np.float64)
    counts = np.array([[len(c)] * len(prompts) for c in continuations], dtype=np.int64).reshape(
        len(continuations), len(prompts)
    )
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt must have at least one token")
    if wanted is not None:  # checked and applied first: the early returns below hold for it too
        wanted = np.asarray(wanted, dtype=bool)
        if wanted.shape != sums.shape:
            raise ValueError(f"wanted must have shape {sums.shape} (continuations x prompts), got {wanted.shape}")
        sums[~wanted] = np.nan
    texts = [i for i, c in enumerate(continuations) if c]
    if not texts or not prompts:
        return sums, counts
    cache_kw = _cache_keyword(model)
    vocab = int(getattr(getattr(model, "config", None), "vocab_size", 0) or 0)
    max_positions = max(1, (1 << 25) // vocab) if vocab else 1 << 30  # rows x width of float32 logits <= 128 MiB
    if tree_masks is None:
        tree_masks = getattr(getattr(model, "config", None), "_attn_implementation", None) in (None, "eager", "sdpa")
    if not tree_masks:
        tree_budget = 0  # one chain per text

    def plans_of_texts(members: Sequence[int]) -> list[_TreePlan]:  # similar widths batch together
        return sorted((_plan(tree) for tree in _prefix_trees(continuations, members, tree_budget)),
                      key=lambda p: len(p.tokens))  # fmt: skip

    if wanted is None:
        shared = plans_of_texts(texts)
        plans_of = dict.fromkeys(range(len(prompts)), shared)
    else:
        by_members: dict[tuple[int, ...], list[_TreePlan]] = {}
        plans_of = {}
        for j in range(len(prompts)):
            members = tuple(i for i in texts if wanted[i, j])
            if members:
                if members not in by_members:
                    by_members[members] = plans_of_texts(members)
                plans_of[j] = by_members[members]
        if not plans_of:
            return sums, counts
    widest = max(len(plans[-1].tokens) for plans in plans_of.values())
    columns = sorted(plans_of, key=lambda j: (len(prompts[j]), j))
    groups: list[list[int]] = []
    for j in columns:  # prompts of similar length together; each group's rows must also fit the text pass
        group = groups[-1] if groups else None
        width = len(prompts[j])  # the longest so far (sorted)
        if (
            group is not None
            and len(group) < batch_size
            and width <= 1.125 * len(prompts[group[0]]) + 8  # little left padding (it is attended by every text row)
            and (len(group) + 1) * (width + widest) <= cache_budget
        ):
            group.append(j)
        else:
            groups.append([j])
    with torch.inference_mode():
        for group in groups:
            ids, head_mask = _left_pad([prompts[j] for j in group], pad_id, device)  # (G, P)
            positions = (head_mask.cumsum(-1) - 1).clamp(min=0)
            head = model(
                input_ids=ids, attention_mask=head_mask, position_ids=positions, use_cache=True, logits_to_keep=1
            )
            last_lp = _scaled_logprobs(head.logits[:, -1, :], temperature)  # (G, V): each text's first token
            head_cache = _cache_of(head)
            width_p = ids.shape[1]
            lengths = head_mask.sum(-1)  # (G,) real prompt lengths
            if wanted is None:  # every prompt has the shared plans, sorted by size: similar tree sizes together
                pairs = [(g, plan) for plan in shared for g in range(len(group))]
            else:
                pairs = sorted(((g, plan) for g, j in enumerate(group) for plan in plans_of[j]),
                               key=lambda row: len(row[1].tokens))  # fmt: skip
            start = 0
            while start < len(pairs):
                stop = start + 1
                while stop < len(pairs):
                    rows_next, nodes = stop + 1 - start, max(1, len(pairs[stop][1].tokens))
                    if (
                        rows_next * nodes > min(token_budget, max_positions)
                        or rows_next * (width_p + nodes) > cache_budget
                    ):
                        break
                    stop += 1
                rows = pairs[start:stop]
                start = stop
                for (g, plan), total in zip(
                    rows,
                    _score_tree_rows(
                        model, cache_kw, rows, head_cache, head_mask, lengths, last_lp, temperature, pad_id, device,
                        tree_masks,
                    ),
                ):  # fmt: skip
                    for i, value in zip(plan.members, total):
                        sums[i, group[g]] = value
    return sums, counts


@dataclass
class _TreePlan:
    """A tree as its rows run it, built once per tree (not per prompt). Only nodes with a child run: a node's
    output is its distribution of its children's tokens, so a leaf (a text's last token) would predict nothing,
    and no node attends to it; its token is only a scored target."""

    members: list[int]  # text indices (the tree's)
    tokens: object  # (N,) long: the running nodes' tokens, in tree order (parents first)
    depths: object  # (N,) long
    sees: object  # (N, N) bool: [a, b] when running node b is a or one of a's ancestors
    firsts: object  # (M,) long: each member's first token (scored under the prompt's last position)
    step_node: object  # (S,) long: per scored parent -> child step of any member, the parent's running index
    step_token: object  # (S,) long: ... the child's token
    step_member: object  # (S,) long: ... the member (index into tree.members)


def _plan(tree: _PrefixTree) -> _TreePlan:
    import torch

    has_child = [False] * len(tree.tokens)
    for parent in tree.parents:
        if parent >= 0:
            has_child[parent] = True
    running = [n for n, c in enumerate(has_child) if c]  # parents before children, so ancestors come first
    slot = {n: k for k, n in enumerate(running)}
    sees = torch.zeros((len(running), len(running)), dtype=torch.bool)
    for k, n in enumerate(running):
        parent = tree.parents[n]
        if parent >= 0:  # a running node's parent runs too (it has a child)
            sees[k] = sees[slot[parent]]
        sees[k, k] = True
    step_node, step_token, step_member = [], [], []
    for m, path in enumerate(tree.paths):
        for parent, child in zip(path, path[1:]):
            step_node.append(slot[parent])
            step_token.append(tree.tokens[child])
            step_member.append(m)
    return _TreePlan(
        members=tree.members,
        tokens=torch.tensor([tree.tokens[n] for n in running], dtype=torch.long),
        depths=torch.tensor([tree.depths[n] for n in running], dtype=torch.long),
        sees=sees,
        firsts=torch.tensor([tree.tokens[path[0]] for path in tree.paths], dtype=torch.long),
        step_node=torch.tensor(step_node, dtype=torch.long),
        step_token=torch.tensor(step_token, dtype=torch.long),
        step_member=torch.tensor(step_member, dtype=torch.long),
    )


def _score_tree_rows(
    model, cache_kw, rows, head_cache, head_mask, lengths, last_lp, temperature, pad_id, device, tree_masks
):
    """Per (prompt row ``g``, tree plan) of ``rows``: the summed log-prob of each of the tree's members."""
    import torch

    chosen = [plan for _, plan in rows]
    sizes = [len(p.tokens) for p in chosen]
    members = torch.tensor([len(p.firsts) for p in chosen], dtype=torch.long)
    index = torch.tensor([g for g, _ in rows], dtype=torch.long)
    # every member's total starts at its first token under its prompt (the prompt pass's last position)
    totals = last_lp[
        index.to(device).repeat_interleave(members.to(device)), torch.cat([p.firsts for p in chosen]).to(device)
    ]
    totals = totals.double()
    width = max(sizes)
    if width == 0:  # one-token texts only: nothing to run
        return _split(totals.cpu().tolist(), members.tolist())
    node_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    depths = torch.zeros((len(rows), width), dtype=torch.long)
    sees = torch.eye(width, dtype=torch.bool).repeat(len(rows), 1, 1)  # padding nodes see themselves only
    for b, (plan, n) in enumerate(zip(chosen, sizes)):
        node_ids[b, :n] = plan.tokens
        depths[b, :n] = plan.depths
        sees[b, :n, :n] = plan.sees
    index, node_ids, depths, sees = index.to(device), node_ids.to(device), depths.to(device), sees.to(device)
    if tree_masks:
        dtype = next(model.parameters()).dtype
        allowed = torch.cat([head_mask[index].bool()[:, None, :].expand(-1, width, -1), sees], dim=-1)  # (R, W, P+W)
        mask = torch.zeros(allowed.shape, dtype=dtype, device=device).masked_fill(~allowed, torch.finfo(dtype).min)
        mask = mask[:, None]  # (R, 1, W, P+W): a custom 4D mask is used as given
    else:  # every tree is one text, a chain: the model's own causal mask over [prompt | text] padding
        text_mask = (torch.arange(width)[None, :] < torch.tensor(sizes)[:, None]).to(head_mask.dtype).to(device)
        mask = torch.cat([head_mask[index], text_mask], dim=1)
    cache = _select_cache(head_cache, index)
    logits = model(
        input_ids=node_ids,
        attention_mask=mask,
        position_ids=lengths[index][:, None] + depths,
        use_cache=True,
        **{cache_kw: cache},
    ).logits  # (R, W, V)
    logp = _scaled_logprobs(logits, temperature)  # running node n's distribution of its children's tokens
    # then each parent -> child step along every member's path, added to that member's total
    steps = torch.tensor([len(p.step_node) for p in chosen], dtype=torch.long)
    step_row = torch.arange(len(rows)).repeat_interleave(steps)
    first_member = members.cumsum(0) - members  # each row's first slot in totals
    step_slot = torch.cat([p.step_member for p in chosen]) + first_member.repeat_interleave(steps)
    values = logp[
        step_row.to(device), torch.cat([p.step_node for p in chosen]).to(device),
        torch.cat([p.step_token for p in chosen]).to(device),
    ].double()  # fmt: skip
    totals = totals.index_add(0, step_slot.to(device), values)
    return _split(totals.cpu().tolist(), members.tolist())


def _split(values: list, sizes: list[int]) -> list[list]:
    out, at = [], 0
    for size in sizes:
        out.append(values[at : at + size])
        at += size
    return out


def _select_cache(cache, index):
    """A cache holding rows ``index`` (repeats allowed) of ``cache``, which stays reusable."""
    import copy

    layers = getattr(cache, "layers", None)
    if layers is not None:  # transformers >= 4.56: rows are gathered, the other rows' tensors are not copied
        clone = copy.copy(cache)
        clone.layers = [copy.copy(layer) for layer in layers]
    else:
        clone = copy.deepcopy(cache)
    clone.batch_select_indices(index)
    return clone
