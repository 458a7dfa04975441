"""From episodes to training rows: old log-probs, values, advantages (the loss over a micro-batch of rows is
:func:`baselines.ppo.losses.policy_loss`).

A *row* is one token sequence with one or more response spans and per-response-token tensors (spans
concatenated). When an episode's prompts were built append-only (``Episode.chained``), the whole episode is
ONE row: the last turn's prompt already holds every earlier response token for token, so one forward pass
scores all turns (as RAGEN trains on whole trajectories) instead of re-reading the growing history once per
turn. Otherwise (a context window that drops turns) each turn is its own row. Per-token tensors are (B, L), in
the packed layout of :func:`sequence_logprobs` (column j of a row is its j-th response token).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from baselines.algos.returns import episode_returns
from baselines.ppo.generation import sequence_logprobs
from baselines.ppo.losses import gae_advantages, group_advantages, masked_whiten, update_precision
from baselines.ppo.rollout import Episode, TurnSample


@dataclass
class Row:
    """One training sequence: its tokens, the spans the policy wrote, and the per-token tensors the losses read."""

    group: int
    sample: int
    sequence: list[int]
    spans: list[tuple[int, int]]
    old_logp: torch.Tensor | None = None  # (L,) over the spans' tokens, in order; None: on-policy (the loss's own)
    ref_logp: torch.Tensor | None = None
    old_values: torch.Tensor | None = None
    advantages: torch.Tensor = field(default=None)
    returns: torch.Tensor | None = None

    @property
    def length(self) -> int:
        """The number of tokens the policy wrote (the spans' total length)."""
        return sum(end - start for start, end in self.spans)

    @classmethod
    def of_turns(cls, turns: list[TurnSample]) -> Row:
        """One row for consecutive turns whose prompts extend each other (the last turn's sequence)."""
        last = turns[-1]
        spans = [(len(t.prompt_ids), len(t.prompt_ids) + len(t.response_ids)) for t in turns]
        return cls(last.group, last.sample, last.prompt_ids + last.response_ids, spans)


class ValueModel(torch.nn.Module):
    """Critic: a causal-LM backbone with a scalar head on its last hidden state."""

    def __init__(self, backbone: torch.nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = torch.nn.Linear(backbone.config.hidden_size, 1)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(
        self, sequences: list[list[int]], spans: list, groups: list | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The value before each span token and the mask of the filled columns, (B, L) each, packed as
        :func:`sequence_logprobs`."""
        _, mask, _, hidden = sequence_logprobs(self.backbone, sequences, spans, groups=groups)
        return self.head(hidden.float()).squeeze(-1), mask  # (B, L) each


def _gather(rows: list[Row], matrix: torch.Tensor) -> list[torch.Tensor]:
    """Each row's span vector out of a (B, L) packed matrix."""
    return [matrix[b, : row.length].detach().float().cpu() for b, row in enumerate(rows)]


def micro_batches(rows: list[Row], size: int) -> list[list[Row]]:
    """``rows`` in chunks of at most ``size``, a group's rows next to each other (stable: the given order within
    a group), so a micro-batch holds whole groups whose shared first-turn prompt runs once (see
    :func:`sequence_logprobs`). The chunks of one minibatch sum to the same loss in any arrangement."""
    ordered = sorted(rows, key=lambda row: row.group)
    return [ordered[start : start + size] for start in range(0, len(ordered), size)]


def single_step(config, global_rows: int) -> bool:
    """Whether the update is one optimiser step on the whole batch (one epoch, one minibatch of all
    ``global_rows`` rows, every rank's): then no old log-prob pass is needed (see the module docstring)."""
    return config.ppo_epochs == 1 and global_rows <= config.minibatch_size


@torch.no_grad()
def fill_old_stats(
    rows: list[Row], policy, critic, reference, temperature: float, micro: int, dtype: str = "float32"
) -> None:
    """Old log-probs (and values, reference log-probs) of every row under the current models; ``policy`` None
    skips the old log-probs (a :func:`single_step` update computes them in the loss). ``dtype``: the config's,
    for :func:`update_precision` (the old log-probs in the precision the loss computes the new ones)."""
    if policy is None and critic is None and reference is None:
        return
    any_model = next(m for m in (policy, critic, reference) if m is not None)
    with update_precision(dtype, any_model):
        _fill_old_stats(rows, policy, critic, reference, temperature, micro)


def _fill_old_stats(rows: list[Row], policy, critic, reference, temperature: float, micro: int) -> None:
    for chunk in micro_batches(rows, micro):
        seqs, spans, groups = [r.sequence for r in chunk], [r.spans for r in chunk], [r.group for r in chunk]
        if policy is not None:
            logp, _, _, _ = sequence_logprobs(policy, seqs, spans, temperature, groups=groups)
            for row, vec in zip(chunk, _gather(chunk, logp), strict=True):
                row.old_logp = vec
        if reference is not None:
            ref, _, _, _ = sequence_logprobs(reference, seqs, spans, temperature, groups=groups)
            for row, vec in zip(chunk, _gather(chunk, ref), strict=True):
                row.ref_logp = vec
        if critic is not None:
            values, _ = critic(seqs, spans, groups)
            for row, vec in zip(chunk, _gather(chunk, values), strict=True):
                row.old_values = vec


def fill_advantages(
    episodes: list[Episode], rows_by_episode: dict[tuple[int, int], list[Row]], config, reduce=None
) -> None:
    """Advantages per response token: GAE over each episode's chain of response tokens (whitened over the whole
    batch's response tokens, ``reduce`` summing across ranks), or group-relative."""
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
        rows = [row for key in sorted(rows_by_episode) for row in rows_by_episode[key]]
        if config.whiten_advantages:  # also with no local rows: the statistics are summed across ranks
            flat = torch.cat([row.advantages for row in rows]) if rows else torch.zeros(0)
            whitened = masked_whiten(flat, torch.ones_like(flat), reduce=reduce)
            offset = 0
            for row in rows:
                row.advantages = whitened[offset : offset + row.length]
                offset += row.length
        return
    if not episodes:
        return
    groups, returns = episode_returns(episodes)
    adv = group_advantages(torch.from_numpy(returns).float(), normalize_std=config.advantage == "grpo")
    for e in episodes:
        value = adv[groups.index(e.group), e.sample]
        for row in rows_by_episode[(e.group, e.sample)]:
            row.advantages = torch.full((row.length,), float(value))


def build_rows(episodes: list[Episode]) -> tuple[list[Row], dict[tuple[int, int], list[Row]]]:
    """Rows of each episode (one when chained, else one per turn), and the rows by (group, sample)."""
    rows, by_episode = [], {}
    for e in episodes:
        mine = [Row.of_turns(e.turns)] if e.chained else [Row.of_turns([t]) for t in e.turns]
        by_episode[(e.group, e.sample)] = mine
        rows.extend(mine)
    return rows, by_episode


def normalizer(rows: list[Row], config) -> float:
    """Denominator of the minibatch loss: its response tokens (``token-mean``) or its sequences (the
    ``seq-mean-*`` modes); see :func:`baselines.ppo.losses.aggregate`."""
    if config.aggregation == "token-mean":
        return float(sum(r.length for r in rows))
    return float(len(rows))
