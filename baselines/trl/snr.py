"""RAGEN-2's SNR-aware filter inside TRL: ``GRPOTrainer`` that drops low-spread groups before the loss.

TRL has no group-filter hook, so the subclass wraps the one place where a generation batch's rewards and loss
masks meet (``_generate_and_score_completions``): the groups' raw returns (the weighted sum of the reward
functions, gathered over processes, the quantity TRL's advantages are built from) go through
``baselines.algos.filter.choose_groups`` unchanged (the learner's rule, random-drop control included), and the rows of dropped groups get a zero loss mask, so
they add nothing to the loss nor to its token normaliser. The logged keys are the learner's
(``rollout/filter_kept_ratio`` and the rest), so the two runs plot on one dashboard.

Masking instead of removing rows keeps TRL's batch shapes (it splits a generation batch into
``steps_per_generation`` equal parts); the dropped rows' forward passes still run. An empty selection trains
on nothing that step (``rollout/empty_after_filter`` = 1), but the optimiser still steps: Adam's moments from
earlier steps move the weights, where the learner skips the update.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from baselines.algos.filter import FilterOptions, choose_groups, drop_draws, filter_stats
from baselines.trl.compat import require_trl

require_trl()
from trl import GRPOTrainer  # noqa: E402

TOKEN_NORMALISED_LOSSES = ("dapo", "bnpo", "cispo")
"""Losses divided by the count of unmasked tokens: a dropped group then changes nothing else. The others
("grpo", "dr_grpo", ...) average over rows or a constant, so masked rows would shrink the kept ones' weight."""


class SNRFilterGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` plus the SNR filter: ``filter=FilterOptions(...)`` (RAGEN-2's top-p 0.9 by default; ``top_p``
    with value ≥ 1 still drops zero-spread groups, as RAGEN's rule does; keeping everything needs
    ``include_zero=True`` too), or its fields as the learner's flat keywords (``filter_value=0.9``).
    ``selection="random"`` keeps as many groups drawn at random, seeded by ``args.seed`` and the step."""

    def __init__(self, *args, filter: FilterOptions | None = None, **kwargs) -> None:
        fields = {key.removeprefix("filter_"): kwargs.pop(key) for key in list(kwargs) if key.startswith("filter_")}
        self.filter = FilterOptions.from_mapping({**dataclasses.asdict(filter or FilterOptions()), **fields})
        super().__init__(*args, **kwargs)
        if self.loss_type not in TOKEN_NORMALISED_LOSSES:
            raise ValueError(
                f"SNR filtering needs a loss normalised by kept tokens: loss_type must be one of "
                f"{TOKEN_NORMALISED_LOSSES}, got {self.loss_type!r}"
            )
        if self.num_generations < 2:
            raise ValueError(
                f"SNR filtering needs num_generations >= 2 (a spread per group), got {self.num_generations}"
            )
        self._gathered_rewards = None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._gathered_rewards = rewards  # (rows of every process, reward functions)
        return rewards

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        if not self.model.training:  # evaluation batches are scored, not trained on
            return out
        weights = self.reward_weights.to(self._gathered_rewards.device).unsqueeze(0)
        returns = (self._gathered_rewards * weights).nansum(dim=1).view(-1, self.num_generations)
        returns = returns.double().cpu().numpy()  # (groups, samples)
        kept = choose_groups(returns, self.filter, drop_draws(self.args.seed, self.state.global_step))
        stats = filter_stats(returns, kept)
        keep_group = np.zeros(len(returns))
        keep_group[kept] = 1.0
        local = out["completion_mask"].shape[0]
        rows = self.accelerator.process_index * local + np.arange(local)  # this process's rows, globally
        keep = torch.tensor(keep_group[rows // self.num_generations], device=out["completion_mask"].device)
        row_mask = keep.to(out["completion_mask"].dtype).unsqueeze(1)
        # through the env/tool mask, which only the loss reads (the completion mask is also the attention mask)
        env_mask = out.get("tool_mask", torch.ones_like(out["completion_mask"]))
        out["tool_mask"] = env_mask * row_mask
        out["advantages"] = out["advantages"] * keep.to(out["advantages"].dtype)
        out["num_items_in_batch"] = self.accelerator.gather((out["completion_mask"] * out["tool_mask"]).sum()).sum()
        metrics = self._metrics["train"]
        for name, value in stats.metrics().items():
            metrics[name].append(float(value))
        self.last_kept_groups = kept
        return out
