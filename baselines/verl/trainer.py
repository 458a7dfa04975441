"""RAGEN-2's SNR filter and the MI family inside verl's PPO trainer: :class:`RagenPPOTrainer`.

verl 0.9 has no hook for a custom group filter (``algorithm.filter_groups`` is DAPO's zero-variance rule, with
refills). ``RagenPPOTrainer`` subclasses verl's DataProto trainer (``RayPPOTrainer``, ``trainer.use_v1=false``)
and hooks ``_balance_batch``: the one method its ``fit`` calls with the whole generated batch after the
rollout's rewards are in (``rm_scores``: the agent loop puts the episode return on the last response token) and
before old log-probs, values and advantages. There, per training step:

1. every ``ragen.mi.every`` steps (and at step 1), the MI family on the *pre-filter* batch:
   ``harness.mi.collapse_for`` itself (the learner's and the harness's estimator) on the episodes written as
   harness records, scored by the actor: each (context, reasoning) pair becomes a row of a DataProto that goes
   through verl's own old-log-prob path (``_compute_old_log_prob`` → the actor workers' ``compute_log_prob``),
   with the weights that sampled the batch;
2. the groups (verl's ``uid``: the ``rollout.n`` samples of one env seed) and their raw episode returns go
   through ``baselines.ppo.snr_filter.select_groups`` unchanged (the learner's and the TRL adapter's rule);
3. the kept groups are trimmed to what the actor update can split (:func:`update_plan`): a multiple of
   ``ppo_mini_batch_size`` groups (or, below one mini-batch, of the data-parallel unit), dropping the
   lowest-spread kept groups. RAGEN pads by duplicating samples instead; trimming weighs no episode twice;
4. the batch is cut to the kept rows in place; an empty selection keeps the batch (so verl's metrics are still
   computed) but skips the actor and critic updates, as the learner skips the iteration.

Logged in verl's metrics dict (so they reach console, W&B and TensorBoard): the learner's keys
``rollout/filter_kept_count``, ``rollout/filter_kept_ratio``, ``rollout/filter_zero_count``,
``rollout/in_group_reward_std``, ``rollout/chosen_in_group_reward_std``, ``rollout/empty_after_filter``, plus
``rollout/filter_trimmed_count`` and ``actor/optimizer_steps``; and ``collapse_first_turn/*``,
``collapse_trajectory/*``, ``timing_s/mi``.

The end-to-end path needs verl's GPU workers (``python -m baselines.verl.main``); on CPU the filter, the pair
batches, the scorer (with a stand-in for the actor's log-prob call) and the hook are tested.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from baselines.ppo.diagnostics import family_log
from baselines.ppo.snr_filter import MODES, PROB_MODES, SPREADS, filter_stats, group_spread, select_groups
from baselines.verl.compat import require_verl
from harness.mi import SCHEMES, collapse_for
from harness.seeding import derive_seed
from harness.transcript import continuation_ids, render_prompt
from ragen_envs.core import check_choice, check_range

require_verl()
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.ray_trainer import RayPPOTrainer  # noqa: E402


# ---- options ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RagenOptions:
    """The ``ragen`` section of the config (``baselines/verl/config/ragen_ppo.yaml``)."""

    filter_enable: bool = True
    """Apply the SNR filter (off: every group trains, MI still logged)."""
    filter_mode: str = "top_p"
    """``select_groups``'s ``mode``: ``top_p``, ``top_k``, ``top_k_abs``, ``min_p``."""
    filter_value: float = 0.9
    """``select_groups``'s ``value`` (RAGEN-2: top-p 0.9)."""
    filter_prob_mode: str = "linear"
    """``linear`` or ``softmax`` top-p."""
    filter_spread: str = "std"
    """Group spread: ``std`` (ddof 1) or ``var``."""
    filter_include_zero: bool = False
    """Keep zero-spread groups as candidates."""
    filter_eps: float = 0.01
    """Top-p slack."""
    mi_every: int = 5
    """MI family every k training steps (and at step 1); 0 disables."""
    mi_samples: int = 64
    """Pairs drawn per MI scheme (the harness's ``mi_samples``)."""
    mi_columns: int | None = None
    """Score each row under this many columns instead of all (the harness's ``mi_columns``); None: all."""
    mi_schemes: tuple[str, ...] = SCHEMES
    """``first_turn`` and/or ``trajectory``."""
    mi_seed: int = 0
    """Seeds the MI draws (with the step)."""
    mi_pairs_per_call: int = 256
    """Pairs per ``compute_log_prob`` call (bounds the actor's memory)."""

    def __post_init__(self) -> None:
        check_choice("ragen.filter.mode", self.filter_mode, MODES)
        check_choice("ragen.filter.prob_mode", self.filter_prob_mode, PROB_MODES)
        check_choice("ragen.filter.spread", self.filter_spread, SPREADS)
        check_range("ragen.filter.value", self.filter_value, 0.0)
        check_range("ragen.filter.eps", self.filter_eps, 0.0)
        for name, value, low in (("mi.every", self.mi_every, 0), ("mi.samples", self.mi_samples, 0),
                                 ("mi.seed", self.mi_seed, 0), ("mi.pairs_per_call", self.mi_pairs_per_call, 1)):  # fmt: skip
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"ragen.{name} must be an integer >= {low}, got {value!r}")
        if self.mi_columns is not None and (not isinstance(self.mi_columns, int) or self.mi_columns < 2):
            raise ValueError(f"ragen.mi.columns must be null or an integer >= 2, got {self.mi_columns!r}")
        for scheme in self.mi_schemes:
            check_choice("ragen.mi.schemes", scheme, SCHEMES)

    @classmethod
    def from_config(cls, section: Any) -> RagenOptions:
        """From the ``ragen`` config section (``filter`` and ``mi`` sub-sections; missing keys keep defaults)."""
        section = section or {}
        unknown = [key for key in section if key not in ("filter", "mi")]
        if unknown:
            raise ValueError(f"unknown key ragen.{unknown[0]}; allowed: filter, mi")
        out: dict[str, Any] = {}
        for group in ("filter", "mi"):
            values = dict(section.get(group) or {})
            for key, value in values.items():
                name = f"{group}_{key}"
                if name not in cls.__dataclass_fields__:
                    known = sorted(k.split("_", 1)[1] for k in cls.__dataclass_fields__ if k.startswith(group))
                    raise ValueError(f"unknown key ragen.{group}.{key}; allowed: {', '.join(known)}")
                out[name] = tuple(value) if name == "mi_schemes" else value
        return cls(**out)

    def select_options(self) -> dict[str, Any]:
        """The keyword arguments of ``select_groups``."""
        return dict(mode=self.filter_mode, value=self.filter_value, prob_mode=self.filter_prob_mode,
                    spread=self.filter_spread, include_zero=self.filter_include_zero, eps=self.filter_eps)  # fmt: skip


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
    rows: dict[str, list[int]] = {}
    for index, uid in enumerate(uids.tolist()):
        rows.setdefault(str(uid), []).append(index)
    sizes = {len(r) for r in rows.values()}
    if len(sizes) != 1:
        raise ValueError(f"groups of unequal size in the batch ({sorted(sizes)}): the SNR filter needs rollout.n each")
    order = list(rows)
    row_matrix = np.array([rows[uid] for uid in order], dtype=np.int64)
    per_row = batch.batch["rm_scores"].float().sum(dim=-1).double().cpu().numpy()
    return order, row_matrix, per_row[row_matrix]


def update_plan(num_groups: int, mini_batch_groups: int, samples: int, dp_size: int) -> tuple[int, int]:
    """(groups to train on, groups per mini-batch) for ``num_groups`` kept groups.

    verl's actor splits a batch into mini-batches of ``ppo_mini_batch_size`` groups (× ``rollout.n`` rows), and
    every mini-batch evenly over the data-parallel ranks. So: a multiple of ``mini_batch_groups``; below one
    mini-batch, one mini-batch of a multiple of the smallest group count whose rows split over the ranks.
    """
    unit = dp_size // math.gcd(samples, dp_size)  # groups whose rows divide evenly over the ranks
    if num_groups >= mini_batch_groups:
        kept = num_groups // mini_batch_groups * mini_batch_groups
        return kept, mini_batch_groups
    kept = num_groups // unit * unit
    return kept, kept


@dataclass
class FilterResult:
    """What the hook does with one batch: the rows kept (ascending), the mini-batch size and the log."""

    rows: np.ndarray
    groups: int
    mini_batch_groups: int
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Whether the filter kept no row (the step then makes no update, as the learner does)."""
        return len(self.rows) == 0


def snr_filter(batch: DataProto, options: RagenOptions, *, mini_batch_groups: int, dp_size: int = 1) -> FilterResult:
    """Select the batch's groups with ``select_groups`` (unchanged) and trim them to an update verl can run."""
    uids, rows, returns = group_returns(batch)
    if not options.filter_enable:
        kept = np.arange(len(uids))
    else:
        kept = select_groups(returns, **options.select_options())
    stats = filter_stats(returns, kept)
    count, mini_batch = update_plan(len(kept), mini_batch_groups, returns.shape[1], dp_size)
    if count < len(kept):  # drop the lowest-spread kept groups (ties: the later group)
        spreads = group_spread(returns, options.filter_spread)
        by_spread = sorted(kept.tolist(), key=lambda g: (-spreads[g], g))
        kept = np.sort(np.array(by_spread[:count], dtype=np.int64))
    metrics = {name: float(value) for name, value in stats.metrics().items()}
    metrics["rollout/filter_trimmed_count"] = float(stats.kept_count - len(kept))
    metrics["rollout/empty_after_filter"] = float(len(kept) == 0)  # after trimming to whole mini-batches
    kept_rows = np.sort(rows[kept].reshape(-1)) if len(kept) else np.zeros(0, dtype=np.int64)
    return FilterResult(kept_rows, len(kept), mini_batch, metrics)


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
    schemes = list(options.mi_schemes)
    run_seed = derive_seed("train-mi", options.mi_seed, int(step))
    results = collapse_for(scorer, records, run_seed, options.mi_samples, options.mi_columns, schemes=schemes)
    return family_log(results, records, schemes)


# ---- the trainer -------------------------------------------------------------------------------------------
class RagenPPOTrainer(RayPPOTrainer):
    """``RayPPOTrainer`` with the SNR filter and MI logging of the module docstring (options: ``config.ragen``)."""

    def __init__(self, config, *args, **kwargs) -> None:
        self.ragen = RagenOptions.from_config(config.get("ragen"))
        check_trainer_config(config)
        super().__init__(config, *args, **kwargs)
        self._ragen_plan: FilterResult | None = None

    # The hook: fit() calls _balance_batch once per step with the generated batch, rewards in, nothing derived.
    def _balance_batch(self, batch: DataProto, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        self.ragen_step(batch, metrics)
        return super()._balance_batch(batch, metrics, logging_prefix=logging_prefix, keep_minibatch=keep_minibatch)

    def ragen_step(self, batch: DataProto, metrics: dict) -> FilterResult:
        """MI on the pre-filter batch (every ``mi.every`` steps), then the filter, in place."""
        step = int(getattr(self, "global_steps", 0))
        every = self.ragen.mi_every
        if every and self.ragen.mi_samples and (step - 1) % every == 0:
            start = time.perf_counter()
            metrics.update(mi_metrics(batch, self.actor_scorer(), self.ragen, step))
            metrics["timing_s/mi"] = time.perf_counter() - start
        dp_size = self._actor_dp_size()
        plan = snr_filter(batch, self.ragen, mini_batch_groups=self._mini_batch_groups(), dp_size=dp_size)
        metrics.update(plan.metrics)
        if not plan.empty and len(plan.rows) < len(batch):
            batch.reorder(torch.as_tensor(plan.rows, dtype=torch.long))  # in place: fit() holds this object
        self._ragen_plan = plan
        return plan

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
    """The verl settings the hook relies on, each failing with the fix."""
    if config.trainer.get("use_v1", False):
        raise ValueError("trainer.use_v1 must be false for RagenPPOTrainer (it hooks verl's DataProto trainer)")
    if not config.trainer.get("balance_batch", True):
        raise ValueError("trainer.balance_batch must be true: RagenPPOTrainer filters in verl's _balance_batch hook")
    filter_groups = config.algorithm.get("filter_groups") or {}
    if filter_groups.get("enable", False):
        raise ValueError(
            "algorithm.filter_groups.enable must be false with RagenPPOTrainer: it applies RAGEN's SNR filter "
            "(ragen.filter.*) instead of DAPO's"
        )
    if int(config.actor_rollout_ref.rollout.n) < 2:
        raise ValueError(
            f"actor_rollout_ref.rollout.n must be >= 2 (a reward spread per group), got {config.actor_rollout_ref.rollout.n}"
        )
