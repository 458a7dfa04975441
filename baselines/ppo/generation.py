"""Rollout sampling through the shared decoder, and teacher-forced scoring for the update.

Sampling is :func:`harness.lm.generation.generate_ids` (the same code the ``hf:``/``tiny`` agents use):
left-padded batch, one prefill forward, a KV cache, one seeded ``torch.Generator`` per row (a response is a
function of its prompt and seed, not of the batch), and per-token log-probs and entropies of the distribution
each token was drawn from. :func:`sample_responses` adapts it to the learner's rollout loop; any other
backend (the vLLM engine) plugs in as a ``sampler(prompts, seeds)`` callable returning :class:`Decoded` rows.
"""

from __future__ import annotations

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
    model, sequences: list[list[int]], spans: list[Spans], temperature: float = 1.0, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """Teacher-forced log-probs of the tokens in ``spans[i]`` of ``sequences[i]``, packed per row.

    Returns ``(logp, mask, entropy, hidden)``: (B, L) each, L the most span tokens of a row; column j of row i
    is the j-th token of its spans (spans concatenated in order), ``mask`` marks the columns a row fills; the
    entropy over the vocabulary when asked; the last hidden states (B, L, H) of the positions that predict
    those tokens, for a value head.
    """
    device = next(model.parameters()).device
    width = max(len(s) for s in sequences)
    ids = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    ids = ids.to(device)
    # no padding mask: the rows are right-padded, so under causal attention a real position never sees a pad
    # (pads only see real tokens, and their outputs are never read); without one, SDPA takes its causal kernel
    # instead of a dense (B, W, W) mask over every key, the same numbers at about half the attention work
    states = model.base_model(input_ids=ids).last_hidden_state  # (B, W, H)
    rows, columns = (torch.tensor(x, dtype=torch.long, device=device) for x in _span_positions(spans))
    hidden = states[rows, columns]  # (N, H): only the positions that predict a span token
    logp, entropy = _head_logprobs(model, hidden, ids[rows, columns + 1], temperature, with_entropy)
    lengths = [sum(end - start for start, end in row_spans) for row_spans in spans]
    mask = _pack([torch.ones(n, device=device) for n in lengths])
    return (
        _pack(logp.split(lengths)),
        mask,
        _pack(entropy.split(lengths)) if entropy is not None else None,
        _pack(hidden.split(lengths)),
    )


def _span_positions(spans: list[Spans]) -> tuple[list[int], list[int]]:
    """(rows, columns), N each in row-major order: the position predicting each span token (t − 1 for t)."""
    rows = [row for row, row_spans in enumerate(spans) for start, end in row_spans for _ in range(end - start)]
    columns = [t - 1 for row_spans in spans for start, end in row_spans for t in range(start, end)]
    return rows, columns


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
