"""What an agent is built with: the run's :class:`AgentOptions` and each agent's declared :class:`AgentOption` list.

:class:`AgentOptions` holds the generation options every LM agent reads (temperature, token budget, device,
dtype, batch size) and ``extra``, the backend options by name. An agent declares its backend options as
:class:`AgentOption` values when it registers (:func:`harness.agents.registry.register_agent`); the registry
checks and converts ``extra`` against them before the agent is built. This module imports no agent, so agents
and the registry both import it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class AgentOptions:
    """Generation options shared by LM agents (scripted agents ignore them)."""

    temperature: float = 1.0
    """Sampling temperature; 0 means greedy. Scoring uses the same temperature (1 when greedy)."""
    max_new_tokens: int = 200
    """Token budget per turn."""
    device: str = "auto"
    """``cpu``, ``cuda``, ``cuda:1``… or ``auto`` (CUDA when available)."""
    dtype: str = "auto"
    """``float32``, ``bfloat16``, ``float16`` or ``auto`` (bf16 on GPU, fp32 on CPU)."""
    batch_size: int = 32
    """Maximum sequences per forward pass."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Backend options by name, checked against the agent's declared :class:`AgentOption` list (see
    :mod:`harness.agents.registry`; ``harness ls`` lists them per agent)."""

    def __post_init__(self) -> None:
        from ragen_envs.core import check_range

        check_range("temperature", self.temperature, 0.0)
        check_range("max_new_tokens", self.max_new_tokens, 1, integer=True)
        check_range("batch_size", self.batch_size, 1, integer=True)


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class AgentOption:
    """One typed backend option of an agent (a key of ``AgentOptions.extra``)."""

    name: str
    kind: type
    """``int``, ``float``, ``bool`` or ``str``."""
    default: Any
    """The value when unset; ``None`` means the agent decides (its help says how)."""
    help: str
    choices: tuple = ()
    low: float | None = None
    """Smallest allowed value of a number."""
    high: float | None = None
    words: tuple[str, ...] = ()
    """Texts a number option also accepts (``threads=auto``)."""

    def convert(self, agent: str, value: Any) -> Any:
        """``value`` (a Python value, or the text of ``--agent-opt key=value``) as this option's type."""
        where = f"agent {agent!r} option {self.name}"
        if value is None or (isinstance(value, str) and value.lower() == "none"):
            if self.default is None:
                return None
            raise ValueError(f"{where} must be set to a {self.kind.__name__}, got None")
        if isinstance(value, str) and value.strip().lower() in self.words:
            return value.strip().lower()
        if self.kind is bool:
            if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
                return value.lower() in _TRUE
            if not isinstance(value, bool):
                raise ValueError(f"{where} must be true or false, got {value!r}")
        elif self.kind in (int, float):
            try:
                number = self.kind(value) if isinstance(value, str) else value
            except ValueError:
                raise ValueError(
                    f"{where} must be {'an integer' if self.kind is int else 'a number'}, got {value!r}"
                ) from None
            if self.kind is float and isinstance(number, int) and not isinstance(number, bool):
                number = float(number)
            if isinstance(number, bool) or not isinstance(number, self.kind):
                raise ValueError(f"{where} must be {'an integer' if self.kind is int else 'a number'}, got {value!r}")
            if (self.low is not None and number < self.low) or (self.high is not None and number > self.high):
                bounds = f"[{'-inf' if self.low is None else self.low}, {'inf' if self.high is None else self.high}]"
                raise ValueError(f"{where} must be in {bounds}, got {value!r}")
            value = number
        elif not isinstance(value, str):
            raise ValueError(f"{where} must be text, got {value!r}")
        if self.choices and value not in self.choices:
            raise ValueError(f"{where} must be one of {list(self.choices)}, got {value!r}")
        return value

    @property
    def display(self) -> str:
        """``key=TYPE (default)`` as ``harness ls`` prints it."""
        kind = "|".join(map(str, self.choices)) if self.choices else self.kind.__name__.upper()
        kind = "|".join((kind, *self.words))
        default = "" if self.default is None else f" (default {self.default})"
        return f"{self.name}={kind}{default}"
