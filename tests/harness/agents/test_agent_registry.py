"""Agents of installed packages register through the ``ragen_envs.agents`` entry-point group, lazily."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap

import pytest

from harness.agents import registry
from harness.agents.registry import ENTRY_POINT_GROUP, available_agents, make_agent, parse_spec
from tests.helpers.installed import declared_entry_points

PLUGIN = """
from harness.agents.registry import register_agent
from harness.agents.scripted import RandomAgent

calls = []


def register():
    calls.append("echo")
    register_agent("echo", lambda argument, options: RandomAgent(), "a plugin agent", argument="<word>")


def register_random():
    calls.append("random")
    register_agent("random", lambda argument, options: None, "a plugin that would replace a built-in")


def broken():
    raise ImportError("plugin_agents needs frobnicate: pip install frobnicate")
"""


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    """A package on the path with three ``ragen_envs.agents`` entry points (one broken), installed as metadata
    the registry reads; the registry's state is restored after."""
    (tmp_path / "plugin_agents.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(tmp_path))
    points = [
        importlib.metadata.EntryPoint("echo", "plugin_agents:register", ENTRY_POINT_GROUP),
        importlib.metadata.EntryPoint("random", "plugin_agents:register_random", ENTRY_POINT_GROUP),
        importlib.metadata.EntryPoint("broken", "plugin_agents:broken", ENTRY_POINT_GROUP),
    ]
    real = importlib.metadata.entry_points

    def entry_points(**selection):
        if selection == {"group": ENTRY_POINT_GROUP}:
            return importlib.metadata.EntryPoints(points)
        return real(**selection)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_AGENTS", dict(registry._AGENTS))
    monkeypatch.setattr(registry, "_LOADED", set())
    yield
    sys.modules.pop("plugin_agents", None)


def test_the_declared_agent_entry_points_are_installed_and_register_their_agents():
    declared = declared_entry_points(ENTRY_POINT_GROUP)
    if not declared:
        pytest.skip("no TOML reader (Python 3.10)")
    assert "tiny" in declared
    installed = {point.name: point for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    stale = {name: value for name, value in declared.items() if name not in installed or installed[name].value != value}
    assert not stale, f"pyproject.toml declares agent entry points the install lacks: {stale}; run pip install -e ."
    assert parse_spec("tiny")[0].factory.__module__ == "baselines.tiny.agent"


def test_an_entry_point_loads_when_its_agent_is_first_asked_for(plugins):
    assert "echo" not in registry._AGENTS and "plugin_agents" not in sys.modules
    parse_spec("random")  # a built-in: no entry point is loaded
    assert "plugin_agents" not in sys.modules
    agent = make_agent("echo:hello")
    assert agent.spec == "echo:hello"
    calls = sys.modules["plugin_agents"].calls
    make_agent("echo:again")
    assert calls == ["echo"]  # once per process


def test_a_listing_loads_every_entry_point_but_never_replaces_a_built_in(plugins):
    builtin = registry._AGENTS["random"]
    with pytest.warns(UserWarning, match=r"^agent entry point broken = 'plugin_agents:broken' failed to load: "
                      r"ImportError: plugin_agents needs frobnicate: pip install frobnicate$"):  # fmt: skip
        names = [entry.name for entry in available_agents()]
    assert "echo" in names and "broken" not in names
    assert registry._AGENTS["random"] is builtin
    assert sys.modules["plugin_agents"].calls == ["echo"]


def test_a_broken_entry_point_asked_for_by_name_raises_its_own_error_every_time(plugins):
    for _ in range(2):
        with pytest.raises(ImportError, match="pip install frobnicate"):
            parse_spec("broken")


def test_an_unknown_agent_names_the_entry_point_agents_too(plugins):
    with (
        pytest.warns(UserWarning),
        pytest.raises(ValueError, match=r"Unknown agent 'ech'\. Did you mean 'echo:<word>'\?.*echo:<word>"),
    ):
        parse_spec("ech")
