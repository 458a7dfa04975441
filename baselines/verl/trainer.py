"""RAGEN-2's SNR filter and the MI family inside verl's legacy PPO trainer: :class:`RagenPPOTrainer`.

verl 0.9 ships two trainers. ``trainer.use_v1=true`` (verl's default) is the TransferQueue trainer, whose
extension point for group filtering is a custom replay-buffer sampler: :mod:`baselines.verl.sampler`. This module
is the other one: ``RagenPPOTrainer`` subclasses verl's DataProto trainer (``RayPPOTrainer``,
``trainer.use_v1=false``, deprecated by verl but still shipped) and hooks ``_balance_batch``: the one method its
``fit`` calls with the whole generated batch after the rollout's rewards are in (``rm_scores``: the agent loop
puts the episode return on the last response token) and before old log-probs, values and advantages. There, per
training step:

1. every ``ragen.mi.every`` steps (and at step 1), the MI family on the *pre-filter* batch:
   ``harness.mi.collapse_for`` itself (the learner's and the harness's estimator) on the episodes written as
   harness records, scored by the actor: each (context, reasoning) pair becomes a row of a DataProto that goes
   through verl's own old-log-prob path (``_compute_old_log_prob`` → the actor workers' ``compute_log_prob``),
   with the weights that sampled the batch;
2. the groups (verl's ``uid``: the ``rollout.n`` samples of one env seed) and their raw episode returns go
   through ``baselines.algos.filter.choose_groups`` unchanged (the learner's and the TRL adapter's rule, with its
   random-drop control: ``ragen.filter.selection: random``);
3. ``ragen.filter.apply: trim``: the kept groups are trimmed to what the actor update can split
   (:func:`update_plan`): a multiple of ``ppo_mini_batch_size`` groups (or, below one mini-batch, of the
   data-parallel unit; with ``use_prefix_grouper``, of the data-parallel size), dropping the lowest-spread kept
   groups, and the batch is cut to the kept rows in place. RAGEN pads by duplicating samples instead; trimming
   weighs no episode twice. ``apply: mask``: every row stays and the dropped groups' ``response_mask`` is zeroed
   (the upstream ports' way: no loss token, verl's shapes and mini-batches unchanged);
4. an empty selection keeps the batch (so verl's metrics are still computed) but skips the actor and critic
   updates, as the learner skips the iteration; after ``ragen.filter.stop_after_empty`` (5) empty steps in a row,
   ``fit`` ends, as RAGEN's trainer does.

Logged in verl's metrics dict (so they reach console, W&B and TensorBoard): the learner's keys
``rollout/filter_kept_count``, ``rollout/filter_kept_ratio``, ``rollout/filter_zero_count``,
``rollout/in_group_reward_std``, ``rollout/chosen_in_group_reward_std``, ``rollout/empty_after_filter``, plus
``rollout/filter_trimmed_count``, ``actor/optimizer_steps``, ``ragen/filter/empty_streak``, the pre-filter batch's
``ragen/prefilter/{score_mean,score_std,score_max,score_min,success,groups}`` (verl's ``critic/score/*`` describe
the kept groups only), and ``collapse_first_turn/*``, ``collapse_trajectory/*``, ``timing_s/mi``.

The end-to-end path needs verl's GPU workers (``python -m baselines.verl.main trainer.use_v1=false``); on CPU the
filter, the pair batches, the scorer (with a stand-in for the actor's log-prob call) and the hook are tested.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from baselines.algos.mi import family_log
from baselines.verl.compat import require_verl
from baselines.verl.filtering import (
    EmptyStreak,
    FilterStop,
    RagenOptions,
    check_filter_config,
    groups_of,
    options_from_config,
    prefilter_metrics,
    select,
    selection_metrics,
    success_column,
    trim_to,
    update_plan,
)
from harness.mi import collapse_for
from harness.seeding import derive_seed
from harness.transcript import continuation_ids, render_prompt

require_verl()
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer  # noqa: E402

logger = logging.getLogger(__name__)

__all__ = ["FilterStop", "RagenOptions", "RagenPPOTrainer", "snr_filter", "update_plan"]


# ---- the SNR filter on a DataProto -----------------------------------------------------------------------
def group_returns(batch: DataProto) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The groups of a generated batch: their uids (first-seen order), row indices and raw episode returns, both
    ``(groups, samples)``. The return is ``rm_scores`` summed over the response (the agent loop's episode return,
    format penalties included)."""
    if "rm_scores" not in batch.batch.keys():
        raise ValueError(
            "the SNR filter needs rm_scores in the generated batch (the ragen_agent loop's episode return); "
            "a colocated reward model scores later, so it cannot be filtered on"
        )
    uids = batch.non_tensor_batch.get("uid")
    if uids is None:
        raise ValueError("the SNR filter needs verl's uid column (the group of each sample)")
    per_row = batch.batch["rm_scores"].float().sum(dim=-1).double().cpu().numpy()
    return groups_of(uids.tolist(), per_row)


@dataclass
class FilterResult:
    """What the hook does with one batch: the rows kept (ascending), the groups trained on, the mini-batch size
    (in groups) and the log. With ``apply: mask`` every row stays and ``dropped`` lists the masked ones."""

    rows: np.ndarray
    groups: int
    mini_batch_groups: int
    metrics: dict[str, float] = field(default_factory=dict)
    dropped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def empty(self) -> bool:
        """Whether the filter kept no row (the step then makes no update, as the learner does)."""
        return len(self.rows) == 0


def snr_filter(
    batch: DataProto, options: RagenOptions, *, mini_batch_groups: int, dp_size: int = 1,
    whole_groups_per_rank: bool = False, step: int = 0,
) -> FilterResult:  # fmt: skip
    """Select the batch's groups with the learner's rule (:func:`~baselines.verl.filtering.select`, ``step``
    seeding the random-drop control); ``trim``: cut them to an update verl can run (:func:`update_plan`),
    ``mask``: keep the batch's shape and list the dropped rows."""
    uids, rows, returns = group_returns(batch)
    selected = select(returns, options, step)
    if options.apply == "trim":
        count, mini_batch = update_plan(len(selected), mini_batch_groups, returns.shape[1], dp_size,
                                        whole_groups_per_rank)  # fmt: skip
        kept = trim_to(selected, count, returns, options.filter.spread)
    else:
        kept, mini_batch = selected, mini_batch_groups
    metrics = selection_metrics(returns, selected, kept)
    metrics.update(prefilter_metrics(returns, success_column(batch.non_tensor_batch.get("success"))))
    kept_rows = np.sort(rows[kept].reshape(-1)) if len(kept) else np.zeros(0, dtype=np.int64)
    if options.apply == "trim":
        return FilterResult(kept_rows, len(kept), mini_batch, metrics)
    dropped = np.setdiff1d(np.arange(rows.size), kept_rows)
    return FilterResult(kept_rows, len(uids), mini_batch, metrics, dropped)


# ---- MI: episode records and actor scoring ----------------------------------------------------------------
def episode_records(batch: DataProto) -> list[dict]:
    """The batch's episodes as harness episode records (``ragen_episode`` + ``ragen_turns``, from the agent
    loop), in batch order."""
    missing = [k for k in ("ragen_episode", "ragen_turns") if k not in batch.non_tensor_batch]
    if missing:
        raise ValueError(f"MI needs the ragen_agent loop's {missing[0]} column (agent_name: ragen_agent rows)")
    records = []
    for episode, turns in zip(
        batch.non_tensor_batch["ragen_episode"], batch.non_tensor_batch["ragen_turns"], strict=True
    ):
        records.append({
            "env_id": episode["env_id"], "env_kwargs": dict(episode["env_kwargs"]), "seed": int(episode["seed"]),
            "instructions": episode["instructions"],
            "turns": [{"user": t["user"], "prefill": t["prefill"], "response": t["response"],
                       "reasoning": t["reasoning"], "reward": t.get("reward", 0.0)} for t in turns],
        })  # fmt: skip
    return records


def pair_batch(
    prompts: Sequence[list[int]], responses: Sequence[list[int]], pad_id: int, temperature: float
) -> DataProto:
    """A DataProto of (prompt, response) rows in verl's layout: prompts left-padded, responses right-padded,
    ``input_ids`` their concatenation, ``attention_mask``, ``position_ids`` (0 at the first real token),
    ``response_mask`` (1 on the response's tokens); ``meta_info['temperature']``."""
    if len(prompts) != len(responses) or not prompts:
        raise ValueError(
            f"pair_batch needs as many prompts as responses, at least one; got {len(prompts)}, {len(responses)}"
        )
    width_p, width_r = max(len(p) for p in prompts), max(len(r) for r in responses)
    b = len(prompts)
    prompt_ids = torch.full((b, width_p), pad_id, dtype=torch.long)
    response_ids = torch.full((b, width_r), pad_id, dtype=torch.long)
    prompt_mask = torch.zeros((b, width_p), dtype=torch.long)
    response_mask = torch.zeros((b, width_r), dtype=torch.long)
    for i, (p, r) in enumerate(zip(prompts, responses, strict=True)):
        if p:
            prompt_ids[i, width_p - len(p) :] = torch.tensor(p)
            prompt_mask[i, width_p - len(p) :] = 1
        if r:
            response_ids[i, : len(r)] = torch.tensor(r)
            response_mask[i, : len(r)] = 1
    attention_mask = torch.cat([prompt_mask, response_mask], dim=1)
    position_ids = (attention_mask.cumsum(dim=1) - 1).clamp_min(0) * attention_mask
    return DataProto.from_dict(
        tensors={
            "prompts": prompt_ids, "responses": response_ids, "input_ids": torch.cat([prompt_ids, response_ids], 1),
            "attention_mask": attention_mask, "position_ids": position_ids, "response_mask": response_mask,
        },
        meta_info={"temperature": float(temperature)},
    )  # fmt: skip


LogProbs = Callable[[DataProto], torch.Tensor]
"""A pair batch -> per-response-token log-probs ``(B, response width)`` (verl's ``old_log_probs``)."""


class ActorScorer:
    """A scoring agent of the harness's protocol (``can_score``, ``spec``, ``score_matrix``) whose log-probs come
    from ``log_probs`` on pair batches: in the trainer, verl's actor (``compute_log_prob``).

    ``spec`` seeds the harness's draws (give the model's ``hf:`` spec for the harness's own pairs);
    ``batch_multiple`` pads each call to a multiple of the data-parallel size (the padding rows are dropped).
    """

    can_score = True

    def __init__(self, tokenizer, log_probs: LogProbs, *, spec: str, temperature: float = 1.0,
                 pairs_per_call: int = 256, batch_multiple: int = 1) -> None:  # fmt: skip
        self.tokenizer, self.log_probs, self.spec = tokenizer, log_probs, spec
        self.temperature, self.pairs_per_call, self.batch_multiple = temperature, pairs_per_call, batch_multiple
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else tokenizer.eos_token_id or 0)

    def score_matrix(self, contexts, texts, wanted: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(logprob_sum, num_tokens)``, ``(len(texts), len(contexts))``; entries outside ``wanted`` are NaN/0."""
        shape = (len(texts), len(contexts))
        sums, counts = np.full(shape, np.nan), np.zeros(shape)
        if not contexts or not texts:
            return sums, counts
        rendered = [render_prompt(self.tokenizer, c) for c in contexts]  # the hf: agent's rendering
        heads = [self.tokenizer.encode(r, add_special_tokens=False) for r in rendered]
        bodies = [continuation_ids(self.tokenizer, rendered[0], heads[0], t) for t in texts]
        entries = [(i, j) for i, j in zip(*np.nonzero(np.ones(shape, bool) if wanted is None else wanted), strict=True)]
        todo = []
        for i, j in entries:
            if bodies[i]:
                todo.append((i, j))
            else:  # no tokens: log p = 0 over 0 tokens, as the hf agent scores an empty text
                sums[i, j], counts[i, j] = 0.0, 0.0
        for start in range(0, len(todo), self.pairs_per_call):
            chunk = todo[start : start + self.pairs_per_call]
            pad = -len(chunk) % self.batch_multiple
            padded = chunk + [chunk[0]] * pad
            pairs = pair_batch([heads[j] for _, j in padded], [bodies[i] for i, _ in padded], self.pad_id,
                               self.temperature)  # fmt: skip
            logp = self.log_probs(pairs)[: len(chunk)].double().cpu()
            mask = pairs.batch["response_mask"][: len(chunk)].double()
            for (i, j), total, n in zip(chunk, (logp * mask).sum(-1).tolist(), mask.sum(-1).tolist(), strict=True):
                sums[i, j], counts[i, j] = total, n
        return sums, counts


def mi_metrics(batch: DataProto, scorer, options: RagenOptions, step: int) -> dict[str, float]:
    """The MI family of the batch's episodes with ``scorer`` (``harness.mi.collapse_for``), keyed as the
    learner logs it; the draws are seeded by ``ragen.mi.seed`` and the step."""
    records = episode_records(batch)
    schemes = list(options.mi.schemes)
    run_seed = derive_seed("train-mi", options.mi_seed, int(step))
    results = collapse_for(scorer, records, run_seed, options.mi.samples, options.mi.columns, schemes=schemes)
    return family_log(results, records, schemes)


# ---- the trainer -------------------------------------------------------------------------------------------
class RagenPPOTrainer(RayPPOTrainer):
    """``RayPPOTrainer`` with the SNR filter and MI logging of the module docstring (options: ``config.ragen``,
    or ``algorithm.reward_variance_filtering``)."""

    def __init__(self, config, *args, **kwargs) -> None:
        self.ragen = options_from_config(config)
        check_trainer_config(config)
        super().__init__(config, *args, **kwargs)
        self._ragen_plan: FilterResult | None = None
        self._ragen_streak = EmptyStreak(self.ragen.filter_stop_after_empty)

    def fit(self):
        """verl's ``fit``, ended early (without an error) when :class:`FilterStop` says nothing is left to learn."""
        try:
            return super().fit()
        except FilterStop as stop:
            logger.warning("ragen: %s", stop)
            print(f"ragen: {stop}")
            self.ragen_stopped = str(stop)
            return None

    # The hook: fit() calls _balance_batch once per step with the generated batch, rewards in, nothing derived.
    def _balance_batch(self, batch: DataProto, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        self.ragen_step(batch, metrics)
        return super()._balance_batch(batch, metrics, logging_prefix=logging_prefix, keep_minibatch=keep_minibatch)

    def ragen_step(self, batch: DataProto, metrics: dict) -> FilterResult:
        """MI on the pre-filter batch (every ``mi.every`` steps), then the filter, in place; raises
        :class:`FilterStop` after ``filter.stop_after_empty`` empty selections in a row."""
        step = int(getattr(self, "global_steps", 0))
        every = self.ragen.mi.every
        if every and self.ragen.mi.samples and (step - 1) % every == 0:
            start = time.perf_counter()
            metrics.update(mi_metrics(batch, self.actor_scorer(), self.ragen, step))
            metrics["timing_s/mi"] = time.perf_counter() - start
        plan = snr_filter(batch, self.ragen, mini_batch_groups=self._mini_batch_groups(),
                          dp_size=self._actor_dp_size(), whole_groups_per_rank=self._prefix_grouper(),
                          step=step)  # fmt: skip
        metrics.update(plan.metrics)
        self._ragen_plan = plan
        metrics.update(self._ragen_streak.record(plan.empty))
        if plan.empty:
            return plan
        if len(plan.dropped):  # mask: the dropped groups stay, with no loss token
            batch.batch["response_mask"][torch.as_tensor(plan.dropped, dtype=torch.long)] = 0
        elif len(plan.rows) < len(batch):
            batch.reorder(torch.as_tensor(plan.rows, dtype=torch.long))  # in place: fit() holds this object
        return plan

    def _prefix_grouper(self) -> bool:
        return bool(self.config.actor_rollout_ref.actor.get("use_prefix_grouper", False))

    def actor_scorer(self) -> ActorScorer:
        """The actor (its current weights: those that sampled this batch) as the MI scoring agent."""
        model = self.config.actor_rollout_ref.model.path
        return ActorScorer(
            self.tokenizer, lambda pairs: self._compute_old_log_prob(pairs)[0].batch["old_log_probs"],
            spec=f"hf:{model}", temperature=float(self.config.actor_rollout_ref.rollout.temperature),
            pairs_per_call=self.ragen.mi_pairs_per_call, batch_multiple=self._actor_dp_size(),
        )  # fmt: skip

    def _actor_dp_size(self) -> int:
        worker_group = getattr(self, "actor_rollout_wg", None)
        return self._get_dp_size(worker_group, "actor") if worker_group is not None else 1

    def _mini_batch_groups(self) -> int:
        return int(self.config.actor_rollout_ref.actor.ppo_mini_batch_size)

    @contextlib.contextmanager
    def _mini_batch(self, section):
        """The kept batch's mini-batch size (in groups) while an update reads ``section.ppo_mini_batch_size``."""
        plan, configured = self._ragen_plan, section.ppo_mini_batch_size
        if plan is not None and not plan.empty:
            section.ppo_mini_batch_size = plan.mini_batch_groups
        try:
            yield
        finally:
            section.ppo_mini_batch_size = configured

    def _update_actor(self, batch: DataProto) -> DataProto:
        if self._ragen_plan is not None and self._ragen_plan.empty:  # nothing kept: no update, as the learner
            return DataProto.from_single_dict(data={}, meta_info={"metrics": {"actor/optimizer_steps": 0.0}})
        with self._mini_batch(self.config.actor_rollout_ref.actor):
            out = super()._update_actor(batch)
        if self._ragen_plan is not None:
            steps = self._ragen_plan.groups // self._ragen_plan.mini_batch_groups
            epochs = int(self.config.actor_rollout_ref.actor.ppo_epochs)
            out.meta_info["metrics"]["actor/optimizer_steps"] = float(steps * epochs)
        return out

    def _update_critic(self, batch: DataProto) -> DataProto:
        if self._ragen_plan is not None and self._ragen_plan.empty:
            return DataProto.from_single_dict(data={}, meta_info={"metrics": {}})
        with self._mini_batch(self.config.critic):
            return super()._update_critic(batch)


def check_trainer_config(config) -> None:
    """The verl settings the legacy hook relies on, each failing with the fix."""
    if config.trainer.get("use_v1", False):
        raise ValueError("trainer.use_v1 must be false for RagenPPOTrainer (it hooks verl's DataProto trainer)")
    if not config.trainer.get("balance_batch", True):
        raise ValueError("trainer.balance_batch must be true: RagenPPOTrainer filters in verl's _balance_batch hook")
    check_filter_config(config)
