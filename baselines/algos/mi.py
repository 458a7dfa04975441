"""The MI family during training, shared by every trainer: its options (:class:`MIOptions`), the episodes written
as harness records, the policy as a scoring agent, and the keys it is logged under.

MI: the harness's estimator itself (``harness.mi.collapse_for``: the same first-turn and trajectory-uniform
samplers, prompt equivalence and family), run on a batch's episodes written as harness records, with the current
policy as the scoring agent (:func:`policy_agent`, an ``hf:`` agent over the in-memory model). The same episodes
therefore give the same numbers here and in ``harness`` (tested). ``collapse_first_turn/valid_rate`` is the
fraction of episodes whose first turn carries reasoning; ``collapse_first_turn/retrieval_accuracy_itt`` counts a
first turn without reasoning as a retrieval miss (intention to treat: a policy that stops reasoning cannot look
input-dependent by dropping its rows).

An episode here is the learner's (``baselines.ppo.rollout.Episode``: ``turns`` of ``TurnSample``, ``env_seed``,
``sample``, ``episode_return``, ``success``), which the TRL adapter's rollouts also produce.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from baselines.algos.filter import known_fields
from baselines.algos.rollout import RolloutSpec
from harness.mi import SCHEMES, collapse_for
from harness.probe import batch_ceilings
from harness.records import EpisodeRecord
from harness.seeding import derive_seed
from harness.training_log import BATCH, mi_key
from ragen_envs.core import check_choice, check_range
from ragen_envs.parsing import reasoning_of


@dataclass(frozen=True)
class MIOptions:
    """When and how the MI family is measured during training: the learner's ``mi_*`` flags, ``MICallback(mi=...)``
    in TRL and verl's ``ragen.mi`` section. Errors name a field by its flag spelling (``mi_<field>``)."""

    every: int = 5
    """Compute the MI family every k iterations (and at iteration 0); 0 disables."""
    samples: int = 64
    """Pairs drawn for each MI sampling scheme."""
    columns: int | None = None
    """Score each row under this many columns instead of all (the harness's ``mi_columns``); None scores every
    column."""
    schemes: tuple[str, ...] = SCHEMES
    """Which MI sampling schemes to compute (``first_turn``, ``trajectory``; the harness's samplers); on the
    command line comma-separated (``--mi-schemes first_turn``)."""
    probe_seeds: int = 0
    """Fixed MI probe: this many env seeds whose first prompts are pairwise distinguishable
    (``harness.probe.probe_seeds``), rolled out at every MI iteration, scored with the first-turn family
    (``probe_first_turn/*``) and never trained on: the same prompts at every reading, so its MI moves with the
    policy only, not with the batch's seeds; 0 disables."""
    probe_samples: int = 4
    """Rollouts per probe seed."""

    def __post_init__(self) -> None:
        schemes = self.schemes
        if isinstance(schemes, str):  # the command line's form: comma-separated names
            schemes = [name.strip() for name in schemes.split(",") if name.strip()]
        object.__setattr__(self, "schemes", tuple(schemes))
        for scheme in self.schemes:
            check_choice("mi_schemes", scheme, SCHEMES)
        for name in ("every", "samples", "probe_seeds"):
            check_range(f"mi_{name}", getattr(self, name), 0, integer=True)
        check_range("mi_probe_samples", self.probe_samples, 1, integer=True)
        if self.probe_seeds == 1:
            raise ValueError("mi_probe_seeds must be 0 (no probe) or at least 2 (nothing to retrieve among one), got 1")
        if self.columns is not None:
            check_range("mi_columns", self.columns, 2, integer=True)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "mi_") -> MIOptions:
        """From a mapping of field names; an unknown key raises naming ``<where><key>`` and the allowed keys."""
        return cls(**known_fields(cls, values, where))


def _response_format(spec: RolloutSpec) -> str:
    return gym.make(spec.env_id, **dict(spec.env_kwargs)).unwrapped.response_format


def episode_records(episodes: Sequence, spec: RolloutSpec) -> list[EpisodeRecord]:
    """Episodes played under ``spec`` as harness episode records, with the fields the MI family reads.

    A turn's chat is stored as the harness stores it (the instructions once, each turn's new user message, the
    window as ``context_turns``): the rollouts build their contexts with the harness's ``build_context``, so
    :func:`harness.transcript.record_messages` rebuilds each turn's chat exactly. The env's step infos are not
    kept by the rollouts, so the records have none.
    """
    kwargs = spec.env_arguments()
    response_format = None
    records: list[EpisodeRecord] = []
    for e in episodes:
        if response_format is None and e.turns:
            response_format = _response_format(spec)
        turns = [
            {
                "turn": t.turn,
                "user": t.context.messages[-1]["content"],
                "prefill": t.context.prefill,
                "response": t.response_text,
                "reasoning": reasoning_of(t.response_text, response_format),
                "reward": t.reward,
            }
            for t in e.turns
        ]
        instructions = e.turns[0].context.messages[0]["content"] if e.turns else ""
        records.append({"env_id": spec.env_id, "env_kwargs": kwargs, "seed": e.env_seed, "sample": e.sample,
                        "context_turns": spec.context_turns, "instructions": instructions,
                        "turns": turns, "return": e.episode_return, "success": e.success, "num_turns": len(turns)})  # fmt: skip
    return records


def policy_agent(policy, tokenizer, temperature: float, *, model: str = "", threads: int = 0):
    """The policy as an ``hf:`` scoring agent (same spec as ``harness`` would give the model directory ``model``, so
    the harness's draws are the same), scoring on ``threads`` torch threads (0: torch's current count)."""
    import torch

    from harness.agents.hf import HFAgent
    from harness.agents.options import AgentOptions

    threads = threads or torch.get_num_threads()
    agent = HFAgent(policy, tokenizer, AgentOptions(temperature=temperature, extra={"score_threads": threads}))
    agent.spec = f"hf:{model or 'policy'}"
    return agent


def mi_family(
    policy,
    tokenizer,
    episodes: Sequence,
    spec: RolloutSpec,
    options: MIOptions,
    draws: int | np.random.Generator,
    *,
    model: str = "",
    threads: int = 0,
    prefix: str = BATCH,
    schemes: Sequence[str] | None = None,
) -> dict[str, float]:
    """The family of ``episodes`` (played under ``spec``) scored by ``policy``: keys ``<prefix>_first_turn/<metric>``
    and ``<prefix>_trajectory/<metric>``, the first-turn family with the batch's retrieval ceilings
    (``harness.probe.batch_ceilings``: ``ceiling/<feature>``, ``shared_features``).

    ``draws``: a step (the harness's draws are then seeded by ``spec.seed`` and it), or a generator that seeds
    them. ``schemes`` overrides ``options.schemes`` (the probe's first-turn family).
    """
    records = episode_records(episodes, spec)
    return records_family(
        policy, tokenizer, records, spec, options, draws, model=model, threads=threads, prefix=prefix, schemes=schemes
    )


def records_family(
    policy,
    tokenizer,
    records: list[EpisodeRecord],
    spec: RolloutSpec,
    options: MIOptions,
    draws: int | np.random.Generator,
    *,
    model: str = "",
    threads: int = 0,
    prefix: str = BATCH,
    schemes: Sequence[str] | None = None,
) -> dict[str, float]:
    """:func:`mi_family` of episodes already written as harness records (TRL's ``environment_factory`` path writes
    them from its tool-calling rollouts); ``spec`` gives the temperature and the run seed."""
    agent = policy_agent(policy, tokenizer, spec.temperature, model=model, threads=threads)
    if isinstance(draws, np.random.Generator):
        run_seed = int(draws.integers(2**62))
    else:
        run_seed = derive_seed("train-mi", spec.seed, int(draws))
    schemes = list(schemes or options.schemes or SCHEMES)
    results = collapse_for(agent, records, run_seed, options.samples, options.columns, schemes=schemes)
    out = family_log(results, records, schemes, prefix)
    if "first_turn" in schemes:
        out.update({mi_key(prefix, "first_turn", k): v for k, v in batch_ceilings(records).items()})
    return out


def family_log(results: dict, records: list[dict], schemes: Sequence[str], prefix: str = BATCH) -> dict[str, float]:
    """``harness.mi.collapse_for``'s results as every trainer logs them."""
    out: dict[str, float] = {}
    for scheme, metrics in results.items():
        if isinstance(metrics, str):  # unavailable (e.g. no turn has reasoning): no pairs, the family absent
            out[mi_key(prefix, scheme, "num_pairs")] = 0.0
            continue
        out[mi_key(prefix, scheme, "num_pairs")] = float(metrics["mi_estimate"].n)
        for name, estimate in metrics.items():
            if np.isfinite(estimate.value):  # a metric the harness reports as unavailable (NaN) is left out
                out[mi_key(prefix, scheme, name)] = float(estimate.value)
    if "first_turn" in schemes and records:
        valid = float(np.mean([bool(r["turns"] and r["turns"][0]["reasoning"]) for r in records]))
        retrieval = mi_key(prefix, "first_turn", "retrieval_accuracy")
        out[mi_key(prefix, "first_turn", "valid_rate")] = valid
        if retrieval in out or valid == 0:  # no reasoning at all: every turn a miss
            out[mi_key(prefix, "first_turn", "retrieval_accuracy_itt")] = out.get(retrieval, 0.0) * valid
    return out
