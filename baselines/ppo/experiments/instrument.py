"""The instrument, validated where the truth is known: the MI family against a dose of input-agnostic reasoning.

``python -m baselines.ppo.experiments.instrument [--envs ragen/Bandit-v0,...] [--draws 20]``

For each env, the shipped tiny model rolls out the env's fixed probe (:func:`harness.probe.probe_seeds`: 16
prompts, pairwise distinguishable) with 4 samples each at T = 1. Then a *dosed* agent is built from its own
samples: with probability ``q`` each first-turn reasoning is replaced by one drawn uniformly from the pool of all
the model's first-turn reasonings on the probe, i.e. from its marginal p(z), which is the same distribution
whatever the input. At ``q = 0`` it is the model; at ``q = 1`` its reasoning carries no information about the
prompt, by construction, while every reasoning is still a sample of the same model (the scored text stays on the
scorer's distribution). The first-turn MI family is scored by the tiny model, for ``q`` ∈ {0, 0.25, 0.5, 0.75, 1}
and ``--draws`` replacement draws per ``q``; the model's token entropy moves with each reasoning it swaps in.

What the paper claims of the instrument, checked here: the MI estimate, retrieval accuracy and MI z-score fall
monotonically with ``q`` (MI → 0, retrieval → chance), while token entropy and the H(Z|X) estimate do not fall:
entropy cannot see this collapse. Two scorer paths are checked: the harness's ``hf:`` agent on harness rollouts,
and the learner's training-time path (its rollouts, episode records and policy scorer) on the shipped checkpoint.

Writes ``docs/results/data/instrument/<path>_<env>.json`` (every draw) and, with
:mod:`~baselines.ppo.experiments.instrument_report`, ``docs/results/instrument.md`` and its figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import numpy as np

from baselines.ppo.experiments.driver import MODEL, ROOT, commit_of, write_record

DATA = ROOT / "docs" / "results" / "data" / "instrument"
COMMAND = "python -m baselines.ppo.experiments.instrument"
ENVS = {"ragen/Bandit-v0": {}, "ragen/FrozenLake-v0": {}, "ragen/Sokoban-v0": {}}
DOSES = (0.0, 0.25, 0.5, 0.75, 1.0)
PROBE = 16
SAMPLES = 4
MAX_NEW_TOKENS = 96
KEYS = ("mi_estimate", "retrieval_accuracy", "mi_zscore", "retrieval_chance", "cond_entropy_estimate",
        "reasoning_entropy_estimate", "mi_estimate_seq")  # fmt: skip
FALLS = ("mi_estimate", "retrieval_accuracy", "mi_zscore")
"""Proxies that must fall monotonically with the dose."""
BLIND = ("token_entropy", "cond_entropy_estimate")
"""Signals that must not fall with the dose (entropy does not see input-agnostic reasoning)."""


def harness_records(env_id: str, kwargs: dict) -> tuple[list[dict], object]:
    """The tiny model's probe episodes through the harness (its ``hf:`` agent and lockstep rollout), and the agent."""
    from harness.agents.options import AgentOptions
    from harness.agents.registry import make_agent
    from harness.config import EnvPlan, RunConfig
    from harness.probe import probe_seeds
    from harness.rollout import EnvPool, Job, rollout_chunk

    spec = f"hf:{MODEL}"
    options = AgentOptions(temperature=1.0, max_new_tokens=MAX_NEW_TOKENS, device="cpu", dtype="float32")
    agent = make_agent(spec, options)
    config = RunConfig(agents=(spec,), envs=(EnvPlan(env_id, PROBE, SAMPLES, kwargs=kwargs),), agent_options=options)
    seeds = probe_seeds(env_id, kwargs, PROBE)
    jobs = [Job(spec, env_id, seed, sample) for seed in seeds for sample in range(SAMPLES)]
    return list(rollout_chunk(agent, config, jobs, EnvPool(config))), agent


def learner_records(env_id: str, kwargs: dict) -> tuple[list[dict], object]:
    """The same probe through the learner's training-time path: its rollout loop on the shipped checkpoint, its
    episode records and its policy scorer (:func:`baselines.algos.mi.policy_agent`)."""
    import transformers

    from baselines.algos.mi import episode_records, policy_agent
    from baselines.ppo.config import PPOConfig
    from baselines.ppo.rollout import collect_rollouts
    from harness.probe import probe_seeds

    config = PPOConfig(model=str(MODEL), env_id=env_id, env_kwargs=kwargs, samples_per_prompt=SAMPLES,
                       max_new_tokens=MAX_NEW_TOKENS, temperature=1.0, device="cpu", dtype="float32",
                       tensorboard=False, cpu_threads=1)  # fmt: skip
    tokenizer = transformers.AutoTokenizer.from_pretrained(config.model)
    policy = transformers.AutoModelForCausalLM.from_pretrained(config.model).eval()
    seeds = list(probe_seeds(env_id, kwargs, PROBE))
    episodes = collect_rollouts(policy, tokenizer, config, 0, list(range(len(seeds))), env_seeds=seeds)
    records = episode_records(episodes, config)
    for record, episode in zip(records, episodes, strict=True):  # the token entropy the learner logs, per turn
        for turn, sample in zip(record["turns"], episode.turns, strict=True):
            turn["tokens"] = len(sample.sample_entropies)
            turn["entropy_sum"] = float(np.sum(sample.sample_entropies))
    return records, policy_agent(policy, tokenizer, config.temperature, model=config.model, threads=config.cpu_threads)


def dosed_pairs(pairs, pool_texts: list[str], q: float, rng: np.random.Generator):
    """``pairs`` with each reasoning replaced, with probability ``q``, by one drawn uniformly from ``pool_texts``;
    also returns, per row, the index into the pool of the text it now holds (its own for a kept one)."""
    texts, sources = [], []
    own_index = {t: i for i, t in reversed(list(enumerate(pool_texts)))}
    for text in pairs.texts:
        if rng.random() < q:
            pick = int(rng.integers(len(pool_texts)))
            texts.append(pool_texts[pick])
            sources.append(pick)
        else:
            texts.append(text)
            sources.append(own_index[text])
    return dataclasses.replace(pairs, texts=texts), sources


def dose_response(records: list[dict], agent, draws: int, seed: int = 0) -> dict:
    """The first-turn MI family of the dosed agent for every dose and draw (one dense scoring, then lookups)."""
    from harness.mi import first_turn_pairs, score_pairs

    pairs = first_turn_pairs(records, np.random.default_rng(seed), len(records))
    eligible = [r for r in records if r["turns"] and r["turns"][0].get("reasoning")]
    by_text = {r["turns"][0]["reasoning"]: r["turns"][0] for r in eligible}
    pool = list(pairs.texts)
    entropy = [by_text[t].get("entropy_sum", np.nan) / max(by_text[t].get("tokens") or 1, 1) for t in pool]
    memo: dict = {}
    score_pairs(agent, pairs, memo)  # dense: every pool text under every probe prompt, so each dose only looks up
    rng = np.random.default_rng(seed)
    out: dict = {"doses": list(DOSES), "draws": draws, "rows": len(pool), "prompts": len(pairs.contexts), "by_dose": {}}
    for q in DOSES:
        results = []
        for _ in range(draws if q > 0 else 1):  # q = 0 replaces nothing: one draw
            dosed, sources = dosed_pairs(pairs, pool, q, rng)
            family = score_pairs(agent, dosed, memo)
            values = {k: family[k].value for k in KEYS if k in family}
            values.update({f"{k}_stderr": family[k].stderr for k in KEYS if k in family})
            values["token_entropy"] = float(np.nanmean([entropy[i] for i in sources]))
            values["replaced"] = float(
                np.mean([texts != orig for texts, orig in zip(dosed.texts, pairs.texts, strict=True)])
            )
            results.append(values)
        out["by_dose"][str(q)] = results
    return out


SAMPLER_SEEDS = 20


def sampler_spread(records: list[dict], agent, seeds: int = SAMPLER_SEEDS, mi_samples: int = 64) -> dict:
    """The trajectory scheme on the same episodes with ``seeds`` sampler seeds: per proxy, the spread of the
    values over the seeds beside the mean standard error each seed reported (the draw-level bootstrap)."""
    from harness.mi import collapse_for

    values: dict[str, list[float]] = {}
    errors: dict[str, list[float]] = {}
    memo: dict = {}  # the seeds redraw mostly the same turns: each (context, text) is scored once
    for seed in range(seeds):
        family = collapse_for(agent, records, run_seed=seed, mi_samples=mi_samples, schemes=["trajectory"], memo=memo)
        metrics = family["trajectory"]
        if isinstance(metrics, str):
            return {"unavailable": metrics}
        for key in KEYS:
            if key in metrics and np.isfinite(metrics[key].value):
                values.setdefault(key, []).append(metrics[key].value)
                errors.setdefault(key, []).append(metrics[key].stderr)
    return {key: {"sd_over_seeds": float(np.std(v, ddof=1)), "mean_stderr": float(np.nanmean(errors[key])),
                  "mean": float(np.mean(v)), "seeds": len(v)} for key, v in values.items()}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the dose-response for each env and scorer path; writes one data file each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default=",".join(ENVS), help="comma-separated env ids")
    parser.add_argument("--paths", default="harness,learner", help="scorer paths: harness, learner")
    parser.add_argument("--draws", type=int, default=20, help="replacement draws per dose (q strictly between 0 and 1)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    for env_id in [e.strip() for e in args.envs.split(",") if e.strip()]:
        for path in [p.strip() for p in args.paths.split(",") if p.strip()]:
            started = time.time()
            collect = harness_records if path == "harness" else learner_records
            records, agent = collect(env_id, ENVS.get(env_id, {}))
            result = dose_response(records, agent, args.draws)
            if path == "harness":
                result["trajectory_sampler_spread"] = sampler_spread(records, agent)
            name = env_id.split("/")[-1]
            record = {"env_id": env_id, "env_kwargs": ENVS.get(env_id, {}), "path": path, "model": "baselines/tiny/model",
                      "probe_prompts": PROBE, "samples": SAMPLES, "max_new_tokens": MAX_NEW_TOKENS,
                      "vocab_size": len(agent.tokenizer) if hasattr(agent, "tokenizer") else None,
                      "model_commit": commit_of(MODEL), "code_commit": commit_of(None), "command": COMMAND,
                      "finished_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                      "wall_s": round(time.time() - started, 1), **result}  # fmt: skip
            write_record(DATA / f"{path}_{name}.json", record)
            print(f"{path} {env_id}: {record['rows']} reasonings, {record['prompts']} prompts, {record['wall_s']} s",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
