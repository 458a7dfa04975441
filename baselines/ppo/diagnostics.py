"""Training-time diagnostics on the pre-filter batch: the MI family and the SNR gradient buckets.

MI: the harness's estimator itself (``harness.mi.collapse_for``: the same first-turn and trajectory-uniform
samplers, prompt equivalence and family), run on the iteration's episodes written as harness records, with the
current policy as the scoring agent (:func:`policy_agent`, an ``hf:`` agent over the in-memory model). The same
episodes therefore give the same numbers here and in ``harness`` (tested). The draws are seeded by the run seed
and the iteration. ``collapse_first_turn/valid_rate`` is the fraction of episodes whose first turn carries
reasoning; ``collapse_first_turn/retrieval_accuracy_itt`` counts a first turn without reasoning as a retrieval
miss (intention to treat: a policy that stops reasoning cannot look input-dependent by dropping its rows).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch

from baselines.ppo.batch import normalizer
from baselines.ppo.rollout import Episode
from harness.agents.hf import HFAgent
from harness.agents.options import AgentOptions
from harness.mi import SCHEMES, collapse_for
from harness.probe import batch_ceilings
from harness.records import EpisodeRecord
from harness.seeding import derive_seed
from ragen_envs.parsing import reasoning_of


def _response_format(config, turn) -> str:
    """The env's response format; a caller's bare settings object without ``env_id`` (an adapter) is read from
    the turn's prefill: ``think`` when it opens ``<think>``, else ``answer``."""
    env_id = getattr(config, "env_id", None)
    if env_id is None:
        return "think" if turn.context.prefill.strip() == "<think>" else "answer"
    kwargs = dict(getattr(config, "env_kwargs", None) or {})
    return gym.make(env_id, **kwargs).unwrapped.response_format


def episode_records(episodes: list[Episode], config) -> list[EpisodeRecord]:
    """The learner's episodes as harness episode records, with the fields the MI family reads.

    A turn's chat is stored as the harness stores it (the instructions once, each turn's new user message, the
    window as ``context_turns``): the learner builds its contexts with the harness's ``build_context``, so
    :func:`harness.transcript.record_messages` rebuilds each turn's chat exactly. The env's step infos are not
    kept by the learner, so the records have none.
    """
    kwargs = dict(getattr(config, "env_kwargs", None) or {})
    if getattr(config, "max_turns", None) is not None:
        kwargs["max_turns"] = config.max_turns
    env_id = getattr(config, "env_id", None) or "unknown"
    response_format = None
    records: list[EpisodeRecord] = []
    for e in episodes:
        if response_format is None and e.turns:
            response_format = _response_format(config, e.turns[0])
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
        records.append({"env_id": env_id, "env_kwargs": kwargs, "seed": e.env_seed, "sample": e.sample,
                        "context_turns": getattr(config, "context_turns", None), "instructions": instructions,
                        "turns": turns, "return": e.episode_return, "success": e.success, "num_turns": len(turns)})  # fmt: skip
    return records


def policy_agent(policy, tokenizer, config) -> HFAgent:
    """The policy as an ``hf:`` scoring agent (same spec as ``harness`` would give the model directory, so the
    harness's draws are the same), scoring on the learner's thread budget."""
    threads = getattr(config, "cpu_threads", 0) or torch.get_num_threads()
    agent = HFAgent(policy, tokenizer, AgentOptions(temperature=config.temperature, extra={"score_threads": threads}))
    agent.spec = f"hf:{getattr(config, 'model', '') or 'policy'}"
    return agent


def mi_family(
    policy,
    tokenizer,
    episodes: list[Episode],
    config,
    draws: int | np.random.Generator,
    *,
    prefix: str = "collapse",
    schemes: list[str] | None = None,
) -> dict:
    """The configured schemes; keys ``<prefix>_first_turn/<metric>`` and ``<prefix>_trajectory/<metric>``.

    ``draws``: the learner's iteration (the harness's draws are then seeded by the run seed and it), or a
    generator that seeds them. ``config`` needs ``mi_samples`` and ``temperature``; ``env_id``, ``env_kwargs``,
    ``max_turns``, ``model``, ``seed``, ``mi_schemes`` (default both) and ``cpu_threads`` are read when present.
    With an ``env_id``, the first-turn family also carries the batch's retrieval ceilings
    (``harness.probe.batch_ceilings``: ``ceiling/<feature>``, ``shared_features``).
    """
    records = episode_records(episodes, config)
    agent = policy_agent(policy, tokenizer, config)
    if isinstance(draws, np.random.Generator):
        run_seed = int(draws.integers(2**62))
    else:
        run_seed = derive_seed("train-mi", getattr(config, "seed", 0), int(draws))
    schemes = list(schemes or getattr(config, "mi_schemes", None) or SCHEMES)
    results = collapse_for(agent, records, run_seed, config.mi_samples, schemes=schemes)
    out = family_log(results, records, schemes, prefix)
    if "first_turn" in schemes and getattr(config, "env_id", None):
        out.update({f"{prefix}_first_turn/{k}": v for k, v in batch_ceilings(records).items()})
    return out


def family_log(results: dict, records: list[dict], schemes: list[str], prefix: str = "collapse") -> dict[str, float]:
    """``harness.mi.collapse_for``'s results as the learner logs them (also the verl and TRL adapters')."""
    out: dict[str, float] = {}
    for scheme, metrics in results.items():
        if isinstance(metrics, str):  # unavailable (e.g. no turn has reasoning): no pairs, the family absent
            out[f"{prefix}_{scheme}/num_pairs"] = 0.0
            continue
        out[f"{prefix}_{scheme}/num_pairs"] = float(metrics["mi_estimate"].n)
        for name, estimate in metrics.items():
            if np.isfinite(estimate.value):  # a metric the harness reports as unavailable (NaN) is left out
                out[f"{prefix}_{scheme}/{name}"] = float(estimate.value)
    if "first_turn" in schemes and records:
        valid = float(np.mean([bool(r["turns"] and r["turns"][0]["reasoning"]) for r in records]))
        key = f"{prefix}_first_turn"
        out[f"{key}/valid_rate"] = valid
        if f"{key}/retrieval_accuracy" in out or valid == 0:  # no reasoning at all: every turn a miss
            out[f"{key}/retrieval_accuracy_itt"] = out.get(f"{key}/retrieval_accuracy", 0.0) * valid
    return out


def grad_norm_buckets(rows_by_group: dict[int, list], group_std: dict[int, float], policy, config, loss_parts) -> dict:
    """The SNR mechanism, measured as RAGEN's gradient reporter does (no optimiser step).

    Groups are sorted by reward std and split into ``grad_buckets`` quantile buckets (bucket 0 lowest). Each
    bucket is cut into minibatches of ``minibatch_size`` rows, as an update would be; per minibatch, the task,
    entropy and KL terms each get their own gradient (summed over micro-batches), and the norms are averaged
    over the bucket's minibatches. Two readings are logged:

    - ``grad_norm/bucket<i>/{task,entropy,kl}``: RAGEN's, the terms *as they enter the loss*: ‖∇ L_pg‖,
      ‖∇ (−c_H·H)‖ = c_H·‖∇H‖ and ‖∇ (c_KL·KL)‖; entropy only when ``entropy_coef`` > 0 and KL only with a
      reference model (as RAGEN skips a component whose coefficient is off);
    - ``grad_norm_raw/bucket<i>/{entropy,kl}``: the same without the coefficient, ‖∇H‖ and ‖∇KL‖ (KL with a
      reference model only), to compare the directions' sizes whatever the coefficient.

    ``loss_parts(rows, denominator) -> (task, entropy, kl)`` gives the micro-batch terms divided by the
    minibatch's normaliser. Also logged per bucket: ``reward_std`` (mean over its groups) and ``groups``.
    """
    ordered = sorted(rows_by_group, key=lambda g: (group_std[g], g))
    buckets = [b for b in np.array_split(np.array(ordered), config.grad_buckets) if len(b)]
    params = [p for p in policy.parameters() if p.requires_grad]
    has_kl = config.kl_coef > 0
    out: dict[str, float] = {}
    for index, bucket in enumerate(buckets):
        rows = [row for g in bucket for row in rows_by_group[int(g)]]
        out[f"grad_norm/bucket{index}/reward_std"] = float(np.mean([group_std[int(g)] for g in bucket]))
        out[f"grad_norm/bucket{index}/groups"] = float(len(bucket))
        norms: dict[str, list[float]] = {}
        num_minibatches = max(1, -(-len(rows) // config.minibatch_size))
        for part in np.array_split(np.arange(len(rows)), num_minibatches):
            minibatch = [rows[i] for i in part]
            denominator = normalizer(minibatch, config)
            sums: dict[str, list[torch.Tensor]] = {}
            for start in range(0, len(minibatch), config.micro_batch_size):
                task, entropy, kl = loss_parts(minibatch[start : start + config.micro_batch_size], denominator)
                terms = {"task": task, "entropy": entropy, "kl": kl}
                for name, term in terms.items():
                    if not term.requires_grad or (name == "kl" and not has_kl):
                        continue
                    grads = torch.autograd.grad(term, params, retain_graph=True, allow_unused=True)
                    grads = [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads, strict=True)]
                    if name in sums:
                        sums[name] = [a + b for a, b in zip(sums[name], grads, strict=True)]
                    else:
                        sums[name] = grads
            for name, grads in sums.items():
                norm = float(torch.sqrt(sum((g.float() ** 2).sum() for g in grads)))
                if name == "task":
                    norms.setdefault("grad_norm/{}/task", []).append(norm)
                    continue
                coefficient = config.entropy_coef if name == "entropy" else config.kl_coef
                norms.setdefault(f"grad_norm_raw/{{}}/{name}", []).append(norm)
                if coefficient > 0:
                    norms.setdefault(f"grad_norm/{{}}/{name}", []).append(coefficient * norm)
        for key, values in norms.items():
            out[key.format(f"bucket{index}")] = float(np.mean(values))
    return out
