"""Agents the harness can roll out: the protocol (:mod:`harness.agents.base`) and the registry."""

from harness.agents.base import (
    Agent,
    Context,
    EnvHandle,
    Generation,
    Message,
    Request,
    Score,
    ScoringUnavailable,
)
from harness.agents.options import AgentOption, AgentOptions
from harness.agents.registry import available_agents, make_agent, parse_spec, register_agent

__all__ = [
    "Agent",
    "AgentOption",
    "AgentOptions",
    "Context",
    "EnvHandle",
    "Generation",
    "Message",
    "Request",
    "Score",
    "ScoringUnavailable",
    "available_agents",
    "make_agent",
    "parse_spec",
    "register_agent",
]
