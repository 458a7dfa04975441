"""RAGEN-2's SNR filter inside verl's v1 trainer: :class:`RagenReplayBuffer`, a custom replay-buffer sampler.

verl 0.9's default trainer (``trainer.use_v1=true``) keeps every generated trajectory in TransferQueue and
builds each training batch with a replay buffer's ``sample``; its documented extension point is a custom
sampler (``trainer.v1.sampler.custom_sampler.{path,name}``), which ``baselines/verl/config/ragen_ppo.yaml`` sets
to this class. Per training step, in ``sample``:

1. verl's own sync sampling waits for ``train_batch_size`` finished groups (verl's ``uid``: the ``rollout.n``
   episodes of one env seed) and takes them;
2. their episode returns (``rm_scores`` summed; for a loop that writes several outputs per episode, the last
   one's) go through ``baselines.algos.filter.choose_groups`` unchanged (random-drop control included), as on
   the legacy trainer; a group that lost an episode (verl keeps a group whose session failed) is dropped, and
   counted in ``ragen/filter/incomplete_groups``;
3. ``apply: trim``: the dropped groups are cleared from TransferQueue and the batch holds the kept groups only;
   verl's v1 ``_balance_batch`` then pads it with no-op rows to a multiple of the mini-batch and data-parallel
   sizes, so, unlike the legacy trainer, no kept group is trimmed away. ``apply: mask``: every trajectory stays
   and the dropped groups' ``response_mask`` and ``loss_mask`` are zeroed in TransferQueue (no loss token);
4. an empty selection trains on nothing: the batch is discarded and a fresh one generated with the same weights
   (the legacy trainer instead spends a step without an update); after ``ragen.filter.stop_after_empty`` (5)
   empty selections in a row, :class:`~baselines.verl.filtering.FilterStop` ends the run with its reason.

Logged through the sampler's metrics (so they reach verl's logger): the learner's ``rollout/filter_*`` keys,
``ragen/prefilter/*`` of the whole batch, ``ragen/filter/empty_streak`` and ``ragen/filter/regenerated_batches``.
The options come through ``trainer.v1.sampler.sampler_kwargs``: ``ragen`` (the ``ragen`` section) and
``reward_variance_filtering`` (``algorithm.reward_variance_filtering``), which the shipped config wires in. The
MI family is scored inside the legacy trainer only (it needs the actor's log-probs, which a sampler cannot ask
for).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from baselines.verl.compat import require_verl
from baselines.verl.filtering import (
    EmptyStreak,
    RagenOptions,
    check_filter_config,
    groups_of,
    prefilter_metrics,
    select,
    selection_metrics,
    success_column,
)

require_verl()
import transfer_queue as tq  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402
from transfer_queue import KVBatchMeta  # noqa: E402
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, _accumulate_eviction_metrics  # noqa: E402

SAMPLER_PATH = "pkg://baselines.verl.sampler"
SAMPLER_NAME = "RagenReplayBuffer"


def _plain(value: Any) -> Any:
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig) else value


class RagenReplayBuffer(ReplayBuffer):
    """verl's sync ``ReplayBuffer`` whose training batches pass RAGEN-2's SNR filter (module docstring)."""

    def __init__(self, trainer_mode: str, *args, sampler_kwargs=None, **kwargs) -> None:
        if trainer_mode != "sync":
            raise ValueError(
                f"trainer.v1.trainer_mode must be sync for the SNR filter's sampler (RAGEN ranks the groups of one "
                f"generated batch), got {trainer_mode!r}"
            )
        super().__init__(trainer_mode, *args, sampler_kwargs=sampler_kwargs, **kwargs)
        values = _plain(sampler_kwargs) or {}
        self.options = RagenOptions.from_config(values.get("ragen"), values.get("reward_variance_filtering"))
        self.streak = EmptyStreak(self.options.filter_stop_after_empty)

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[KVBatchMeta, dict]:
        """verl's sync sample of ``batch_size`` groups, filtered (validation batches pass unfiltered)."""
        if partition_id == "val":
            return super().sample(global_steps, partition_id, batch_size)
        metrics: dict = {}
        regenerated = 0
        while True:
            batch, evictions = super().sample(global_steps, partition_id, batch_size)
            _accumulate_eviction_metrics(metrics, evictions, 0)
            kept, dropped, plan_metrics = self.plan(batch, global_steps)
            metrics.update(plan_metrics)
            metrics.update(self.streak.record(not kept))
            if kept:
                break
            tq.kv_clear(keys=batch.keys, partition_id=partition_id)  # nothing to learn from: generate anew
            if self.refill_fn is None:
                raise RuntimeError("RagenReplayBuffer needs verl's refill_fn to replace an empty selection")
            self.refill_fn(batch_size)
            regenerated += 1
        metrics["ragen/filter/regenerated_batches"] = float(regenerated)
        return self.apply(batch, dropped), metrics

    def plan(self, batch: KVBatchMeta, step: int = 0) -> tuple[set[str], set[str], dict[str, float]]:
        """(kept uids, dropped uids, metrics) for a sampled batch, from its trajectories in TransferQueue (``step``
        seeds the random-drop control's draw)."""
        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                               select_fields=["rm_scores", "extra_fields"])  # fmt: skip
        final: dict[str, tuple[int, int]] = {}  # "{uid}_{session}" -> (output index, row): an episode's last output
        for row, key in enumerate(batch.keys):
            uid, session, index = key.rsplit("_", 2)
            if f"{uid}_{session}" not in final or final[f"{uid}_{session}"][0] < int(index):
                final[f"{uid}_{session}"] = (int(index), row)
        rows = [row for _, row in final.values()]
        scores = list(data["rm_scores"])
        extras = [getattr(value, "data", value) for value in data["extra_fields"]]
        sessions = Counter(batch.keys[row].rsplit("_", 2)[0] for row in rows)
        # verl keeps a group whose episode failed (one session short); it has no spread comparable to the others'
        incomplete = {uid for uid, count in sessions.items() if count < max(sessions.values())}
        rows = [row for row in rows if batch.keys[row].rsplit("_", 2)[0] not in incomplete]
        per_row = np.array([float(scores[row].float().sum()) for row in rows])
        uids = [batch.keys[row].rsplit("_", 2)[0] for row in rows]
        order, _, returns = groups_of(uids, per_row)
        selected = select(returns, self.options, step)
        metrics = selection_metrics(returns, selected, selected)
        info = [(extras[row] or {}).get("reward_extra_info") if isinstance(extras[row], dict) else None for row in rows]
        metrics.update(prefilter_metrics(returns, success_column(info)))
        metrics["ragen/filter/incomplete_groups"] = float(len(incomplete))
        kept = {order[g] for g in selected}
        return kept, set(order) - kept | incomplete, metrics

    def apply(self, batch: KVBatchMeta, dropped: set[str]) -> KVBatchMeta:
        """The batch to train on: ``trim`` removes the dropped groups (and clears them from TransferQueue),
        ``mask`` keeps them with their response and loss masks zeroed."""
        drop_keys = [key for key in batch.keys if key.rsplit("_", 2)[0] in dropped]
        if not drop_keys:
            return batch
        if self.options.apply == "mask":
            masks = tq.kv_batch_get(keys=drop_keys, partition_id=batch.partition_id,
                                    select_fields=["response_mask", "loss_mask"])  # fmt: skip
            for name in ("response_mask", "loss_mask"):
                masks[name] = masks[name] * 0
            tq.kv_batch_put(keys=drop_keys, partition_id=batch.partition_id, fields=masks)
            return batch
        tq.kv_clear(keys=drop_keys, partition_id=batch.partition_id)
        keep = [i for i, key in enumerate(batch.keys) if key.rsplit("_", 2)[0] not in dropped]
        return KVBatchMeta(partition_id=batch.partition_id, keys=[batch.keys[i] for i in keep],
                           tags=[batch.tags[i] for i in keep], fields=batch.fields)  # fmt: skip


def check_v1_config(config) -> None:
    """The verl settings the v1 filter relies on, each failing with the fix."""
    check_filter_config(config)
    v1 = config.trainer.v1
    if v1.trainer_mode != "sync":
        raise ValueError(
            f"trainer.v1.trainer_mode must be sync for the SNR filter (RAGEN ranks the groups of one generated "
            f"batch), got {v1.trainer_mode!r}"
        )
    custom = v1.sampler.get("custom_sampler") or {}
    if (custom.get("path"), custom.get("name")) != (SAMPLER_PATH, SAMPLER_NAME):
        raise ValueError(
            f"trainer.v1.sampler.custom_sampler must be path={SAMPLER_PATH} name={SAMPLER_NAME} (the SNR filter's "
            f"sampler), got path={custom.get('path')} name={custom.get('name')}"
        )
    reward_model = config.reward.reward_model
    if reward_model.enable and not reward_model.get("enable_resource_pool", False):
        raise ValueError(
            "reward.reward_model.enable with a colocated reward model scores after sampling, so the SNR filter has "
            "no rm_scores to rank: use the ragen_agent loop's episode return (reward.reward_model.enable=false)"
        )
