"""Advantage estimators and PPO losses as pure torch functions (shapes in comments: B batch, T tokens).

Token-level conventions follow RAGEN/veRL: the episode reward sits on the last response token, only response
tokens (``mask == 1``) carry loss, and observation tokens of later turns are skipped by the GAE recursion
(``mask == 0`` positions pass the running advantage through unchanged).
"""

from __future__ import annotations

import torch

LOSS_AGGREGATIONS = ("token-mean", "seq-mean-token-sum-norm")


def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``values`` over positions where ``mask`` is 1 (0 when the mask is empty)."""
    mask = mask.to(values.dtype)
    return (values * mask).sum() / mask.sum().clamp_min(1.0)


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

    ``aggregation``: ``token-mean`` averages over all response tokens of the batch; ``seq-mean-token-sum-norm``
    (Dr.GRPO) sums per sequence and divides by a constant (the max length T) so long answers are not favoured.
    ``normalizer`` replaces the denominator (token count, or sequence count × T) so that micro-batches of one
    minibatch, or shards of one batch on several ranks, sum to exactly the loss of the whole (1×8 ≡ 8×1).
    """
    ratio = torch.exp(logp - old_logp)  # (B, T)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    per_token = torch.maximum(unclipped, clipped)
    if aggregation == "token-mean":
        pg_loss = masked_mean(per_token, mask) if normalizer is None else (per_token * mask).sum() / normalizer
    elif aggregation == "seq-mean-token-sum-norm":
        total = (per_token * mask).sum()
        pg_loss = total / (per_token.shape[0] * per_token.shape[1]) if normalizer is None else total / normalizer
    else:
        raise ValueError(f"aggregation must be one of {LOSS_AGGREGATIONS}, got {aggregation!r}")
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


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(π‖π_ref) from sampled-token log-probs; (B, T)."""
    log_ratio = ref_logp - logp
    return torch.exp(log_ratio) - 1 - log_ratio
