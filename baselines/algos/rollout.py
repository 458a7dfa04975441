"""What a rollout needs to know: the env, the episode's limits and the sampling settings (:class:`RolloutSpec`).

The learner's ``PPOConfig`` is a ``RolloutSpec`` with training fields added; the TRL adapter builds one from its
trainer's arguments. ``collect_rollouts`` and the MI records read only these fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragen_envs.core import check_range


@dataclass
class RolloutSpec:
    """The settings of one batch of rollouts: ``samples_per_prompt`` episodes per group, on the group's env seed."""

    env_id: str = "ragen/Bandit-v0"
    """Registered env to train on."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for ``gym.make(env_id, **env_kwargs)``."""
    samples_per_prompt: int = 8
    """Rollouts per group, all on the group's env seed (RAGEN-2: 16)."""
    seed: int = 0
    """Run seed: env seeds, sampling seeds and initialisation derive from it."""
    temperature: float = 1.0
    """Sampling temperature of rollouts; log-probs for the loss use the same temperature."""
    max_new_tokens: int = 400
    """Token budget per turn."""
    max_turns: int | None = None
    """Override of the env's ``max_turns`` (None keeps the env default)."""
    context_turns: int | None = None
    """Earlier turns kept in the prompt (None = full history)."""

    def __post_init__(self) -> None:
        check_range("samples_per_prompt", self.samples_per_prompt, 1, integer=True)
        check_range("max_new_tokens", self.max_new_tokens, 1, integer=True)
        check_range("seed", self.seed, 0, integer=True)
        check_range("temperature", self.temperature, 1e-6)

    def env_arguments(self) -> dict[str, Any]:
        """``env_kwargs`` with the ``max_turns`` override applied: what ``gym.make`` gets."""
        kwargs = dict(self.env_kwargs)
        if self.max_turns is not None:
            kwargs["max_turns"] = self.max_turns
        return kwargs
