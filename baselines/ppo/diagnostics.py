"""Training-time diagnostics on the pre-filter batch: the MI family and the SNR gradient buckets.

MI (DESIGN.md): teacher-force every sampled reasoning z_i (text between ``<think>`` and ``</think>``, tags
excluded, stripped, re-tokenised) under every sampled prompt x_j with the current policy, and hand the
matrix to ``harness.metrics.collapse_metrics``. Two schemes: first-turn pairs (columns = the groups'
distinct first-turn prompts) and trajectory-uniform pairs (episode uniform, then turn uniform; each draw
its own column, token-identical prompts marked equivalent for retrieval).
"""

from __future__ import annotations

import numpy as np
import torch

from baselines.ppo.rollout import Episode, TurnSample
from harness.agents.decoding import score_matrix_ids
from harness.metrics import collapse_metrics

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def reasoning_of(text: str) -> str | None:
    """The reasoning between the think tags, or None when absent or empty (RAGEN drops those)."""
    start = text.find(THINK_OPEN)
    end = text.find(THINK_CLOSE, start + len(THINK_OPEN)) if start >= 0 else -1
    if start < 0 or end < 0:
        return None
    reasoning = text[start + len(THINK_OPEN) : end].strip()
    return reasoning or None


def score_matrix(policy, tokenizer, prompt_ids: list[list[int]], reasonings: list[str], temperature: float):
    """(M, N) mean and summed log p(reasoning_i | prompt_j) under the policy.

    Each distinct prompt and each distinct reasoning is scored once and the matrix is expanded from them
    (a group's samples share their first-turn prompt, and trajectory-uniform draws repeat turns, so this
    cuts the work several-fold); the scoring itself is the shared scorer that reuses each prompt's KV cache
    across every reasoning (:func:`harness.agents.decoding.score_matrix_ids`).
    """
    prompt_keys = [tuple(p) for p in prompt_ids]
    column_of = {key: j for j, key in enumerate(dict.fromkeys(prompt_keys))}  # distinct prompt -> its column
    row_of = {text: i for i, text in enumerate(dict.fromkeys(reasonings))}  # distinct reasoning -> its row
    text_ids = [tokenizer(r, add_special_tokens=False)["input_ids"] for r in row_of]
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    sums, counts = score_matrix_ids(
        policy, [list(k) for k in column_of], text_ids, temperature=temperature, pad_id=pad_id
    )
    rows = np.array([row_of[r] for r in reasonings])
    columns = np.array([column_of[k] for k in prompt_keys])
    total = sums[np.ix_(rows, columns)]
    return total / np.maximum(counts[np.ix_(rows, columns)], 1), total


def _pairs_first_turn(episodes: list[Episode], rng: np.random.Generator, count: int):
    turns = [e.turns[0] for e in episodes if e.turns and reasoning_of(e.turns[0].response_text)]
    if not turns:
        return [], [], [], None
    pick = rng.choice(len(turns), size=min(count, len(turns)), replace=False)
    chosen = [turns[i] for i in sorted(pick)]
    groups = sorted({t.group for t in chosen})
    column_of = {g: j for j, g in enumerate(groups)}
    prompts = [next(t.prompt_ids for t in chosen if t.group == g) for g in groups]
    return prompts, [reasoning_of(t.response_text) for t in chosen], [column_of[t.group] for t in chosen], None


def _pairs_trajectory(episodes: list[Episode], rng: np.random.Generator, count: int):
    chosen: list[TurnSample] = []
    candidates = [e for e in episodes if any(reasoning_of(t.response_text) for t in e.turns)]
    for _ in range(count if candidates else 0):
        episode = candidates[int(rng.integers(len(candidates)))]
        turn = episode.turns[int(rng.integers(len(episode.turns)))]
        if reasoning_of(turn.response_text):
            chosen.append(turn)
    prompts = [t.prompt_ids for t in chosen]
    keys = [tuple(p) for p in prompts]
    equivalent = np.array([[a == b for b in keys] for a in keys], dtype=bool) if keys else None
    return prompts, [reasoning_of(t.response_text) for t in chosen], list(range(len(chosen))), equivalent


def mi_family(policy, tokenizer, episodes: list[Episode], config, rng: np.random.Generator) -> dict[str, float]:
    """Both MI sampling schemes; keys ``collapse_first_turn/<metric>`` and ``collapse_trajectory/<metric>``."""
    out: dict[str, float] = {}
    for scheme, draw in (("first_turn", _pairs_first_turn), ("trajectory", _pairs_trajectory)):
        prompts, reasonings, own, equivalent = draw(episodes, rng, config.mi_samples)
        out[f"collapse_{scheme}/num_pairs"] = float(len(reasonings))
        if len(reasonings) < 2 or len(prompts) < 1:
            continue
        mean, total = score_matrix(policy, tokenizer, prompts, reasonings, config.temperature)
        for name, estimate in collapse_metrics(mean, np.array(own), total, equivalent).items():
            out[f"collapse_{scheme}/{name}"] = float(estimate.value)
    return out


def grad_norm_buckets(rows_by_group: dict[int, list], group_std: dict[int, float], policy, config, loss_parts) -> dict:
    """Split groups into reward-variance quantile buckets; per bucket, the gradient norm of the task term,
    the entropy term and the KL term, each from its own backward pass (no optimiser step)."""
    ordered = sorted(rows_by_group, key=lambda g: (group_std[g], g))
    buckets = [b for b in np.array_split(np.array(ordered), config.grad_buckets) if len(b)]
    params = [p for p in policy.parameters() if p.requires_grad]
    out: dict[str, float] = {}
    for index, bucket in enumerate(buckets):
        rows = [row for g in bucket for row in rows_by_group[int(g)]]
        out[f"grad_norm/bucket{index}/reward_std"] = float(np.mean([group_std[int(g)] for g in bucket]))
        task, entropy, kl = loss_parts(rows)
        for name, term in (("task", task), ("entropy", entropy), ("kl", kl)):
            if not term.requires_grad:
                continue
            grads = torch.autograd.grad(term, params, retain_graph=True, allow_unused=True)
            out[f"grad_norm/bucket{index}/{name}"] = float(
                torch.sqrt(sum((g.float() ** 2).sum() for g in grads if g is not None))
            )
    return out
