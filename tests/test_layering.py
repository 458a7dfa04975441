"""The import graph of the four packages, read from the source (ast): envs at the bottom, the harness on them,
baselines and the leaderboard on the harness. Only ``harness/cli.py``, the composition root, imports every
package. Every import counts, at module level or inside a function: a lazy import is still a dependency."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

PACKAGES = ("ragen_envs", "harness", "baselines", "leaderboard")
MAY_IMPORT = {
    "ragen_envs": set(),
    "harness": {"ragen_envs"},
    "baselines": {"ragen_envs", "harness"},
    "leaderboard": {"ragen_envs", "harness"},
}
COMPOSITION_ROOT = "harness.cli"


def package_modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of ``packages`` under ``root``."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def import_graph(root: Path, packages: tuple[str, ...]) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports (``from pkg import name`` is ``pkg.name`` when that is a
    module, else ``pkg``; relative imports resolved)."""
    modules = package_modules(root, packages)

    def known(name: str) -> str | None:  # the module itself, or the nearest package above it
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in modules.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets.update(known(alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in modules else known(base))
        graph[name] = targets - {None, name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (each holds an import circle), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``module -> target`` for every import of a package the module's package may not import."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if module != COMPOSITION_ROOT
        and target.split(".")[0] != module.split(".")[0]
        and target.split(".")[0] not in MAY_IMPORT[module.split(".")[0]]
    )


def test_no_package_imports_a_package_above_it_except_the_cli():
    assert upward_imports(import_graph(ROOT, PACKAGES)) == []


def test_the_cli_is_the_composition_root():
    reached = {target.split(".")[0] for target in import_graph(ROOT, PACKAGES)[COMPOSITION_ROOT]}
    assert reached == set(PACKAGES)


BASELINE_FLOORS = {"algos": 0, "ppo": 1, "trl": 2, "verl": 2}
"""Inside ``baselines``: the pieces every trainer shares (``algos``) at the bottom, the learner on them, the TRL and
verl adapters on both. A sub-package imports only sub-packages on a lower floor (and ``tiny`` stands apart)."""


def baseline_climbs(graph: dict[str, set[str]]) -> list[str]:
    """``module -> target`` for every import between the sub-packages of ``baselines`` that is not downward."""

    def floor(module: str) -> tuple[str, int | None]:
        parts = module.split(".")
        sub = parts[1] if len(parts) > 1 and parts[0] == "baselines" else ""
        return sub, BASELINE_FLOORS.get(sub, 3 if sub == "tiny" else None)

    out = []
    for module, targets in graph.items():
        sub, level = floor(module)
        if level is None:
            continue
        for target in targets:
            other, other_level = floor(target)
            if other and other != sub and other_level is not None and (other_level >= level or "tiny" in (sub, other)):
                out.append(f"{module} -> {target}")
    return sorted(out)


def test_baselines_stand_on_the_shared_algorithms():
    assert baseline_climbs(import_graph(ROOT, PACKAGES)) == []
    graph = {"baselines.algos.filter": {"baselines.ppo.config"}, "baselines.ppo.trainer": {"baselines.algos.mi"},
             "baselines.trl.snr": {"baselines.verl.trainer", "baselines.ppo.rollout", "baselines.compat"}}  # fmt: skip
    assert baseline_climbs(graph) == ["baselines.algos.filter -> baselines.ppo.config",
                                      "baselines.trl.snr -> baselines.verl.trainer"]  # fmt: skip


# ragen_envs is not listed: its code-problem families and ragen_envs.code.problems import each other (a family
# module registers into the table that problems fills by importing the family modules).
@pytest.mark.parametrize("package", ["harness", "baselines", "leaderboard"])
def test_no_import_circle_among_a_packages_modules(package):
    graph = import_graph(ROOT, PACKAGES)
    assert cycles({m: t for m, t in graph.items() if m.split(".")[0] == package}) == []


def test_the_reader_sees_lazy_relative_and_upward_imports(tmp_path):
    files = {
        "ragen_envs/__init__.py": "",
        "ragen_envs/core.py": "def f():\n    from harness import runner\n",  # lazy and upward
        "harness/__init__.py": "",
        "harness/runner.py": "from .agents import base\n",  # relative
        "harness/agents/__init__.py": "",
        "harness/agents/base.py": "import harness.runner\nfrom ragen_envs.core import f\n",
        "harness/cli.py": "import baselines.x, leaderboard\n",
        "baselines/__init__.py": "",
        "baselines/x.py": "",
        "leaderboard/__init__.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    graph = import_graph(tmp_path, PACKAGES)
    assert graph["harness.runner"] == {"harness.agents.base"}
    assert graph["harness.cli"] == {"baselines.x", "leaderboard"}
    assert upward_imports(graph) == ["ragen_envs.core -> harness.runner"]
    assert cycles(graph) == [["harness.agents.base", "harness.runner", "ragen_envs.core"]]
