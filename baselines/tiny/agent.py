"""The ``tiny`` agent: the LM shipped in ``baselines/tiny/model``, run by the ``hf:`` agent on CPU.

It registers the way any installed package adds an agent: ``pyproject.toml`` declares :func:`register` in the
``ragen_envs.agents`` entry-point group, and the harness's registry calls it the first time ``tiny`` is asked
for or the agents are listed (see :mod:`harness.agents.registry`).
"""

from __future__ import annotations

import dataclasses

from harness.agents.base import Agent
from harness.agents.options import AgentOptions
from harness.agents.registry import HF_OPTIONS, one_gpu, register_agent

MAX_NEW_TOKENS = 128
"""The per-turn token budget's ceiling: its trained responses are under 100 tokens, so a larger budget only buys
rambling."""


def make_tiny_agent(argument: str, options: AgentOptions) -> Agent:
    """The ``hf:`` agent on the shipped model, its token budget capped at :data:`MAX_NEW_TOKENS`."""
    from baselines.tiny import MODEL_DIR
    from harness.agents.hf import HFAgent

    options = dataclasses.replace(options, max_new_tokens=min(options.max_new_tokens, MAX_NEW_TOKENS))
    return HFAgent.from_pretrained(str(MODEL_DIR), options)


def register() -> None:
    """Register ``tiny`` (the ``ragen_envs.agents`` entry point)."""
    register_agent(
        "tiny",
        make_tiny_agent,
        "the tiny LM shipped in baselines/tiny/model: hf: on CPU, trained on our oracles",
        options=HF_OPTIONS,
        gpus=one_gpu,
    )
