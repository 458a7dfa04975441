"""From episodes to training rows: old log-probs, values, advantages; and the loss over a micro-batch.

A *row* is one turn sample: ``prompt_ids + response_ids`` with per-response-token tensors (length = number of
response tokens). Rows are padded into (B, W-1) tensors aligned with :func:`sequence_logprobs` (position t
predicts token t+1), so response token k of row b sits at column ``len(prompt_ids) - 1 + k``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from baselines.ppo.generation import sequence_logprobs
from baselines.ppo.losses import gae_advantages, group_advantages, kl_penalty, ppo_policy_loss, value_loss
from baselines.ppo.rollout import Episode, TurnSample


@dataclass
class Row:
    sample: TurnSample
    old_logp: torch.Tensor = field(default=None)  # (L,)
    ref_logp: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    advantages: torch.Tensor = field(default=None)
    returns: torch.Tensor | None = None

    @property
    def sequence(self) -> list[int]:
        return self.sample.prompt_ids + self.sample.response_ids

    @property
    def start(self) -> int:
        return len(self.sample.prompt_ids)

    @property
    def length(self) -> int:
        return len(self.sample.response_ids)


class ValueModel(torch.nn.Module):
    """Critic: a causal-LM backbone with a scalar head on its last hidden state."""

    def __init__(self, backbone: torch.nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = torch.nn.Linear(backbone.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, sequences: list[list[int]], starts: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        _, mask, _, hidden = sequence_logprobs(self.backbone, sequences, starts)
        return self.head(hidden.float()).squeeze(-1), mask  # (B, W-1) each


def _scatter(rows: list[Row], values: list[torch.Tensor], width: int) -> torch.Tensor:
    """Place per-row response vectors into a (B, width) tensor at their response columns."""
    out = torch.zeros((len(rows), width))
    for b, (row, vec) in enumerate(zip(rows, values)):
        out[b, row.start - 1 : row.start - 1 + row.length] = vec.float().cpu()
    return out


def _gather(rows: list[Row], matrix: torch.Tensor) -> list[torch.Tensor]:
    return [matrix[b, row.start - 1 : row.start - 1 + row.length].detach().float().cpu() for b, row in enumerate(rows)]


@torch.no_grad()
def fill_old_stats(rows: list[Row], policy, critic, reference, temperature: float, micro: int) -> None:
    """Old log-probs (and values, reference log-probs) of every row under the current models."""
    for start in range(0, len(rows), micro):
        chunk = rows[start : start + micro]
        seqs, starts = [r.sequence for r in chunk], [r.start for r in chunk]
        logp, _, _, _ = sequence_logprobs(policy, seqs, starts, temperature)
        for row, vec in zip(chunk, _gather(chunk, logp)):
            row.old_logp = vec
        if reference is not None:
            ref, _, _, _ = sequence_logprobs(reference, seqs, starts, temperature)
            for row, vec in zip(chunk, _gather(chunk, ref)):
                row.ref_logp = vec
        if critic is not None:
            values, _ = critic(seqs, starts)
            for row, vec in zip(chunk, _gather(chunk, values)):
                row.old_values = vec


def fill_advantages(episodes: list[Episode], rows_by_episode: dict[tuple[int, int], list[Row]], config) -> None:
    """Advantages per response token: GAE over each episode's chain of response tokens, or group-relative."""
    if config.advantage == "gae":
        for key, rows in rows_by_episode.items():
            values = torch.cat([r.old_values for r in rows]).unsqueeze(0)  # (1, L_total)
            rewards = torch.zeros_like(values)
            episode = next(e for e in episodes if (e.group, e.sample) == key)
            rewards[0, -1] = episode.episode_return  # RAGEN: the episode's return on its last token
            adv, ret = gae_advantages(rewards, values, torch.ones_like(values), config.gamma, config.lam)
            offset = 0
            for row in rows:
                row.advantages = adv[0, offset : offset + row.length]
                row.returns = ret[0, offset : offset + row.length]
                offset += row.length
        return
    groups = sorted({e.group for e in episodes})
    samples = max(e.sample for e in episodes) + 1
    returns = torch.zeros((len(groups), samples))
    for e in episodes:
        returns[groups.index(e.group), e.sample] = e.episode_return
    adv = group_advantages(returns, normalize_std=config.advantage == "grpo")
    for e in episodes:
        value = adv[groups.index(e.group), e.sample]
        for row in rows_by_episode[(e.group, e.sample)]:
            row.advantages = torch.full((row.length,), float(value))


def build_rows(episodes: list[Episode]) -> tuple[list[Row], dict[tuple[int, int], list[Row]]]:
    rows, by_episode = [], {}
    for e in episodes:
        mine = [Row(sample=t) for t in e.turns]
        by_episode[(e.group, e.sample)] = mine
        rows.extend(mine)
    return rows, by_episode


def normalizer(rows: list[Row], config) -> float:
    """Denominator of the minibatch loss: response tokens (token-mean) or sequences × budget (Dr.GRPO)."""
    if config.advantage == "drgrpo":
        return float(len(rows) * config.max_new_tokens)
    return float(sum(r.length for r in rows))


def policy_loss(rows: list[Row], policy, config, denominator: float, parts: bool = False):
    """Loss of one micro-batch, already divided by the minibatch ``denominator`` (sums to the full loss)."""
    seqs, starts = [r.sequence for r in rows], [r.start for r in rows]
    want_entropy = config.entropy_coef > 0 or parts
    logp, mask, entropy, _ = sequence_logprobs(policy, seqs, starts, config.temperature, with_entropy=want_entropy)
    width = logp.shape[1]
    old = _scatter(rows, [r.old_logp for r in rows], width).to(logp.device)
    adv = _scatter(rows, [r.advantages for r in rows], width).to(logp.device)
    aggregation = "seq-mean-token-sum-norm" if config.advantage == "drgrpo" else "token-mean"
    pg_loss, stats = ppo_policy_loss(
        logp, old, adv, mask, config.clip_low, config.clip_high, aggregation, normalizer=denominator
    )
    token_count = float(sum(r.length for r in rows))
    entropy_term = (entropy * mask).sum() / denominator if entropy is not None else torch.zeros(())
    kl_term = torch.zeros((), device=logp.device)
    if rows[0].ref_logp is not None:
        ref = _scatter(rows, [r.ref_logp for r in rows], width).to(logp.device)
        kl_term = (kl_penalty(logp, ref) * mask).sum() / denominator
    if parts:
        return pg_loss, entropy_term, kl_term
    loss = pg_loss - config.entropy_coef * entropy_term + config.kl_coef * kl_term
    stats = {k: float(v) * token_count for k, v in stats.items()}  # token-weighted, averaged by the caller
    stats["entropy"] = float(entropy_term.detach()) * denominator if entropy is not None else float("nan")
    return loss, stats


def critic_loss(rows: list[Row], critic, config, denominator: float) -> torch.Tensor:
    values, mask = critic([r.sequence for r in rows], [r.start for r in rows])
    width = values.shape[1]
    old = _scatter(rows, [r.old_values for r in rows], width).to(values.device)
    ret = _scatter(rows, [r.returns for r in rows], width).to(values.device)
    return value_loss(values, old, ret, mask, config.value_clip, normalizer=denominator)


def returns_matrix(episodes: list[Episode], groups: list[int], samples: int) -> np.ndarray:
    out = np.zeros((len(groups), samples))
    for e in episodes:
        out[groups.index(e.group), e.sample] = e.episode_return
    return out
