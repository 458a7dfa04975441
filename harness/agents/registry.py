"""Agent registry: ``make_agent("random")``, ``make_agent("hf:/models/x", temperature=0.7)``.

Names without a colon are exact (``random``, ``oracle``); prefixed specs (``hf:<dir-or-name>``) pass the
text after the colon to the factory. Other packages add agents with :func:`register_agent` (e.g. the LM
agents register ``vllm:`` and ``openai:``, and the shipped tiny model ``tiny``).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.agents.base import Agent


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

    def __post_init__(self) -> None:
        from ragen_envs.core import check_range

        check_range("temperature", self.temperature, 0.0)
        check_range("max_new_tokens", self.max_new_tokens, 1, integer=True)
        check_range("batch_size", self.batch_size, 1, integer=True)


Factory = Callable[[str, AgentOptions], Agent]


@dataclass(frozen=True)
class AgentEntry:
    name: str
    factory: Factory
    description: str
    argument: str | None = None
    """Placeholder of the text after ``name:`` (e.g. ``"<dir-or-name>"``); None for exact names."""

    @property
    def display(self) -> str:
        return f"{self.name}:{self.argument}" if self.argument else self.name


_AGENTS: dict[str, AgentEntry] = {}


def register_agent(name: str, factory: Factory, description: str, *, argument: str | None = None) -> None:
    """Add an agent; ``argument`` makes it a prefix spec (``name:<argument>``)."""
    if not name or ":" in name:
        raise ValueError(f"agent name must be non-empty and contain no ':', got {name!r}")
    _AGENTS[name] = AgentEntry(name, factory, description, argument)


def available_agents() -> list[AgentEntry]:
    """Every registered agent, sorted by name."""
    return [_AGENTS[name] for name in sorted(_AGENTS)]


def _unknown(spec: str) -> ValueError:
    names = [entry.display for entry in available_agents()]
    head, _, argument = spec.partition(":")
    close = difflib.get_close_matches(head, list(_AGENTS), n=1, cutoff=0.5)
    hint = ""
    if close:
        entry = _AGENTS[close[0]]
        suggestion = f"{entry.name}:{argument}" if entry.argument and argument else entry.display
        hint = f" Did you mean {suggestion!r}?"
    return ValueError(f"Unknown agent {spec!r}.{hint} Available: {', '.join(names)}")


def parse_spec(spec: str) -> tuple[AgentEntry, str]:
    """The registry entry and argument of an agent spec; ``ValueError`` with "did you mean" if unknown."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"agent spec must be a non-empty string, got {spec!r}")
    name, colon, argument = spec.partition(":")
    entry = _AGENTS.get(name)
    if entry is None:
        raise _unknown(spec)
    if entry.argument and not argument:
        raise ValueError(f"agent {name!r} needs an argument: {entry.display}")
    if not entry.argument and colon:
        raise ValueError(f"agent {name!r} takes no argument, got {spec!r}")
    return entry, argument


def make_agent(spec: str, options: AgentOptions | None = None) -> Agent:
    """Build the agent named by ``spec`` (see the module docstring)."""
    entry, argument = parse_spec(spec)
    agent = entry.factory(argument, options or AgentOptions())
    agent.spec = spec
    return agent


def _random(argument: str, options: AgentOptions) -> Agent:
    from harness.agents.scripted import RandomAgent

    return RandomAgent()


def _oracle(argument: str, options: AgentOptions) -> Agent:
    from harness.agents.scripted import OracleAgent

    return OracleAgent()


def _hf(argument: str, options: AgentOptions) -> Agent:
    from harness.agents.hf import HFAgent

    return HFAgent.from_pretrained(argument, options)


register_agent("random", _random, "uniformly random valid-format actions, input-agnostic reasoning (MI = 0)")
register_agent("oracle", _oracle, "the env's oracle: deterministic, input-dependent reasoning")
register_agent(
    "hf", _hf, "a transformers causal LM from a directory or hub name (extra: llm)", argument="<dir-or-name>"
)


# ---- LM agents (issue 7): factories import their modules (and heavy dependencies) only when used -------------
def _openai(argument: str, options: AgentOptions) -> Agent:
    from harness.agents.openai_api import OpenAIAgent

    return OpenAIAgent.from_spec(argument, options)


def _vllm(argument: str, options: AgentOptions) -> Agent:
    from harness.agents.vllm_agent import VLLMAgent

    return VLLMAgent(argument, options)


register_agent(
    "openai",
    _openai,
    "any OpenAI-compatible chat/completions endpoint (vLLM/SGLang server, hosted APIs); key from $OPENAI_API_KEY",
    argument="<base-url>#<model>",
)
register_agent("vllm", _vllm, "vLLM's offline engine on a GPU (extra: gpu)", argument="<model>")


def _tiny(argument: str, options: AgentOptions) -> Agent:
    import dataclasses

    from baselines.tiny import MODEL_DIR
    from harness.agents.hf import HFAgent

    # Its trained responses are under 100 tokens: a larger per-turn budget only buys rambling.
    options = dataclasses.replace(options, max_new_tokens=min(options.max_new_tokens, 128))
    return HFAgent.from_pretrained(str(MODEL_DIR), options)


register_agent("tiny", _tiny, "the tiny LM shipped in baselines/tiny/model: hf: on CPU, trained on our oracles")
