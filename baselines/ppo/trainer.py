"""The reference learner: rollouts → SNR filter → old log-probs/values/advantages → PPO/GRPO updates.

One iteration (``Trainer.iteration``):
  1. ``prompts_per_iteration`` groups × ``samples_per_prompt`` multi-turn rollouts, each group on one env seed;
  2. diagnostics on the *pre-filter* batch: success, return, token entropy, the MI family every ``mi_every``
     iterations, the SNR gradient buckets every ``grad_buckets_every`` iterations;
  3. the SNR filter (``baselines.algos.filter.choose_groups``) on the raw returns; whole groups are dropped here,
     before anything else is computed; an empty selection skips the update (logged as
     ``rollout/empty_after_filter``). With ``filter.selection="random"`` the same number of groups is kept, drawn
     at random (a control);
  4. old log-probs, values (critic, GAE, whitened over the kept batch) or group-relative advantages (GRPO,
     Dr.GRPO), optional reference log-probs for a KL loss; old log-probs are skipped when the update is one
     optimiser step on the whole batch (``ppo_epochs`` 1, every row in one minibatch): the loss then uses its
     own log-probs, detached, as verl and TRL do on-policy (``batch.single_step``);
  5. ``ppo_epochs`` passes of minibatches with gradient accumulation over micro-batches; under ``torchrun``
     every rank rolls out its share of the groups, and DDP (or FSDP2, ``data_parallel``) sums the gradients
     across ranks under one global token normaliser, so N ranks make the update one process makes on the
     combined batch (``baselines.ppo.distributed``).
Logs go to ``out_dir/metrics.jsonl``, ``metrics.csv``, TensorBoard and, with ``report_to="wandb"``, Weights &
Biases (``baselines.ppo.tracking``); ``out_dir/checkpoint.safetensors`` (tensors and JSON, never a pickle) resumes exactly.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from baselines.algos.filter import choose_groups, drop_draws, filter_stats
from baselines.algos.mi import mi_family
from baselines.algos.returns import group_returns
from baselines.ppo import batch as B
from baselines.ppo import checkpoint
from baselines.ppo import losses as L
from baselines.ppo.config import PPOConfig
from baselines.ppo.diagnostics import grad_norm_buckets, probe_family
from baselines.ppo.distributed import Distributed
from baselines.ppo.generation import SpanLogprobs
from baselines.ppo.rollout import collect_rollouts
from baselines.ppo.tracking import open_trackers, parse_report_to
from harness.seeding import derive_seed
from harness.training_log import ITERATION, METRICS_FILE, RETURN, SUCCESS, TOKEN_ENTROPY

__all__ = [
    "MetricsWriter",
    "Trainer",
]


def _lazy_transformers():
    try:
        import transformers
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError("The learner needs transformers: pip install 'ragen-envs[llm]'") from error
    return transformers


def _mean_or_nan(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def resolve_dtype(name: str, device: torch.device) -> torch.dtype:
    """The weights' torch dtype ``name`` means on ``device``: ``auto`` is bfloat16 on CUDA, float32 on CPU;
    ``bfloat16-autocast`` keeps fp32 weights (bf16 only inside the update, ``losses.update_precision``)."""
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "bfloat16-autocast": torch.float32}[name]


class MetricsWriter:
    """Append-only JSONL, a CSV rewritten from it, and TensorBoard scalars (rank 0 only)."""

    def __init__(self, out_dir: Path, tensorboard: bool, trackers: list | None = None) -> None:
        self.jsonl = out_dir / METRICS_FILE
        self.csv = out_dir / "metrics.csv"
        self.trackers = trackers or []  # baselines.ppo.tracking: W&B
        self.tb = None
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as error:
                raise ImportError(
                    "tensorboard=True needs the tensorboard package: pip install 'ragen-envs[train]' "
                    "(or pass tensorboard=False)"
                ) from error
            self.tb = SummaryWriter(str(out_dir / "tensorboard"))

    def rows(self) -> list[dict]:
        """Every row logged so far in ``metrics.jsonl``."""
        if not self.jsonl.exists():
            return []
        return [json.loads(line) for line in self.jsonl.read_text().splitlines() if line.strip()]

    def truncate_after(self, iteration: int) -> None:
        """Drop rows logged after ``iteration`` (an interrupted run resumed from an earlier checkpoint)."""
        kept = [row for row in self.rows() if row["iteration"] <= iteration]
        self.jsonl.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in kept))

    def write(self, row: dict) -> None:
        """Log one iteration's row to ``metrics.jsonl``, the CSV, TensorBoard and the trackers."""
        with self.jsonl.open("a") as handle:
            handle.write(json.dumps(row, sort_keys=True) + "\n")
            handle.flush()
        rows = self.rows()
        keys = sorted({k for r in rows for k in r})
        with self.csv.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=keys)
            writer.writeheader()
            writer.writerows(rows)
        if self.tb is not None:
            for key, value in row.items():
                if isinstance(value, (int, float)) and key != "iteration" and np.isfinite(value):
                    self.tb.add_scalar(key, value, row["iteration"])
            self.tb.flush()
        for tracker in self.trackers:
            tracker.log(row)

    def close(self) -> None:
        """Close TensorBoard and the trackers."""
        if self.tb is not None:
            self.tb.close()
        for tracker in self.trackers:
            tracker.close()


class Trainer:
    """Holds the models, optimisers and logs of one run; ``train()`` runs all iterations."""

    def __init__(self, config: PPOConfig) -> None:
        transformers = _lazy_transformers()
        self.config = config
        self.dist = Distributed(config.device, config.data_parallel)
        self.device = self.dist.device
        dtype = resolve_dtype(config.dtype, self.device)
        if config.cpu_threads:
            torch.set_num_threads(config.cpu_threads)
        torch.manual_seed(config.seed)
        torch.use_deterministic_algorithms(True, warn_only=True)
        load = dict(dtype=dtype)
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(config.model)
        self.policy = transformers.AutoModelForCausalLM.from_pretrained(config.model, **load).to(self.device)
        if config.gradient_checkpointing:
            self.policy.gradient_checkpointing_enable()
        self.reference = None
        if config.kl_coef > 0:
            self.reference = transformers.AutoModelForCausalLM.from_pretrained(config.model, **load).to(self.device)
            self.reference.eval().requires_grad_(False)
        self.critic = None
        self.critic_optimizer = None
        if config.advantage == "gae":
            backbone = transformers.AutoModelForCausalLM.from_pretrained(config.model, **load)
            self.critic = B.ValueModel(backbone).to(self.device)
        # what the update's forward and backward run through: the models themselves in one process, else under
        # the data-parallel engine; the optimisers come after it (FSDP2 turns the parameters into shards)
        self.train_policy = self.dist.wrap(SpanLogprobs(self.policy))
        self.train_critic = self.dist.wrap(self.critic, unused_parameters=True) if self.critic else None
        if self.dist.sharded:  # FSDP2 makes the first module run its root: the engine, not a layer in a rollout
            with torch.no_grad():
                for engine in filter(None, self._engines):
                    engine([[0, 0]], [[(1, 2)]])
        if self.critic is not None:
            self.critic_optimizer = torch.optim.AdamW(
                self.critic.parameters(), lr=config.critic_lr, eps=config.adam_eps
            )
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=config.actor_lr, eps=config.adam_eps)
        self.out_dir = Path(config.out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.writer = None
        if self.dist.main:
            report_to = parse_report_to(config.report_to)
            trackers = open_trackers(report_to, self.out_dir, json.loads(config.to_json()))
            self.writer = MetricsWriter(self.out_dir, config.tensorboard or "tensorboard" in report_to, trackers)
        self.next_iteration = 0
        self.engine = None
        if config.generation_backend == "vllm":
            from baselines.ppo.vllm_engine import VLLMEngine

            self.engine = VLLMEngine(config, self.tokenizer)

    # ---- checkpoints --------------------------------------------------------------------------------
    @property
    def checkpoint_path(self) -> Path:
        """``<out_dir>/checkpoint.safetensors``: the checkpoint a run resumes from (``baselines.ppo.checkpoint``)."""
        return self.out_dir / checkpoint.FILENAME

    def save(self) -> None:
        """Write the checkpoint (rank 0; under FSDP2 every rank first hands in its shards), atomically: an
        interrupted save keeps the previous one."""
        if not (self.dist.main or self.dist.sharded):
            return
        policy, optimizer = self.dist.state_dicts(self.policy, self.optimizer)
        critic, critic_optimizer = (None, None)
        if self.critic is not None:
            critic, critic_optimizer = self.dist.state_dicts(self.critic, self.critic_optimizer)
        if not self.dist.main:
            return
        state = {
            "next_iteration": self.next_iteration,
            "config": json.loads(self.config.to_json()),
            "policy": policy,
            "optimizer": optimizer,
            "critic": critic,
            "critic_optimizer": critic_optimizer,
        }
        checkpoint.save(self.checkpoint_path, state)

    def resume(self) -> bool:
        """Load the checkpoint if present; the next iteration is then exactly the uninterrupted one. Nothing is
        unpickled: a folder holding only an earlier version's ``checkpoint.pt`` raises a one-line
        :class:`~baselines.ppo.checkpoint.CheckpointError` saying how to convert it."""
        if not self.checkpoint_path.exists():
            if (self.out_dir / checkpoint.LEGACY_FILENAME).exists():
                raise checkpoint.CheckpointError(checkpoint.legacy_message(self.out_dir))
            return False
        state = checkpoint.load(self.checkpoint_path)
        try:
            self.dist.load_state_dicts(self.policy, self.optimizer, state["policy"], state["optimizer"])
            if self.critic is not None and state["critic"] is not None:
                self.dist.load_state_dicts(self.critic, self.critic_optimizer, state["critic"],
                                           state["critic_optimizer"])  # fmt: skip
            self.next_iteration = int(state["next_iteration"])
        except (KeyError, TypeError, ValueError, RuntimeError) as error:  # another model's, or a forged one
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise checkpoint.CheckpointError(
                f"{self.checkpoint_path} does not fit this run ({first[:200]}); pass --fresh to start over"
            ) from None
        if self.writer is not None:
            self.writer.truncate_after(self.next_iteration - 1)
        return True

    # ---- one iteration ------------------------------------------------------------------------------
    def _rollouts(self, iteration: int) -> list:
        groups = list(range(self.config.prompts_per_iteration))[self.dist.rank :: self.dist.world]
        if self.engine is not None:
            self.engine.sync(self.policy)
            return self.engine.collect(iteration, groups)
        self.policy.eval()
        return collect_rollouts(self.policy, self.tokenizer, self.config, iteration, groups)

    def probe(self, iteration: int) -> dict[str, float]:
        """The fixed MI probe (``mi.probe_seeds``) with the current policy (:func:`~baselines.ppo.diagnostics.probe_family`)."""
        cfg = self.config
        sampler = self.engine.sample if self.engine is not None else None  # synced before this iteration's rollouts
        return probe_family(self.policy, self.tokenizer, cfg.rollout, cfg.mi, iteration, sampler=sampler,
                            model=cfg.model, threads=cfg.cpu_threads)  # fmt: skip

    def _mi_family(self, episodes: list, iteration: int, **kwargs) -> dict[str, float]:
        cfg = self.config
        return mi_family(self.policy, self.tokenizer, episodes, cfg.rollout, cfg.mi, iteration, model=cfg.model,
                         threads=cfg.cpu_threads, **kwargs)  # fmt: skip

    def iteration(self, iteration: int) -> dict[str, float]:
        """Roll out, filter the groups, update on the kept ones; returns the iteration's logged row."""
        cfg = self.config
        start = time.perf_counter()
        self.dist.unshard(self._engines)  # FSDP2: whole weights for this rank's own forwards, until the update
        local = self._rollouts(iteration)
        rollout_s = time.perf_counter() - start
        everyone = [e for part in self.dist.gather([(e.group, e.sample, e.episode_return, e.success) for e in local])
                    for e in part]  # fmt: skip
        everyone.sort(key=lambda e: (e[0], e[1]))
        groups, _, returns = group_returns([g for g, *_ in everyone], [r for _, _, r, _ in everyone],
                                           [s for _, s, *_ in everyone])  # fmt: skip
        log: dict[str, float] = {
            ITERATION: iteration,
            SUCCESS: float(np.mean([ok for *_, ok in everyone])),
            RETURN: float(returns.mean()),
            "rollout/turns": self._mean([len(e.turns) for e in local]),
            "rollout/response_tokens": self._mean([len(t.response_ids) for e in local for t in e.turns]),
            TOKEN_ENTROPY: self._mean([h for e in local for t in e.turns for h in t.sample_entropies]),
            "timing/rollout_s": rollout_s,
        }
        if self.engine is not None:  # the weight sync before these rollouts, and its probe's parity
            log.update(self.engine.last_sync)
        if cfg.mi.every and iteration % cfg.mi.every == 0 and self.dist.main:
            self.policy.eval()
            mi_start = time.perf_counter()
            log.update(self._mi_family(local, iteration))
            if cfg.mi.probe_seeds:
                log.update(self.probe(iteration))
            log["timing/mi_s"] = time.perf_counter() - mi_start

        kept = choose_groups(returns, cfg.filter, drop_draws(cfg.seed, iteration))
        stats = filter_stats(returns, kept)
        log.update(stats.metrics())

        analyse = cfg.grad_buckets_every and iteration % cfg.grad_buckets_every == 0
        if analyse:
            log.update(self.gradient_buckets(local, returns, groups))
        kept_groups = {groups[i] for i in kept}
        chosen = [e for e in local if e.group in kept_groups]
        update_start = time.perf_counter()
        if not stats.empty:  # every rank takes part (collectives inside), even one holding no kept group
            rows, by_episode = B.build_rows(chosen)
            # one optimiser step on the whole batch: the loss's own log-probs, detached, are the old ones
            scorer = None if B.single_step(cfg, int(self.dist.sum(float(len(rows))))) else self.policy
            B.fill_old_stats(
                rows, scorer, self.critic, self.reference, cfg.temperature, cfg.micro_batch_size, cfg.dtype
            )
            B.fill_advantages(chosen, by_episode, cfg, reduce=self.dist.sum)
        self.dist.reshard(self._engines)
        if not stats.empty:
            log.update(self._update(rows, iteration))
        log["timing/update_s"] = time.perf_counter() - update_start
        tokens = self.dist.sum(float(sum(len(t.response_ids) for e in local for t in e.turns)))
        log["perf/rollout_tokens_per_s"] = tokens / max(rollout_s, 1e-9)
        return log

    def _mean(self, values: list[float]) -> float:
        """The mean of every rank's ``values`` (NaN when there are none)."""
        if self.dist.world == 1:
            return _mean_or_nan(values)
        count = self.dist.sum(float(len(values)))
        return self.dist.sum(float(np.sum(values))) / count if count else float("nan")

    @property
    def _engines(self) -> tuple:
        """The models as the update runs them (see ``__init__``)."""
        return (self.train_policy, self.train_critic)

    def gradient_buckets(self, episodes: list, returns: np.ndarray, groups: list[int]) -> dict[str, float]:
        """Task/entropy/KL gradient norms per reward-std bucket on these (pre-filter) episodes, with their own
        old log-probs and advantages (the whole batch's: GAE whitening over every episode); no optimiser step.
        Single process only (the buckets need every group)."""
        cfg = self.config
        rows, by_episode = B.build_rows(episodes)
        B.fill_old_stats(
            rows, self.policy, self.critic, self.reference, cfg.temperature, cfg.micro_batch_size, cfg.dtype
        )
        B.fill_advantages(episodes, by_episode, cfg)
        rows_by_group: dict[int, list] = {}
        for (group, _), mine in by_episode.items():
            rows_by_group.setdefault(group, []).extend(mine)
        std = {g: float(np.std(returns[groups.index(g)], ddof=1)) for g in rows_by_group}
        self.policy.train()

        def parts(rows, denominator):
            return L.policy_loss(rows, self.policy, cfg, denominator, parts=True)

        result = grad_norm_buckets(rows_by_group, std, self.policy, cfg, parts)
        self.policy.zero_grad(set_to_none=True)
        return result

    def _update(self, rows: list, iteration: int) -> dict[str, float]:
        cfg = self.config
        self.policy.train()
        totals = {"losses/approx_kl": 0.0, "losses/clipfrac": 0.0, "losses/entropy": 0.0}  # token-weighted sums
        pg_total = 0.0  # the aggregated policy loss, summed over minibatches
        token_total = 0.0
        sequence_total = 0.0  # every position a forward/backward processes (prompt and response tokens)
        value_total = 0.0
        steps = 0
        params = [p for p in self.policy.parameters() if p.requires_grad]
        idle = B.Row(-1, 0, [0, 0], [(1, 2)], advantages=torch.zeros(1), old_values=torch.zeros(1),
                     returns=torch.zeros(1))  # fmt: skip
        global_rows = int(self.dist.sum(float(len(rows))))
        num_minibatches = max(1, -(-global_rows // cfg.minibatch_size))
        update_start = time.perf_counter()
        for epoch in range(cfg.ppo_epochs):
            order = np.random.default_rng(derive_seed("train-shuffle", cfg.seed, iteration, epoch, self.dist.rank))
            permuted = [rows[i] for i in order.permutation(len(rows))]
            for minibatch in np.array_split(np.arange(len(permuted)), num_minibatches):
                mb = [permuted[i] for i in minibatch]
                denominator = self.dist.sum(B.normalizer(mb, cfg))
                tokens = self.dist.sum(float(sum(r.length for r in mb)))  # the critic's loss is a token mean
                self.optimizer.zero_grad(set_to_none=True)
                if self.critic_optimizer:
                    self.critic_optimizer.zero_grad(set_to_none=True)
                micros = B.micro_batches(mb, cfg.micro_batch_size)
                # every rank runs as many passes as the busiest one: the engine reduces the gradients in the last
                # pass (FSDP2 gathers weights in every pass), so a rank with fewer rows adds idle passes
                passes = self.dist.max(len(micros))
                for index in range(passes):
                    with self.dist.accumulate(self._engines, last=index == passes - 1):
                        if index >= len(micros):
                            self._idle_pass(idle)
                            continue
                        micro = micros[index]
                        loss, stats = L.policy_loss(micro, self.train_policy, cfg, denominator)
                        loss.backward()
                        if self.critic is not None:
                            v_loss = L.critic_loss(micro, self.train_critic, cfg, tokens)
                            v_loss.backward()
                            value_total += float(v_loss.detach()) * tokens
                    pg_total += stats["pg_loss"]
                    totals["losses/approx_kl"] += stats["approx_kl"]
                    totals["losses/clipfrac"] += stats["clipfrac"]
                    totals["losses/entropy"] += stats["entropy"]
                    token_total += sum(r.length for r in micro)
                    sequence_total += sum(len(r.sequence) for r in micro)
                torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
                self.optimizer.step()
                if self.critic is not None:
                    critic_params = list(self.critic.parameters())
                    torch.nn.utils.clip_grad_norm_(critic_params, cfg.max_grad_norm)
                    self.critic_optimizer.step()
                steps += 1
        elapsed = time.perf_counter() - update_start
        token_total = max(self.dist.sum(token_total), 1.0)
        out = {key: self.dist.sum(value) / token_total for key, value in totals.items()}
        out["losses/pg_loss"] = self.dist.sum(pg_total) / max(steps, 1)
        if self.critic is not None:
            out["losses/value_loss"] = self.dist.sum(value_total) / token_total
        out["perf/train_tokens_per_s"] = token_total / max(elapsed, 1e-9)  # response tokens trained on
        out["perf/train_positions_per_s"] = self.dist.sum(sequence_total) / max(elapsed, 1e-9)
        out["losses/optimizer_steps"] = steps
        return out

    def _idle_pass(self, row) -> None:
        """A forward and backward that adds nothing to the gradients (zero-weighted), for a rank with fewer
        micro-batches than another: the engine's collectives need every rank in every pass, in the same order
        (the policy's backward, then the critic's)."""
        loss, _ = L.policy_loss([row], self.train_policy, self.config, 1.0)
        (loss * 0.0).backward()
        if self.critic is not None:
            (L.critic_loss([row], self.train_critic, self.config, 1.0) * 0.0).backward()

    def train(self, resume: bool = True, on_row: Callable[[dict], None] | None = None) -> list[dict[str, float]]:
        """Run (or continue) the configured iterations; returns the logged rows of this call. ``on_row`` (rank 0)
        gets each row as soon as it is logged (``harness train`` prints it then, not at the end)."""
        if resume:
            self.resume()
        if self.dist.main:
            (self.out_dir / "config.json").write_text(self.config.to_json())
        logged = []
        while self.next_iteration < self.config.iterations:
            row = self.iteration(self.next_iteration)
            self.next_iteration += 1
            if self.writer is not None:
                self.writer.write(row)
                if on_row is not None:
                    on_row(row)
            logged.append(row)
            every = self.config.checkpoint_every
            if (every and self.next_iteration % every == 0) or self.next_iteration == self.config.iterations:
                self.save()
        if self.writer is not None:
            self.writer.close()
        return logged

    def close(self) -> None:
        """Release the vLLM engine (its processes and scratch checkpoint), if any, and the process group of a
        multi-process run. Idempotent."""
        if self.engine is not None:
            self.engine.close()
            self.engine = None
        self.dist.close()
