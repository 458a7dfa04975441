"""The command blocks of the docs, as tests run them: which lines run, which are skipped and why, what they print.

A fenced ``bash`` or ``python`` block in a page is run as written (tests/docs/test_doc_commands.py), in order, in
one scratch folder per page. HTML comments on the lines just above a fence (invisible on the rendered page) say
what does not run, always with a reason:

- ``<!-- doc-test: skip (REASON) -->``: the whole block;
- ``<!-- doc-test: skip "TEXT" (REASON) -->``: the command lines that contain TEXT (each marker must match one);
- ``<!-- doc-test: "TEXT" with ARGS (REASON) -->``: the lines that contain TEXT run with ARGS appended, a smaller
  run of a long command; the page's visible text must say so (the reason names where);
- ``<!-- doc-test: output -->`` above a ``text`` block: what the block before it prints, compared exactly.

Placeholders a user fills in from an earlier command are filled the same way: ``runs/<run-id>`` is the newest run
folder the page's commands made, ``runs/<a>``, ``runs/<b>`` the first and second; any other ``<…>`` in a line that
runs is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

RUNNABLE = ("bash", "python")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"^<!-- doc-test: (.*?) -->$")
SKIP = re.compile(r'skip(?: "([^"]+)")? \((.+)\)')
WITH = re.compile(r'"([^"]+)" with (.+?) \((.+)\)')


@dataclass
class Block:
    """One fenced block: its page, the line of its fence, language, text and the markers above it."""

    page: Path
    line: int
    language: str
    text: str
    markers: list[str] = field(default_factory=list)
    expected_output: str | None = None
    """The ``text`` block marked ``output`` right after it, if any."""

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"

    def skipped(self) -> str | None:
        """The reason the whole block does not run, or None."""
        for marker in self.markers:
            match = SKIP.fullmatch(marker)
            if match and match.group(1) is None:
                return match.group(2)
        return None

    def line_skips(self) -> list[tuple[str, str]]:
        """(text, reason) of each ``skip "TEXT"`` marker."""
        return [(m.group(1), m.group(2)) for m in map(SKIP.fullmatch, self.markers) if m and m.group(1)]

    def additions(self) -> list[tuple[str, str]]:
        """(text, arguments) of each ``"TEXT" with ARGS`` marker."""
        return [(m.group(1), m.group(2)) for m in map(WITH.fullmatch, self.markers) if m]

    def commands(self) -> list[tuple[str, str | None]]:
        """A bash block's commands as written (continuation lines joined, comment lines dropped), each with the
        reason it is skipped or None."""
        joined = re.sub(r"\s*\\\n\s*", " ", self.text)
        lines = [line.strip() for line in joined.splitlines()]
        skips = self.line_skips()
        out = []
        for line in lines:
            if not line or line.startswith("#"):
                continue
            reason = next((why for text, why in skips if text in line), None)
            out.append((line, reason))
        return out

    def to_run(self, line: str) -> str:
        """``line`` as the test runs it: the arguments of a matching ``with`` marker go before its comment."""
        for text, arguments in self.additions():
            if text in line:
                command, hash_, comment = line.partition(" #")
                line = f"{command.rstrip()} {arguments}" + (f"  #{comment}" if hash_ else "")
        return line


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks in order, with their markers and expected outputs."""
    text = page.read_text(encoding="utf-8")
    found: list[Block] = []
    for match in FENCE.finditer(text):
        head = text[: match.start()]
        markers = []
        for previous in reversed(head.rstrip("\n").splitlines()):
            marker = MARKER.match(previous.strip())
            if not marker:
                break
            markers.insert(0, marker.group(1))
        block = Block(page, head.count("\n") + 1, match.group(1), match.group(2), markers)
        if block.language == "text" and "output" in markers and found:
            found[-1].expected_output = block.text
        found.append(block)
    return found


def marker_problems(block: Block) -> list[str]:
    """Markers that are not understood, give no reason, or name text no command line holds."""
    problems = []
    for marker in block.markers:
        if marker == "output":
            if block.language != "text":
                problems.append(f"{block.where}: 'output' marks a {block.language or 'plain'} block, not a text block")
            continue
        match = SKIP.fullmatch(marker) or WITH.fullmatch(marker)
        if not match or not match.groups()[-1].strip():
            problems.append(f"{block.where}: not a doc-test marker (see tests/docs/doc_blocks.py): {marker}")
        elif block.language not in RUNNABLE:
            problems.append(
                f"{block.where}: a doc-test marker on a {block.language or 'plain'} block, which never runs"
            )
    if block.language == "bash":
        for text, _ in block.line_skips() + block.additions():
            if not any(text in line for line, _ in block.commands()):
                problems.append(f'{block.where}: marker "{text}" matches no command line')
    return problems


PLACEHOLDER = re.compile(r"<[\w-]+>")


def fill_placeholders(command: str, runs: list[Path]) -> str:
    """``runs/<run-id>`` (newest), ``runs/<a>``, ``runs/<b>``… (in the order made) filled from ``runs``; raises
    ``ValueError`` for a placeholder left over."""
    names = {"<run-id>": runs[-1] if runs else None}
    for index, letter in enumerate("abc"):
        names[f"<{letter}>"] = runs[index] if index < len(runs) else None
    for placeholder, run in names.items():
        if placeholder in command:
            if run is None:
                raise ValueError(f"{command!r}: no run folder made yet to fill {placeholder}")
            command = command.replace(placeholder, run.name)
    left = PLACEHOLDER.findall(command.replace("<<", ""))
    if left:
        raise ValueError(f"{command!r}: placeholder {left[0]} cannot be filled; mark the line skipped with a reason")
    return command
