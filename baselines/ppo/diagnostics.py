"""Training-time diagnostics that play or score with the policy: the SNR gradient buckets (task, entropy and KL
gradient norms per reward-variance bucket of the pre-filter batch, RAGEN's gradient reporter) and the fixed MI
probe. The MI family itself, which every trainer logs, is :mod:`baselines.algos.mi`."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from baselines.algos.mi import MIOptions, mi_family
from baselines.algos.rollout import RolloutSpec
from baselines.ppo.batch import normalizer
from baselines.ppo.rollout import collect_rollouts
from harness.probe import probe_seeds
from harness.seeding import derive_seed
from harness.training_log import PROBE


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


def probe_family(
    policy,
    tokenizer,
    spec: RolloutSpec,
    options: MIOptions,
    step: int,
    *,
    sampler=None,
    model: str = "",
    threads: int = 0,
) -> dict[str, float]:
    """The fixed MI probe (``options.probe_seeds``): its episodes rolled out with ``policy`` and scored with the
    first-turn family, keyed ``probe_first_turn/*``, with the probe's success and token entropy. Its sampling seeds
    are its own (tagged ``probe``), so a trainer's rollouts are the same with or without it; its episodes are never
    trained on. ``sampler``: the learner's vLLM engine, synced before this step's rollouts."""
    seeds = probe_seeds(spec.env_id, spec.env_arguments(), options.probe_seeds)
    settings = dataclasses.replace(spec, samples_per_prompt=max(options.probe_samples, 2))
    tag = derive_seed("probe", step) % (2**31)
    episodes = collect_rollouts(policy, tokenizer, settings, tag, list(range(len(seeds))), sampler=sampler,
                                env_seeds=list(seeds))  # fmt: skip
    episodes = [e for e in episodes if e.sample < options.probe_samples]  # the rollouts' floor of 2 samples
    out = mi_family(policy, tokenizer, episodes, spec, options, step, model=model, threads=threads, prefix=PROBE,
                    schemes=["first_turn"])  # fmt: skip
    out["probe/success"] = float(np.mean([e.success for e in episodes]))
    entropies = [h for e in episodes for t in e.turns for h in t.sample_entropies]
    out["probe/token_entropy"] = float(np.mean(entropies)) if entropies else float("nan")
    return out
