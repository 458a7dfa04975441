"""Advantage estimators and PPO losses as pure torch functions (shapes in comments: B batch, T tokens).

Token-level conventions follow RAGEN/veRL: the episode reward sits on the last response token, only response
tokens (``mask == 1``) carry loss, and observation tokens of later turns are skipped by the GAE recursion
(``mask == 0`` positions pass the running advantage through unchanged). GAE advantages are then whitened over
the batch's response tokens (:func:`masked_whiten`, verl's formula), and every loss term (policy, entropy, KL)
is reduced by the same :func:`aggregate` mode, as verl's actor does.

The update's loss is here too: :func:`policy_loss` scores a micro-batch of training rows
(:class:`baselines.ppo.batch.Row`) with the policy and combines the clipped surrogate, the entropy bonus and the KL
penalty; :func:`critic_loss` is the critic's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

from baselines.ppo.config import AUTOCAST_DTYPE, KL_TYPES, LOSS_AGGREGATIONS
from baselines.ppo.generation import sequence_logprobs


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


# ---- the update's loss over a micro-batch of training rows ----------------------------------------------------
def update_precision(dtype: str, model):
    """The context the update's forwards run in: ``bfloat16-autocast`` runs the matmuls in bf16 under
    ``torch.autocast`` (weights, gradients and the optimiser stay fp32; log-softmax and the losses in fp32),
    any other dtype runs as the weights are."""
    if dtype != AUTOCAST_DTYPE:
        return contextlib.nullcontext()
    return torch.autocast(next(model.parameters()).device.type, dtype=torch.bfloat16)


def _scatter(rows: list, values: list[torch.Tensor], width: int) -> torch.Tensor:
    """Per-row span vectors as the (B, width) packed layout of :func:`sequence_logprobs` (zeros after each)."""
    out = torch.zeros((len(rows), width))
    for b, vec in enumerate(values):
        out[b, : len(vec)] = vec.float().cpu()
    return out


def policy_loss(rows: list, policy, config, denominator: float, parts: bool = False):
    """Loss of one micro-batch of :class:`baselines.ppo.batch.Row`, already divided by the minibatch ``denominator``
    (the micro-batches sum to the full loss)."""
    seqs, spans, groups = [r.sequence for r in rows], [r.spans for r in rows], [r.group for r in rows]
    want_entropy = config.entropy_coef > 0 or parts
    with update_precision(config.dtype, policy):
        logp, mask, entropy, _ = sequence_logprobs(
            policy, seqs, spans, config.temperature, with_entropy=want_entropy, groups=groups
        )
    width = logp.shape[1]
    on_policy = [r.old_logp is None for r in rows]
    if all(on_policy):  # a single-step update: the sampling weights are these weights
        old = logp.detach()
    elif any(on_policy):
        raise ValueError("a micro-batch mixes rows with and without old log-probs: fill_old_stats fills all or none")
    else:
        old = _scatter(rows, [r.old_logp for r in rows], width).to(logp.device)
    adv = _scatter(rows, [r.advantages for r in rows], width).to(logp.device)
    mode = config.aggregation
    pg_loss, stats = ppo_policy_loss(
        logp, old, adv, mask, config.clip_low, config.clip_high, mode, normalizer=denominator
    )
    token_count = float(sum(r.length for r in rows))
    # entropy and KL reduced exactly as the policy loss (verl's actor: agg_loss with the same loss_agg_mode)
    entropy_term = aggregate(entropy, mask, mode, denominator) if entropy is not None else torch.zeros(())
    kl_term = torch.zeros((), device=logp.device)
    if rows[0].ref_logp is not None:
        ref = _scatter(rows, [r.ref_logp for r in rows], width).to(logp.device)
        kl_term = aggregate(kl_penalty(logp, ref, config.kl_loss_type), mask, mode, denominator)
    if parts:
        return pg_loss, entropy_term, kl_term
    loss = pg_loss - config.entropy_coef * entropy_term + config.kl_coef * kl_term
    stats = {k: float(v) * token_count for k, v in stats.items()}  # token-weighted, averaged by the caller
    stats["pg_loss"] = float(pg_loss.detach())
    stats["entropy"] = float((entropy.detach() * mask).sum()) if entropy is not None else float("nan")  # token-weighted
    return loss, stats


def critic_loss(rows: list, critic, config, denominator: float) -> torch.Tensor:
    """The critic's clipped value loss on the rows' span tokens, divided by ``denominator``."""
    with update_precision(config.dtype, critic):
        values, mask = critic([r.sequence for r in rows], [r.spans for r in rows], [r.group for r in rows])
    width = values.shape[1]
    old = _scatter(rows, [r.old_values for r in rows], width).to(values.device)
    ret = _scatter(rows, [r.returns for r in rows], width).to(values.device)
    return value_loss(values, old, ret, mask, config.value_clip, normalizer=denominator)
