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
    """Teacher-forced log-probs of the tokens in ``spans[i]`` of ``sequences[i]`` (right-padded batch).

    Returns ``(logp, mask, entropy, hidden)``, each (B, W-1) aligned to predicted positions (column t
    predicts token t+1; ``mask`` marks the span tokens), the entropy over the vocabulary when asked, and the
    last hidden states (B, W-1, H) for a value head.
    """
    device = next(model.parameters()).device
    width = max(len(s) for s in sequences)
    ids = torch.zeros((len(sequences), width), dtype=torch.long)
    mask = torch.zeros((len(sequences), width - 1))
    for row, (seq, row_spans) in enumerate(zip(sequences, spans, strict=True)):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        for start, end in row_spans:
            mask[row, start - 1 : end - 1] = 1
    ids, mask = ids.to(device), mask.to(device)
    # no padding mask: the rows are right-padded, so under causal attention a real position never sees a pad
    # (pads only see real tokens, and their outputs are masked out); without one, SDPA takes its causal kernel
    # instead of a dense (B, W, W) mask over every key, the same numbers at about half the attention work
    out = model(input_ids=ids, output_hidden_states=True)
    logits = out.logits[:, :-1, :].float() / temperature  # (B, W-1, V)
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1) if with_entropy else None
    hidden = out.hidden_states[-1][:, :-1, :]
    return logp, mask, entropy, hidden
