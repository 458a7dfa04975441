"""Rollout sampling through the shared decoder, and teacher-forced scoring for the update.

Sampling is :func:`harness.lm.generation.generate_ids` (the same code the ``hf:``/``tiny`` agents use):
left-padded batch, one prefill forward, a KV cache, one seeded ``torch.Generator`` per row (a response is a
function of its prompt and seed, not of the batch), and per-token log-probs and entropies of the distribution
each token was drawn from. :func:`sample_responses` adapts it to the learner's rollout loop; any other
backend (the vLLM engine) plugs in as a ``sampler(prompts, seeds)`` callable returning :class:`Decoded` rows.
"""

from __future__ import annotations

import contextlib
import itertools

import torch

from harness.lm.generation import Decoded, generate_ids

STOP_TEXT = "</answer>"


def sample_responses(
    model,
    tokenizer,
    prompts: list[list[int]],
    seeds: list[int],
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    prefixes: list | None = None,
) -> list[Decoded]:
    """One continuation per prompt; stops at EOS (kept) or once ``</answer>`` has been written.

    ``prefixes``: per prompt, the :class:`~harness.lm.kv_cache.CachedPrefix` its episode's previous turn
    left (or None); each returned row carries its own (``Decoded.prefix``) for the next turn.
    """
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    return generate_ids(
        model,
        prompts,
        seeds,
        temperature=temperature,
        max_new_tokens=max_new_tokens,
        stop_ids=[tokenizer.eos_token_id],
        pad_id=pad_id,
        stop_text=(tokenizer, STOP_TEXT),
        prefixes=prefixes,
        keep_prefixes=True,
    )


Spans = list[tuple[int, int]]
"""Half-open token ranges ``[start, end)`` of one sequence whose tokens are scored (the responses)."""


def sequence_logprobs(
    model,
    sequences: list[list[int]],
    spans: list[Spans],
    temperature: float = 1.0,
    with_entropy: bool = False,
    groups: list | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Teacher-forced log-probs of the tokens in ``spans[i]`` of ``sequences[i]``, packed per row.

    Returns ``(logp, mask, entropy, hidden)``: (B, L) each, L the most span tokens of a row; column j of row i
    is the j-th token of its spans (spans concatenated in order), ``mask`` marks the columns a row fills; the
    entropy over the vocabulary when asked; the last hidden states (B, L, H) of the positions that predict
    those tokens, for a value head.

    ``groups`` (one key per row, e.g. the GRPO group): rows with the same key share their common prefix (the
    first-turn prompt), which then runs once, its keys/values expanded to the rows (see :func:`_span_states`).
    """
    if isinstance(getattr(model, "module", model), SpanLogprobs):  # a data-parallel engine around the pass
        return model(sequences, spans, temperature, with_entropy, groups)
    device = next(model.parameters()).device
    rows, columns = _span_positions(spans)
    lengths = [sum(end - start for start, end in row_spans) for row_spans in spans]
    hidden = _span_states(model, sequences, spans, lengths, groups, device)  # (N, H)
    targets = torch.tensor([sequences[r][c + 1] for r, c in zip(rows, columns, strict=True)], device=device)
    logp, entropy = _head_logprobs(model, hidden, targets, temperature, with_entropy)
    mask = _pack([torch.ones(n, device=device) for n in lengths])
    return (
        _pack(logp.split(lengths)),
        mask,
        _pack(entropy.split(lengths)) if entropy is not None else None,
        _pack(hidden.split(lengths)),
    )


class SpanLogprobs(torch.nn.Module):
    """:func:`sequence_logprobs` of ``model`` as a module's forward. The pass calls the model's trunk and head
    itself, not ``model.forward``, so a data-parallel engine (DDP, FSDP2) wraps this module to see the pass it
    hooks; ``sequence_logprobs`` of the wrapped module runs it through the engine."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, sequences, spans, temperature=1.0, with_entropy=False, groups=None):
        """``sequence_logprobs(self.model, ...)``."""
        return sequence_logprobs(self.model, sequences, spans, temperature, with_entropy, groups)


def _span_positions(spans: list[Spans]) -> tuple[list[int], list[int]]:
    """(rows, columns), N each in row-major order: the position predicting each span token (t − 1 for t)."""
    rows = [row for row, row_spans in enumerate(spans) for start, end in row_spans for _ in range(end - start)]
    columns = [t - 1 for row_spans in spans for start, end in row_spans for t in range(start, end)]
    return rows, columns


def _shared_prefixes(
    sequences: list[list[int]], spans: list[Spans], groups: list | None
) -> list[tuple[list[int], int]]:
    """Buckets of rows that share a prefix, as ``(rows, P)``: the rows' common first P tokens, P stopping before
    the position that predicts their first span token (so every scored position lies past the prefix); rows that
    share nothing form one bucket with P = 0."""
    buckets: dict = {}
    for row, key in enumerate(groups if groups is not None else range(len(sequences))):
        buckets.setdefault(key, []).append(row)
    shared, alone = [], []
    for members in buckets.values():
        limit = min([len(sequences[r]) - 1 for r in members] + [spans[r][0][0] - 1 for r in members if spans[r]])
        first = sequences[members[0]]
        length = 0
        while length < limit and all(sequences[r][length] == first[length] for r in members[1:]):
            length += 1
        if len(members) > 1 and length > 0:
            shared.append((members, length))
        else:
            alone.extend(members)
    return ([(alone, 0)] if alone else []) + shared


FORWARD_POSITIONS = 32
"""What one more forward (and its backward) costs in the update, counted in positions: on the shipped tiny model on
one CPU thread a forward + backward has ~6 ms of fixed cost against ~0.16 ms a position. :func:`length_runs`
splits a padded batch when that saves more positions than this."""


def length_runs(widths: list[int], overhead: float = FORWARD_POSITIONS) -> list[list[int]]:
    """The indices of ``widths`` (rows' lengths) in runs of similar length, longest first, each run one right-padded
    forward: the split minimising Σ rows × longest + ``overhead`` per run (exact over the length order).

    Why: a GRPO group's rows differ wildly in length when a few episodes play more turns than the rest (a
    450-token row among 77-token ones), and one forward pads every row to the longest.
    """
    order = sorted(range(len(widths)), key=lambda i: -widths[i])  # stable: equal widths keep their order
    best, cut = [0] + [None] * len(order), [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):  # best[end]: the cheapest split of the `end` longest rows
        for start in range(end):
            cost = best[start] + (end - start) * widths[order[start]] + overhead
            if best[end] is None or cost < best[end]:  # ties keep the longer run (fewer forwards)
                best[end], cut[end] = cost, start
    runs, end = [], len(order)
    while end:
        runs.append(order[cut[end] : end])
        end = cut[end]
    return runs[::-1]


def _span_states(model, sequences, spans, lengths, groups, device) -> torch.Tensor:
    """The last hidden states (N, H) at the positions predicting the span tokens, in row-major order
    (``lengths``: each row's number of span tokens).

    A bucket of rows with a shared prefix of P tokens (a GRPO group's first-turn prompt) runs that prefix once,
    batch 1, and its suffixes as right-padded batches that attend to the prefix's keys/values expanded to the
    rows: the same numbers as one padded forward of the whole rows (backward sums the rows' gradients into the
    prefix once), for Σ P·(rows − 1) fewer positions. Rows of very unequal length run in several batches of
    similar length (:func:`length_runs`) rather than all padded to the longest. No padding mask anywhere: the
    rows are right-padded, so under causal attention a real position never sees a pad (pads only see real
    tokens, and their outputs are never read); without one, SDPA takes its causal kernel instead of a dense
    mask over every key. Each run's scored positions are picked with one index, the same one by which the last
    layer's MLP runs at those positions only (:func:`_mlp_only_at`). Gradient checkpointing recomputes layers
    without a cache or the MLP's hooks, and FSDP2 needs each layer once per backward, so under either nothing is
    shared or skipped; under FSDP2 the rows also run as one batch.
    """
    from torch.distributed.fsdp import FSDPModule

    from harness.lm.kv_cache import cache_keyword

    base = model.base_model
    # FSDP2 reduces a layer's gradients at the first backward through it, so a layer must run once per pass
    sharded = any(isinstance(m, FSDPModule) for m in model.modules())
    plain = not sharded and not any(getattr(m, "gradient_checkpointing", False) for m in model.modules())
    if not plain:
        groups = None
    last_mlp = _last_mlp(base) if plain else None
    overhead = float("inf") if sharded else FORWARD_POSITIONS
    blocks, order = [], []  # per run: its rows' scored states (row-major within the run), and those rows
    for members, length in _shared_prefixes(sequences, spans, groups):
        prefix_kv = None
        if length:
            from transformers import DynamicCache

            cache = DynamicCache(config=model.config)
            prefix = torch.tensor([sequences[members[0]][:length]], dtype=torch.long, device=device)
            with _mlp_only_at(last_mlp, torch.zeros(0, dtype=torch.long, device=device)):  # nothing scored there
                base(input_ids=prefix, use_cache=True, **{cache_keyword(base): cache})
            prefix_kv = [(layer.keys, layer.values) for layer in cache.layers]  # (1, heads, P, d) each
        for run in length_runs([len(sequences[r]) - length for r in members], overhead):
            rows = [members[i] for i in run]
            cache_kw = {}
            if prefix_kv is not None:
                cache_kw = {"use_cache": True, cache_keyword(base): _expanded(cache, prefix_kv, len(rows))}
            width = len(sequences[rows[0]]) - length  # the run's longest row comes first
            ids = torch.zeros((len(rows), width), dtype=torch.long)
            for b, r in enumerate(rows):
                ids[b, : len(sequences[r]) - length] = torch.tensor(sequences[r][length:], dtype=torch.long)
            scored = [
                b * width + t - 1 - length
                for b, r in enumerate(rows)
                for start, end in spans[r]
                for t in range(start, end)
            ]
            index = torch.tensor(scored, dtype=torch.long, device=device)  # into the run's (rows × width) positions
            with _mlp_only_at(last_mlp, index):
                states = base(input_ids=ids.to(device), **cache_kw).last_hidden_state  # (rows, W - P, H)
            blocks.append(states.reshape(-1, states.shape[-1]).index_select(0, index))
            order.extend(rows)
    if not blocks:
        return torch.zeros((0, model.config.hidden_size), device=device)
    picked = torch.cat(blocks)  # the rows in run order
    if order == sorted(order):
        return picked
    offsets = dict(zip(order, itertools.accumulate([0] + [lengths[r] for r in order]), strict=False))
    back = [offsets[r] + j for r in range(len(sequences)) for j in range(lengths[r])]
    return picked.index_select(0, torch.tensor(back, dtype=torch.long, device=device))  # row-major


def _last_mlp(base):
    """The last decoder layer's feed-forward block when it is a plain (dense) MLP, else None. Its outputs at
    positions nothing scores feed only those positions' final states (keys and values come before it), so it need
    not run there. A mixture of experts is left whole (routing statistics count every token)."""
    layers = getattr(base, "layers", None)
    mlp = getattr(layers[-1], "mlp", None) if layers is not None and len(layers) else None
    return mlp if mlp is not None and hasattr(mlp, "down_proj") and not hasattr(mlp, "experts") else None


@contextlib.contextmanager
def _mlp_only_at(mlp, index):
    """While inside, ``mlp`` runs on the positions ``index`` (into its input's flattened leading dimensions)
    only; its output is zero elsewhere. Exact at those positions: an MLP acts on each position alone."""
    if mlp is None:
        yield
        return
    shape = []

    def gather(module, args):
        if len(args) != 1 or not isinstance(args[0], torch.Tensor):  # not called as mlp(hidden): run it whole
            shape.append(None)
            return None
        shape.append(args[0].shape)
        return (args[0].reshape(-1, args[0].shape[-1]).index_select(0, index),)

    def scatter(module, args, out):
        if shape[-1] is None:
            return None
        full = out.new_zeros((shape[-1][:-1].numel(), out.shape[-1]))
        return full.index_copy(0, index, out).view(*shape[-1][:-1], out.shape[-1])

    handles = [mlp.register_forward_pre_hook(gather), mlp.register_forward_hook(scatter)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def _expanded(cache, prefix_kv, rows: int):
    """A copy of ``cache`` whose layers hold the prefix's keys/values expanded to ``rows`` rows (views: gradients
    sum into the prefix); a forward appends to the copy (a layer's update concatenates, never writing in place),
    so each run of a bucket starts from the same prefix."""
    import copy

    clone = copy.copy(cache)
    clone.layers = [copy.copy(layer) for layer in cache.layers]
    for layer, (keys, values) in zip(clone.layers, prefix_kv, strict=True):  # (1, heads, P, d) → (rows, heads, P, d)
        layer.keys = keys.expand(rows, -1, -1, -1)
        layer.values = values.expand(rows, -1, -1, -1)
    return clone


def _head_logprobs(model, hidden, targets, temperature: float, with_entropy: bool):
    """The LM head, log-softmax and (optionally) entropy at the (N, H) ``hidden`` states only, as TRL does
    (``logits_to_keep``): over prompt positions they are most of the update's head work and never read."""
    if getattr(model.config, "final_logit_softcapping", None):
        raise ValueError(
            "sequence_logprobs applies the LM head itself; models with logit soft-capping are not supported"
        )
    logits = model.get_output_embeddings()(hidden).float() / temperature  # (N, V)
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, targets[:, None])[:, 0]
    entropy = -(logp_all.exp() * logp_all).sum(-1) if with_entropy else None
    return logp, entropy


def _pack(vectors) -> torch.Tensor:
    """Per-row vectors (or (n, H) matrices) right-padded with zeros into one (B, L[, H]) tensor."""
    return torch.nn.utils.rnn.pad_sequence(list(vectors), batch_first=True)
