"""The learner's one config: every field documented once, validated in ``__post_init__``.

Presets: ``paper`` is RAGEN-2's GPU setting (Qwen2.5-3B, 8 prompts × 16 samples, actor lr 1e-6, critic 1e-5,
clip 0.2/0.28, entropy 0.001, no KL loss, temperature 1.0, ≤ 400 tokens per turn); ``cpu-tiny`` is the
setting the CPU tests and the filter experiment use with the shipped tiny model (one torch thread: faster
than two on a shared 2-core machine).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from baselines.algos.filter import FilterOptions
from baselines.algos.mi import MIOptions
from baselines.algos.rollout import RolloutSpec
from baselines.algos.sections import accepts_flat_keys, flat_names, resolve_sections
from ragen_envs.core import check_choice, check_range

__all__ = [
    "ADVANTAGES",
    "PRESETS",
    "PPOConfig",
    "preset",
]

ADVANTAGES = ("gae", "grpo", "drgrpo")
"""The advantage estimators (``PPOConfig.advantage``)."""
KL_TYPES = ("kl", "low_var_kl")
LOSS_AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")
DEFAULT_AGGREGATION = {"gae": "token-mean", "grpo": "seq-mean-token-mean", "drgrpo": "seq-mean-token-sum"}
"""RAGEN's scripts' ``loss_agg_mode`` per algorithm (PPO, GRPO, Dr.GRPO)."""
DATA_PARALLEL = ("ddp", "fsdp2")
"""The engines of a ``torchrun`` launch (``baselines.ppo.distributed``)."""
AUTOCAST_DTYPE = "bfloat16-autocast"
"""The ``dtype`` that keeps fp32 weights and runs only the update's forward/backward under bf16 autocast."""


@accepts_flat_keys
@dataclass
class PPOConfig(RolloutSpec):
    """Configuration of one training run: a :class:`~baselines.algos.RolloutSpec` (the env and sampling fields)
    with the training fields and the shared ``filter`` and ``mi`` options (``harness train`` flags map 1:1 onto
    these fields, a section's as ``--<section>-<field>``). Flat section keys (``filter_value=0.5``) are accepted
    wherever fields are, the spelling of the flags and of config.json files written before the sections."""

    model: str = ""
    """Directory of a transformers causal LM (the shipped tiny model, or any local checkpoint)."""
    iterations: int = 20
    """Training iterations (rollout + filter + update)."""
    prompts_per_iteration: int = 8
    """Groups per iteration: distinct env seeds (RAGEN-2: 8)."""
    advantage: str = "gae"
    """``gae`` (PPO with a critic), ``grpo`` (group-normalised returns), ``drgrpo`` (centred, length-unbiased)."""
    gamma: float = 1.0
    """Discount over response tokens (GAE)."""
    lam: float = 1.0
    """GAE λ."""
    actor_lr: float = 1e-6
    """Policy learning rate (AdamW)."""
    critic_lr: float = 1e-5
    """Critic learning rate (AdamW), used with ``advantage="gae"``."""
    clip_low: float = 0.2
    """PPO ratio clip below 1."""
    clip_high: float = 0.28
    """PPO ratio clip above 1 (asymmetric, "clip-higher")."""
    value_clip: float = 0.5
    """Critic value clip."""
    entropy_coef: float = 0.001
    """Entropy bonus coefficient."""
    kl_coef: float = 0.0
    """KL-to-reference loss coefficient; 0 loads no reference model (RAGEN-2: no KL loss)."""
    kl_loss_type: str = "kl"
    """KL estimator: ``kl`` (k1, RAGEN's default) or ``low_var_kl`` (k3, clamped to [−10, 10] as verl)."""
    loss_agg_mode: str = "auto"
    """How policy, entropy and KL terms are reduced: ``token-mean``, ``seq-mean-token-mean``,
    ``seq-mean-token-sum``; ``auto`` is RAGEN's per-algorithm setting (gae: token-mean, grpo: seq-mean-token-mean,
    drgrpo: seq-mean-token-sum)."""
    whiten_advantages: bool = True
    """GAE only: whiten the advantages over the batch's response tokens (verl's ``masked_whiten``, always on
    there); off leaves raw GAE advantages (for ablations)."""
    ppo_epochs: int = 1
    """Passes over the kept batch per iteration. With 1, and every kept row in one minibatch, the update is
    on-policy and skips the old log-prob pass (the loss's own log-probs, detached, stand in, as in verl/TRL)."""
    minibatch_size: int = 32
    """Turn samples per optimiser step."""
    micro_batch_size: int = 8
    """Turn samples per forward/backward (gradient accumulation inside a minibatch)."""
    max_grad_norm: float = 1.0
    """Gradient clipping."""
    adam_eps: float = 1e-8
    """AdamW epsilon (a large value makes the step ≈ lr·gradient, used by the DDP equivalence test)."""
    filter: FilterOptions = field(default_factory=FilterOptions)
    """The SNR filter (``baselines.algos.FilterOptions``; flags ``--filter-<field>``)."""
    mi: MIOptions = field(default_factory=lambda: MIOptions(probe_seeds=16))
    """The MI family (``baselines.algos.MIOptions``; flags ``--mi-<field>``); the learner turns the 16-seed probe on."""
    grad_buckets_every: int = 0
    """Every k iterations report task/entropy/KL gradient norms per reward-variance bucket; 0 = off."""
    grad_buckets: int = 6
    """Number of reward-std quantile buckets (RAGEN: 6)."""
    out_dir: str = "runs/train"
    """Where metrics (JSONL, CSV, TensorBoard) and checkpoints go."""
    checkpoint_every: int = 5
    """Save a checkpoint every k iterations (and at the end); 0 = only at the end."""
    device: str = "auto"
    """``cpu``, ``cuda``… or ``auto``."""
    dtype: str = "auto"
    """``float32``, ``bfloat16``, ``bfloat16-autocast`` (fp32 weights and optimiser, the update's forward and
    backward under bf16 autocast: not bit-exact, its speed in docs/benchmarks.md; rollouts and MI stay fp32) or
    ``auto`` (bf16 on GPU, fp32 on CPU)."""
    gradient_checkpointing: bool = False
    """Trade compute for memory (GPU runs of big models)."""
    generation_backend: str = "transformers"
    """``transformers`` (our sampler with KV cache) or ``vllm`` (colocated engine, weights synced per iteration)."""
    data_parallel: str = "ddp"
    """Under ``torchrun``: ``ddp`` (every rank holds the models; gradients all-reduced) or ``fsdp2`` (parameters,
    gradients and AdamW state sharded over the ranks, for models whose training state does not fit one GPU; each
    rank gathers the whole weights for its rollouts and scoring). One process ignores it."""
    tensorboard: bool = True
    """Also write TensorBoard event files (needs the ``tensorboard`` package)."""
    report_to: str = ""
    """Experiment trackers, comma-separated: ``wandb`` (Weights & Biases; ``WANDB_MODE=offline`` needs no network),
    ``tensorboard`` (same as ``tensorboard=True``), or ``none``/empty for the metrics files (and TensorBoard) only."""
    cpu_threads: int = 0
    """torch CPU threads; 0 keeps torch's default. 1 is much faster on a busy machine: small matmuls with
    two OpenMP threads spin at barriers when another process holds a core (measured 9× per decode step)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("iterations", "prompts_per_iteration", "ppo_epochs", "minibatch_size", "micro_batch_size",
                     "grad_buckets"):  # fmt: skip
            check_range(name, getattr(self, name), 1, integer=True)
        check_range("samples_per_prompt", self.samples_per_prompt, 2, integer=True)
        for name in ("grad_buckets_every", "checkpoint_every", "cpu_threads"):
            check_range(name, getattr(self, name), 0, integer=True)
        for name in ("actor_lr", "critic_lr", "clip_low", "clip_high", "value_clip", "entropy_coef", "kl_coef",
                     "max_grad_norm", "adam_eps"):  # fmt: skip
            check_range(name, getattr(self, name), 0.0)
        check_range("gamma", self.gamma, 0.0, 1.0)
        check_range("lam", self.lam, 0.0, 1.0)
        resolve_sections(self, "{}_")  # a config.json's sections arrive as mappings
        check_choice("advantage", self.advantage, ADVANTAGES)
        check_choice("kl_loss_type", self.kl_loss_type, KL_TYPES)
        check_choice("loss_agg_mode", self.loss_agg_mode, ("auto", *LOSS_AGGREGATIONS))
        check_choice("generation_backend", self.generation_backend, ("transformers", "vllm"))
        check_choice("data_parallel", self.data_parallel, DATA_PARALLEL)
        if self.data_parallel == "fsdp2" and self.generation_backend == "vllm":
            raise ValueError("data_parallel='fsdp2' needs generation_backend='transformers' (the vLLM engine "
                             "reloads whole weights from disk); use data_parallel='ddp' with vllm")  # fmt: skip
        if self.data_parallel == "fsdp2" and self.grad_buckets_every:
            raise ValueError("data_parallel='fsdp2' needs grad_buckets_every=0 (the gradient buckets run one "
                             "rank's own backward passes); use data_parallel='ddp' for them")  # fmt: skip
        check_choice("dtype", self.dtype, ("auto", "float32", "bfloat16", AUTOCAST_DTYPE))
        from baselines.ppo.tracking import parse_report_to

        parse_report_to(self.report_to)
        if self.micro_batch_size > self.minibatch_size:
            raise ValueError(
                f"micro_batch_size ({self.micro_batch_size}) must be ≤ minibatch_size ({self.minibatch_size})"
            )
        if not self.model:
            raise ValueError("model must name a model directory, e.g. model='baselines/tiny/model'")

    @property
    def aggregation(self) -> str:
        """The loss aggregation in force (``loss_agg_mode`` with ``auto`` resolved per algorithm)."""
        return DEFAULT_AGGREGATION[self.advantage] if self.loss_agg_mode == "auto" else self.loss_agg_mode

    def to_json(self) -> str:
        """The config as JSON with sorted keys: what a run records in ``config.json`` and compares on resume."""
        return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

    @property
    def rollout(self) -> RolloutSpec:
        """This run's rollout settings alone."""
        return RolloutSpec(**{f.name: getattr(self, f.name) for f in dataclasses.fields(RolloutSpec)})

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> PPOConfig:
        """Build from a dict (sections nested or as flat keys), naming unknown fields with a "did you mean"."""
        import difflib

        known = {f.name for f in dataclasses.fields(cls)} | set(flat_names())
        for key in values:
            if key not in known:
                hint = difflib.get_close_matches(key, known, n=1)
                suggestion = f" Did you mean {hint[0]!r}?" if hint else ""
                raise ValueError(f"Unknown config field {key!r}.{suggestion} Fields: {', '.join(sorted(known))}")
        return cls(**values)


PRESETS: dict[str, dict[str, Any]] = {
    "paper": dict(
        prompts_per_iteration=8, samples_per_prompt=16, actor_lr=1e-6, critic_lr=1e-5, clip_low=0.2, clip_high=0.28,
        entropy_coef=0.001, kl_coef=0.0, temperature=1.0, max_new_tokens=400, iterations=400, advantage="gae",
        filter_mode="top_p", filter_value=0.9, minibatch_size=32, micro_batch_size=4, dtype="bfloat16",
        gradient_checkpointing=True,
    ),
    "cpu-tiny": dict(
        prompts_per_iteration=8, samples_per_prompt=8, actor_lr=2e-5, critic_lr=1e-4, max_new_tokens=64,
        iterations=12, minibatch_size=64, micro_batch_size=16, mi_every=3, mi_samples=32, dtype="float32", cpu_threads=1,
    ),
}  # fmt: skip
"""Named learner settings (``harness train NAME``), each a dict of ``PPOConfig`` fields."""


def preset(name: str, **overrides: Any) -> PPOConfig:
    """A config from a named preset plus overrides."""
    if name not in PRESETS:
        raise ValueError(f"Unknown preset {name!r}. Available: {', '.join(PRESETS)}")
    return PPOConfig.from_dict({**PRESETS[name], **overrides})
