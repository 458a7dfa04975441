"""The MI family inside a TRL run: a ``TrainerCallback`` scoring the pre-filter batch with the policy itself.

Every ``every`` optimiser steps (and at step 0, like the learner's ``mi_every``), on the episodes the rollout
function (or, on the ``environment_factory`` path, the environments) just played (all of them: the SNR filter's
choice does not matter here), the learner's diagnostics
(:func:`baselines.algos.mi.mi_family`: the harness's shared cross-scorer and
``harness.mi.estimator.collapse_metrics``) run with the trainer's model (entered as TRL enters it to generate: ZeRO-3 parameters gathered), with the learner's
options
(:class:`~baselines.algos.MIOptions`: samples, columns, schemes and the fixed probe). The hook is ``on_pre_optimizer_step``:
after the backward pass, before the weights move, so the policy scored is the one that sampled the batch,
as in the learner. Keys are ``collapse_first_turn/*`` and ``collapse_trajectory/*``, logged with the step's
other metrics (so they reach TensorBoard and W&B through ``report_to``).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from baselines.algos.mi import MIOptions, mi_family, records_family
from baselines.algos.rollout import RolloutSpec
from baselines.ppo.diagnostics import probe_family
from baselines.trl.compat import require_trl
from baselines.trl.env_factory import RagenToolEnv, ToolBatch
from baselines.trl.generation import policy_for_generation
from baselines.trl.rollout import EnvRollout
from harness.seeding import derive_seed

require_trl()
from transformers import TrainerCallback  # noqa: E402


class MICallback(TrainerCallback):
    """``callbacks=[MICallback(rollout, every=5)]`` next to ``rollout_func=rollout``, or
    ``callbacks=[MICallback(Env, every=5)]`` next to ``environment_factory=Env`` (``Env = tool_environment(env_id)``,
    with :func:`baselines.trl.env_return` among the reward functions: it hands the batch over). The options as
    ``mi=MIOptions(...)`` or as its fields (``every=5, samples=64``); ``seed`` seeds the draws (with the step)."""

    def __init__(
        self, rollout: EnvRollout | type[RagenToolEnv], mi: MIOptions | None = None, *, seed: int = 0, **fields
    ) -> None:
        tool_env = isinstance(rollout, type) and issubclass(rollout, RagenToolEnv)
        if not isinstance(rollout, EnvRollout) and not tool_env:
            raise ValueError(
                "MICallback needs the EnvRollout passed as rollout_func, or the tool_environment(...) class passed as "
                "environment_factory (it reads the batch played)"
            )
        self.mi = MIOptions.from_mapping({**dataclasses.asdict(mi or MIOptions()), **fields}, where="")
        if tool_env and self.mi.probe_seeds:
            raise ValueError("mi_probe_seeds must be 0 with environment_factory (the probe plays RAGEN's turns)")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
        self.rollout, self.seed = rollout, seed
        self._scored_call = -1
        self.history: list[dict[str, float]] = []

    def on_pre_optimizer_step(self, args, state, control, model=None, processing_class=None, **kwargs):
        """Every ``every`` optimiser steps, log the MI family of the batch just played, scored by the policy."""
        batch = self.rollout.last
        trainer = getattr(batch, "trainer", None) or getattr(self.rollout, "trainer", None)
        every = self.mi.every
        if not every or batch is None or batch.call == self._scored_call or state.global_step % every:
            return
        self._scored_call = batch.call  # steps_per_generation > 1: one batch serves several steps, scored once
        if trainer._dist.is_fsdp:
            raise ValueError(
                "MICallback does not support FSDP (one process scores the batch, and sharded forward passes need "
                "every process): drop the callback, or train with DeepSpeed ZeRO-3 or DDP"
            )
        tokenizer = processing_class if processing_class is not None else trainer.processing_class
        rng = np.random.default_rng(derive_seed("train-mi", self.seed, state.global_step))
        start = time.perf_counter()
        # every process enters (ZeRO-3 gathers the parameters collectively), the main one scores
        with policy_for_generation(trainer) as policy:
            if not state.is_world_process_zero:
                return
            if isinstance(batch, ToolBatch):
                env_id = batch.records[0]["env_id"] if batch.records else self.rollout.env_id
                spec = RolloutSpec(env_id=env_id, temperature=float(trainer.temperature), seed=self.seed)
                values = records_family(policy, tokenizer, batch.records, spec, self.mi, rng)
            else:
                spec = self.rollout.settings(trainer, trainer.num_generations)
                values = mi_family(policy, tokenizer, batch.episodes, spec, self.mi, rng)
                if self.mi.probe_seeds:
                    values.update(probe_family(policy, tokenizer, spec, self.mi, state.global_step))
        values["timing/mi_s"] = time.perf_counter() - start
        self.history.append({"step": float(state.global_step), **values})
        for key, value in values.items():
            trainer._metrics["train"][key].append(float(value))
