"""Write docs/envs/: one page per env class, built from its docstring (the env's manual) and the registry.

    python scripts/gen_env_docs.py            # (or python -m scripts.gen_env_docs) rewrite the pages
    python scripts/gen_env_docs.py --check    # exit 1 and name the stale pages (tests/docs runs this check)

Each page holds the ids registered for the class with their registered kwargs, the class docstring with its
reStructuredText inline markup turned into Markdown, the Arguments table written from the env's config fields
(their defaults, allowed values and docstrings: the one place an argument is declared, see
``ragen_envs.arguments``), the env's actions as tools (its ``action_tools``, for
``response_format="tool"``), and the hand-written notes in docs/envs/notes/<page>.md when that file exists (measurements and design history belong in docs/benchmarks.md, not here).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV_DOCS = ROOT / "docs" / "envs"
NOTES = ENV_DOCS / "notes"
COMMAND = "python scripts/gen_env_docs.py"

_ROLE = re.compile(r":(?:func|mod|class|meth|attr|data|obj):`~?([^`]+)`")
# ``literal`` (which may hold backticks of its own, and may run onto the next line of a paragraph)
_LITERAL = re.compile(r"(?<!`)``(?!`)((?:[^\n]|\n(?!\n))+?)(?<!`)``(?!`)")


def _inline(text: str) -> str:
    """``code`` and :role:`target` as Markdown code spans; other backticks escaped so they stay text."""
    text = _ROLE.sub(lambda m: f"``{m.group(1)}``", text)
    out, end = [], 0
    for match in _LITERAL.finditer(text):
        out.append(text[end : match.start()].replace("`", "\\`"))
        body = match.group(1)
        out.append(f"`` {body} ``" if "`" in body else f"`{body}`")
        end = match.end()
    out.append(text[end:].replace("`", "\\`"))
    return "".join(out)


def rst_to_markdown(doc: str) -> str:
    """The docstring's body as Markdown: inline markup converted, ``::`` literal blocks fenced."""
    out: list[str] = []
    prose: list[str] = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.rstrip().endswith("::"):
            prose.append(line)
            continue
        prose.append(line.rstrip()[:-1])
        block: list[str] = []
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
            block.append(lines[i][4:])
            i += 1
        while block and not block[0].strip():
            block.pop(0)
        while block and not block[-1].strip():
            block.pop()
        out += [_inline("\n".join(prose)), "", "```text", *block, "```", ""]
        prose = []
    out.append(_inline("\n".join(prose)))
    return "\n".join(out).strip() + "\n"


def _kwargs(kwargs: dict) -> str:
    return ", ".join(f"`{key}={value!r}`" for key, value in kwargs.items()) or "defaults"


def env_classes() -> dict[type, list[tuple[str, dict]]]:
    """Every registered ``ragen/*`` env class with its ids and their registered kwargs, in registry order."""
    from gymnasium.envs.registration import registry

    import ragen_envs

    ours = set(ragen_envs.registered_ids())
    classes: dict[type, list[tuple[str, dict]]] = {}
    for env_id, spec in registry.items():  # registration order: a base id before its variants
        if env_id not in ours:
            continue
        module, name = spec.entry_point.split(":")
        cls = getattr(importlib.import_module(module), name)
        classes.setdefault(cls, []).append((env_id, dict(spec.kwargs)))
    return classes


def page_name(cls: type) -> str:
    """``SokobanEnv`` -> ``sokoban.md``."""
    return cls.__name__.removesuffix("Env").lower() + ".md"


def _title(ids: list[tuple[str, dict]]) -> str:
    return ids[0][0].removeprefix("ragen/").split("-")[0]


def render_tools(cls: type) -> str:
    """The page's section on the tool format: each of the env's ``action_tools`` and an example response."""
    from ragen_envs.parsing import split_actions
    from ragen_envs.tools import write_tool_calls

    rows = []
    for tool in cls.action_tools:
        kind = "string or number" if tool.accepts_numbers else "string"
        if tool.choices:
            kind += "; one of " + ", ".join(f"`{choice}`" for choice in tool.choices)
        plays = tool.template.replace("{}", f"<{tool.parameter}>")
        rows.append(
            f"| `{tool.name}` | {tool.description} | `{tool.parameter}` ({kind}): {tool.parameter_description} "
            f"| `{plays}` |"
        )
    example = write_tool_calls(split_actions(cls.example_answer, cls.action_separator), cls.action_tools)
    several = "one call per action, several per response" if cls.action_separator else "one call per response"
    return "\n".join(
        [
            '## Tools (`response_format="tool"`)',
            'With `response_format="tool"` the actions are offered as tools (`info["tools"]` and the system prompt)',
            f"and the response is reasoning, then `<tool_call>` blocks ({several}); each call plays the action in the",
            "last column. See [the tool format](../contract.md#the-tool-format).",
            "",
            "| tool | what it does | argument | action it plays |",
            "|---|---|---|---|",
            *rows,
            "",
            "A response in the tool format:",
            "",
            "```text",
            f"...your reasoning...\n{example}",
            "```",
        ]
    )


def _cell(text: str) -> str:
    return _inline(text).replace("|", "\\|")


def render_arguments(cls: type) -> str:
    """The Arguments table: every argument the env takes (its config's fields, then the base ones) with the env's
    default, the allowed values and the field's docstring."""
    from ragen_envs.arguments import allowed_text

    rows = ["| argument | default | allowed | what it sets |", "|---|---|---|---|"]
    for name, (default, field) in cls.arguments().items():
        shown = field.metadata.get("shown_default") or f"``{default!r}``"
        rows.append(f"| `{name}` | {_cell(shown)} | {_cell(allowed_text(field))} | {_cell(field.metadata['doc'])} |")
    return "\n".join(rows)


def with_arguments(cls: type, body: str) -> str:
    """The docstring's Markdown with the Arguments table at the top of its Arguments section (a section is added
    before Version History when the docstring has none); unchanged for an env that writes its own ``__init__``."""
    if not getattr(cls, "declares_arguments", lambda: False)():
        return body
    lines = body.split("\n")
    table = render_arguments(cls)
    if "## Arguments" in lines:
        at = lines.index("## Arguments") + 1
        rest = lines[at:]
        gap = [""] if rest and rest[0].strip() and not rest[0].startswith("## ") else []
        return "\n".join([*lines[:at], table, *gap, *rest])
    at = lines.index("## Version History") if "## Version History" in lines else len(lines)
    return "\n".join([*lines[:at], "## Arguments", table, "", *lines[at:]])


def render_page(cls: type, ids: list[tuple[str, dict]]) -> str:
    """One env's page: registered ids, the docstring as Markdown, its tools, then the notes file if any."""
    doc = inspect.getdoc(cls)
    if not doc:
        raise ValueError(f"{cls.__module__}.{cls.__qualname__} has no docstring: the env docstring is its manual")
    summary, _, body = doc.partition("\n")
    notes = NOTES / page_name(cls)
    source = f"the docstring of `{cls.__module__}.{cls.__qualname__}`"
    if notes.exists():
        source += f" and `docs/envs/notes/{notes.name}`"
    parts = [
        f"<!-- Generated by `{COMMAND}` from {source}: edit those, then rerun it. -->",
        f"# {_title(ids)}",
        "",
        _inline(summary.strip()),
        "",
        "| id | registered kwargs |",
        "|---|---|",
        *(f"| `{env_id}` | {_kwargs(kwargs)} |" for env_id, kwargs in ids),
        "",
        f"`gym.make(id, **kwargs)` builds `{cls.__module__}.{cls.__qualname__}`; kwargs given to `gym.make` override",
        "the registered ones.",
        "",
        with_arguments(cls, rst_to_markdown(body)).rstrip(),
        "",
        render_tools(cls),
    ]
    if notes.exists():
        parts += ["", notes.read_text().rstrip()]
    return "\n".join(parts) + "\n"


def render_index(classes: dict[type, list[tuple[str, dict]]]) -> str:
    """docs/envs/README.md: every registered id, one line each, linked to its page."""
    rows = []
    for cls, ids in classes.items():
        summary = _inline(inspect.getdoc(cls).partition("\n")[0].strip())
        for env_id, kwargs in ids:
            rows.append(f"| [`{env_id}`]({page_name(cls)}) | {_kwargs(kwargs)} | {summary} |")
    header = [
        f"<!-- Generated by `{COMMAND}` from the registry and the env docstrings: edit those, then rerun it. -->",
        "# Environments",
        "",
        "Every registered id, its registered kwargs and its env class's one-line summary. Each page is the",
        "class docstring (Description, Action Space, Observation Space, Rewards, Episode End, Arguments,",
        "Version History); the contract they all follow is in [the env contract](../contract.md).",
        "",
        "| id | registered kwargs | what |",
        "|---|---|---|",
    ]
    return "\n".join([*header, *rows]) + "\n"


def pages() -> dict[Path, str]:
    """Every generated file under docs/envs/ and its content."""
    classes = env_classes()
    out = {ENV_DOCS / page_name(cls): render_page(cls, ids) for cls, ids in classes.items()}
    out[ENV_DOCS / "README.md"] = render_index(classes)
    return out


def stale(expected: dict[Path, str]) -> list[str]:
    """Generated files that are missing or differ, and pages under docs/envs/ no env generates any more."""
    problems = [
        f"{path.relative_to(ROOT)}: {'missing' if not path.exists() else 'out of date'}"
        for path, text in expected.items()
        if not path.exists() or path.read_text() != text
    ]
    problems += [
        f"{path.relative_to(ROOT)}: no env generates it" for path in ENV_DOCS.glob("*.md") if path not in expected
    ]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--check", action="store_true", help="report stale pages instead of writing them")
    args = parser.parse_args(argv)
    expected = pages()
    if args.check:
        problems = stale(expected)
        for problem in problems:
            print(f"gen_env_docs: {problem}; run `{COMMAND}`", file=sys.stderr)
        return 1 if problems else 0
    ENV_DOCS.mkdir(parents=True, exist_ok=True)
    for path, text in expected.items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    for path in ENV_DOCS.glob("*.md"):
        if path not in expected:
            path.unlink()
            print(f"removed {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    if str(ROOT) not in sys.path:  # `python scripts/gen_env_docs.py` from anywhere imports this checkout
        sys.path.insert(0, str(ROOT))
    sys.exit(main())
