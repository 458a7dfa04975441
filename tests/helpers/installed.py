"""What the install's metadata holds against what ``pyproject.toml`` declares (agent entry points)."""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from tests.helpers.paths import ROOT

PYPROJECT = ROOT / "pyproject.toml"


def declared_entry_points(group: str) -> dict[str, str]:
    """The entry points ``pyproject.toml`` declares in ``group`` (name -> ``module:function``)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: no TOML reader in the standard library
        return {}
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return dict(project.get("entry-points", {}).get(group, {}))


def register_agents_missing_from_the_install() -> None:
    """Register the agents ``pyproject.toml`` declares that the install's metadata lacks.

    An install's metadata holds the entry points declared when it was made (an editable install too), so a
    checkout that declared a new agent since then lacks it until ``pip install -e .`` runs again. The suite runs
    against the declaration meanwhile; ``tests/harness/agents/test_agent_registry.py`` fails and names the reinstall.
    """
    from harness.agents.registry import ENTRY_POINT_GROUP

    installed = {point.name for point in entry_points(group=ENTRY_POINT_GROUP)}
    for name, value in declared_entry_points(ENTRY_POINT_GROUP).items():
        if name not in installed:
            EntryPoint(name, value, ENTRY_POINT_GROUP).load()()
