"""Write docs/api.md: the public API, read from the ``__all__`` of the modules meant to be imported.

    python scripts/gen_api_docs.py            # rewrite the page
    python scripts/gen_api_docs.py --check    # exit 1 when the page is stale (tests/docs runs this check)

The source is read, not imported (ast), so the page builds without the heavy extras (torch, TRL, verl) and a
name re-exported from a submodule is followed to where it is defined. A name in ``__all__`` that is defined
nowhere, or a public class or function without a docstring, fails the build: ``__all__`` is the contract.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "api.md"
COMMAND = "python scripts/gen_api_docs.py"
PACKAGES = ("ragen_envs", "harness", "baselines", "leaderboard")
API = (  # the modules a user imports, in the order the page lists them
    "ragen_envs", "ragen_envs.core", "ragen_envs.arguments", "ragen_envs.contract", "ragen_envs.parsing",
    "ragen_envs.tools", "ragen_envs.sandbox", "ragen_envs.serve",
    "harness.agents", "harness.episode", "harness.records", "harness.metrics", "harness.mi", "harness.summary",
    "harness.probe", "harness.training_log",
    "baselines.algos", "baselines.ppo.config", "baselines.ppo.trainer", "baselines.trl", "baselines.verl",
    "baselines.tiny",
    "leaderboard",
)  # fmt: skip


class ApiError(Exception):
    """A name in ``__all__`` the source does not define, or a public class or function without a docstring."""


@dataclass(frozen=True)
class Entry:
    """One public name: where it is defined, what it is and the first line of its docstring."""

    name: str
    kind: str
    summary: str


def module_file(module: str) -> Path | None:
    """The source file of a module of ours (a package's ``__init__.py``), or None when it is not ours."""
    base = ROOT.joinpath(*module.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.exists():
            return path
    return None


def parse(module: str) -> ast.Module:
    """The module's syntax tree."""
    path = module_file(module)
    if path is None:
        raise ApiError(f"{module}: no such module in this repository")
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def exported(tree: ast.Module, module: str) -> list[str]:
    """The names in the module's ``__all__`` (a literal list or tuple of strings)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return [ast.literal_eval(element) for element in node.value.elts]
    raise ApiError(f"{module}: no __all__ (an API module lists its public names)")


def first_line(doc: str | None) -> str:
    """A docstring's first sentence-line, as one Markdown table cell."""
    line = (doc or "").strip().split("\n\n")[0].replace("\n", " ")
    return " ".join(line.split()).replace("|", "\\|")


def absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute module a ``from … import`` names (relative imports resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[: len(parts) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def resolve(module: str, name: str, seen: frozenset = frozenset()) -> Entry:
    """Where ``name`` of ``module`` is defined, followed through re-exports; its kind and summary."""
    if (module, name) in seen:
        raise ApiError(f"{module}.{name}: the re-exports go round in a circle")
    tree = parse(module)
    is_package = module_file(module).name == "__init__.py"
    body = tree.body
    i = definition(body, name)
    if i is not None:
        node = body[i]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node)
            if not doc:
                raise ApiError(f"{module}.{name}: a public {type(node).__name__[:-3].lower()} without a docstring")
            return Entry(name, "class" if isinstance(node, ast.ClassDef) else "function", first_line(doc))
        after = body[i + 1] if i + 1 < len(body) else None
        doc = after.value.value if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) else None
        if not isinstance(doc, str):
            doc = comment_of(module_file(module).read_text(encoding="utf-8").split("\n"), node)
        if not doc:
            raise ApiError(f"{module}.{name}: a public name without a docstring or a comment saying what it is")
        value = node.value
        alias = isinstance(value, ast.Subscript) or (
            isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("TypedDict", "NamedTuple", "TypeVar")
        )
        return Entry(name, "type" if alias else "constant", first_line(doc))
    for node in body:
        if isinstance(node, ast.ImportFrom):
            source = absolute(module, node, is_package)
            for alias in node.names:
                if (alias.asname or alias.name) == name and source.split(".")[0] in PACKAGES:
                    if module_file(f"{source}.{alias.name}") is not None:  # a submodule re-exported by name
                        return Entry(name, "module", first_line(ast.get_docstring(parse(f"{source}.{alias.name}"))))
                    return resolve(source, alias.name, seen | {(module, name)})
    if is_package:  # a lazy export (a module-level __getattr__ importing it from one of the package's modules)
        homes = [f"{module}.{path.stem}" for path in sorted(module_file(module).parent.glob("*.py"))
                 if path.stem != "__init__" and definition(parse(f"{module}.{path.stem}").body, name) is not None]  # fmt: skip
        if len(homes) == 1:
            return resolve(homes[0], name, seen | {(module, name)})
    raise ApiError(f"{module}.{name}: listed in __all__ but defined nowhere in the source")


def comment_of(lines: list[str], node: ast.stmt) -> str | None:
    """The ``#`` comment that describes an assignment: the lines right above it, else one at the end of its line."""
    above = []
    i = node.lineno - 2
    while i >= 0 and lines[i].lstrip().startswith("#"):
        above.insert(0, lines[i].lstrip()[1:].strip())
        i -= 1
    if above:
        return " ".join(above)
    _, hash_, trailing = lines[node.lineno - 1].partition("  # ")
    return trailing.strip() if hash_ and "fmt:" not in trailing else None


def definition(body: list[ast.stmt], name: str) -> int | None:
    """The index of the top-level statement that defines ``name`` (a class, a function or an assignment), if any."""
    for i, node in enumerate(body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return i
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return i
        elif isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return i
    return None


def page() -> str:
    """The API page's markdown."""
    lines = [
        "# Public API",
        "",
        f"*Generated by `{COMMAND}` from the `__all__` of each module below; a test fails while it is stale.* "
        "These names are the contract: anything else may change between releases. Each module's own docstring and "
        "the other pages say how the pieces fit ([design](design.md), [extending](extending.md)).",
        "",
    ]
    for module in API:
        tree = parse(module)
        lines += [f"## `{module}`", "", first_line(ast.get_docstring(tree)) or "", ""]
        lines += ["| name | kind | what it is |", "|---|---|---|"]
        for name in exported(tree, module):
            entry = resolve(module, name)
            lines.append(f"| `{entry.name}` | {entry.kind} | {entry.summary} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write the page, or with ``--check`` say whether it is current; the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/api.md is stale")
    args = parser.parse_args(argv)
    try:
        text = page()
    except ApiError as error:
        print(f"gen_api_docs: {error}", file=sys.stderr)
        return 1
    if args.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != text:
            print(f"docs/api.md is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
