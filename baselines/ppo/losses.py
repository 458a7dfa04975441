"""Advantage estimators and PPO losses as pure torch functions (shapes in comments: B batch, T tokens).

Token-level conventions follow RAGEN/veRL: the episode reward sits on the last response token, only response
tokens (``mask == 1``) carry loss, and observation tokens of later turns are skipped by the GAE recursion
(``mask == 0`` positions pass the running advantage through unchanged). GAE advantages are then whitened over
the batch's response tokens (:func:`masked_whiten`, verl's formula), and every loss term (policy, entropy, KL)
is reduced by the same :func:`aggregate` mode, as verl's actor does.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from baselines.ppo.config import KL_TYPES, LOSS_AGGREGATIONS


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over positions where ``mask`` is 1 (0 when the mask is empty)."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp_min(1.0)


def masked_whiten(
    values: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True, reduce: Callable[[float], float] | None = None
) -> torch.Tensor:
    """verl's ``masked_whiten``: (x − mean)·rsqrt(var + 1e-8) with the mean and the *unbiased* variance taken
    over the positions where ``mask`` is 1; ``shift_mean=False`` adds the mean back (rescale only).

    Why (PPO): without it the task term shrinks with the batch's reward spread while the entropy and KL terms do
    not, which changes exactly the task-to-regulariser ratio that template collapse is about. ``reduce`` sums a
    float over the ranks of a distributed run, so the statistics are the whole batch's (N ranks whiten exactly
    as one process would). The result is defined at every position (callers keep multiplying by the mask);
    fewer than two masked positions have no variance and raise, as verl's ``masked_var`` does.
    """
    reduce = reduce or (lambda x: x)
    mask = mask.to(values.dtype)
    count = reduce(float(mask.sum()))
    if count < 2:
        raise ValueError(f"masked_whiten needs at least 2 masked positions, got {int(count)}")
    mean = reduce(float((values * mask).sum())) / count
    variance = reduce(float((((values - mean) ** 2) * mask).sum())) / count * (count / (count - 1))
    whitened = (values - mean) * torch.rsqrt(torch.tensor(variance + 1e-8, dtype=values.dtype))
    return whitened + mean if not shift_mean else whitened


def aggregate(
    per_token: torch.Tensor, mask: torch.Tensor, mode: str = "token-mean", normalizer: float | None = None
) -> torch.Tensor:
    """Reduce a (B, T) per-token loss to a scalar as verl's ``agg_loss`` does.

    ``token-mean``: Σ loss / Σ tokens; ``seq-mean-token-mean``: the mean over sequences of each sequence's token
    mean; ``seq-mean-token-sum``: the mean over sequences of each sequence's token sum. ``normalizer`` replaces
    the denominator (the minibatch's token count, or its sequence count) so that micro-batches of one minibatch,
    or shards of one batch on several ranks, sum to exactly the loss of the whole (1×8 ≡ 8×1).
    """
    mask = mask.to(per_token.dtype)
    if mode == "token-mean":
        total = (per_token * mask).sum()
        return total / (mask.sum().clamp_min(1.0) if normalizer is None else normalizer)
    if mode == "seq-mean-token-mean":
        total = ((per_token * mask).sum(dim=-1) / mask.sum(dim=-1).clamp_min(1.0)).sum()
    elif mode == "seq-mean-token-sum":
        total = (per_token * mask).sum()
    else:
        raise ValueError(f"aggregation must be one of {LOSS_AGGREGATIONS}, got {mode!r}")
    return total / (per_token.shape[0] if normalizer is None else normalizer)


def gae_advantages(
    rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float = 1.0, lam: float = 1.0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over response tokens; returns (advantages, returns), both (B, T).

    ``rewards``, ``values``, ``mask`` are (B, T). The value after the last response token is 0 (the episode
    ends there). Masked positions get advantage 0 and are skipped: the next response token's value and
    advantage carry over them, so a multi-turn trajectory is one chain of response tokens.
    """
    B, T = rewards.shape
    mask = mask.to(rewards.dtype)
    advantages = torch.zeros_like(rewards)
    next_value = torch.zeros(B, dtype=rewards.dtype, device=rewards.device)
    running = torch.zeros(B, dtype=rewards.dtype, device=rewards.device)
    for t in reversed(range(T)):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        new_running = delta + gamma * lam * running
        running = m * new_running + (1 - m) * running
        next_value = m * values[:, t] + (1 - m) * next_value
        advantages[:, t] = m * running
    returns = (advantages + values) * mask
    return advantages, returns


def group_advantages(returns: torch.Tensor, *, normalize_std: bool = True, eps: float = 1e-6) -> torch.Tensor:
    """GRPO (``normalize_std=True``) or Dr.GRPO (``False``) advantages of a (groups, samples) return matrix."""
    centred = returns - returns.mean(dim=1, keepdim=True)
    if not normalize_std:
        return centred
    return centred / (returns.std(dim=1, keepdim=True, unbiased=True) + eps)


def ppo_policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    aggregation: str = "token-mean",
    normalizer: float | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Clipped surrogate (asymmetric clip, as RAGEN-2's 0.2/0.28); returns (pg_loss, stats) with (B, T) inputs.

    ``aggregation`` and ``normalizer``: see :func:`aggregate`.
    """
    ratio = torch.exp(logp - old_logp)  # (B, T)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    per_token = torch.maximum(unclipped, clipped)
    pg_loss = aggregate(per_token, mask, aggregation, normalizer)
    with torch.no_grad():
        log_ratio = logp - old_logp
        stats = {
            "approx_kl": masked_mean((ratio - 1) - log_ratio, mask),  # k3 estimator, ≥ 0
            "clipfrac": masked_mean((clipped > unclipped).to(logp.dtype), mask),
        }
    return pg_loss, stats


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip: float = 0.5,
    normalizer: float | None = None,
) -> torch.Tensor:
    """Clipped value loss, 0.5·max((v−R)², (clip(v)−R)²), averaged over response tokens (or summed and divided
    by ``normalizer``, as in :func:`ppo_policy_loss`)."""
    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    loss = torch.maximum((values - returns) ** 2, (clipped - returns) ** 2)
    if normalizer is not None:
        return 0.5 * (loss * mask.to(loss.dtype)).sum() / normalizer
    return 0.5 * masked_mean(loss, mask)


def token_entropy(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the policy over the vocabulary at every position: (B, T, V) logits → (B, T)."""
    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(dim=-1)


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, kind: str = "kl") -> torch.Tensor:
    """Per-token estimate of KL(π‖π_ref) from sampled-token log-probs, (B, T), as verl's ``kl_penalty``.

    ``kl`` (k1, RAGEN's default ``kl_loss_type``): log π − log π_ref, unclamped as in verl. ``low_var_kl`` (k3):
    r − log r − 1 with log r = log π_ref − log π clamped to [−20, 20] and the result clamped to [−10, 10] (verl's
    guards against a ratio that overflows when the policy has moved far from the reference).
    """
    if kind == "kl":
        return logp - ref_logp
    if kind == "low_var_kl":
        log_ratio = torch.clamp(ref_logp - logp, -20.0, 20.0)
        return torch.clamp(torch.exp(log_ratio) - log_ratio - 1, -10.0, 10.0)
    raise ValueError(f"kl_loss_type must be one of {KL_TYPES}, got {kind!r}")
