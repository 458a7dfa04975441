"""Attacks on what gets published: archives that show ``tar`` other files than the verified ones, absurd
self-reported metrics, and submitter text that would become links, line breaks or reordered text."""

from __future__ import annotations

import gzip
import io
import json
import math
import shutil
import subprocess
import tarfile

import pytest
from lb_helpers import MINI

from leaderboard.build import build
from leaderboard.cli import main
from leaderboard.pack import ArchiveError, read_archive
from leaderboard.verify import verify


def _tar(members: dict[str, bytes], *, end_marker: bool = True) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    data = buffer.getvalue()
    if not end_marker:
        data = data.rstrip(b"\0")
        data += b"\0" * (-len(data) % 512)
    return data


def _evil_members(honest: dict[str, bytes]) -> dict[str, bytes]:
    return {**honest, "episodes.jsonl": b'{"forged": true}\n'}


# (name, build the attack from the honest archive's bytes and members)
ARCHIVE_ATTACKS = {
    "second gzip member with other files": lambda raw, m: raw + gzip.compress(_tar(_evil_members(m))),
    "second, empty gzip member": lambda raw, m: raw + gzip.compress(b""),
    "trailing garbage after gzip": lambda raw, m: raw + b"GARBAGE" * 10,
    "trailing zero bytes after gzip": lambda raw, m: raw + b"\0" * 1024,
    "a second tar stream after the end marker": lambda raw, m: gzip.compress(_tar(m) + _tar(_evil_members(m))),
    "a member hidden after one zero block": lambda raw, m: gzip.compress(
        _tar(m, end_marker=False) + b"\0" * 512 + _tar({"episodes.jsonl": b"{}\n"})
    ),
    "garbage after the end marker": lambda raw, m: gzip.compress(_tar(m) + b"x" * 512),
    "no end-of-archive marker": lambda raw, m: gzip.compress(_tar(m, end_marker=False)),
    "two concatenated copies": lambda raw, m: raw + raw,
}


@pytest.mark.parametrize("attack", sorted(ARCHIVE_ATTACKS))
def test_an_archive_must_be_one_gzip_member_holding_one_tar_stream(mini_submissions, tmp_path, attack):
    honest = mini_submissions["oracle"]
    raw = honest.read_bytes()
    path = tmp_path / "attack.ragen.tar.gz"
    path.write_bytes(ARCHIVE_ATTACKS[attack](raw, read_archive(honest)))
    with pytest.raises(ArchiveError):
        read_archive(path)
    report = verify(path, suite=MINI)
    assert not report.ok and len(report.problems) == 1, report.problems


@pytest.mark.skipif(shutil.which("tar") is None, reason="no tar here")
def test_the_second_member_attack_is_real_for_tar(mini_submissions, tmp_path):
    # What the check closes: GNU tar reads on through a second gzip member and extracts its episodes.jsonl.
    members = read_archive(mini_submissions["oracle"])
    path = tmp_path / "attack.ragen.tar.gz"
    path.write_bytes(mini_submissions["oracle"].read_bytes() + gzip.compress(_tar(_evil_members(members))))
    (tmp_path / "x").mkdir()
    subprocess.run(["tar", "-xzif", str(path), "-C", str(tmp_path / "x")], check=False, capture_output=True)
    assert (tmp_path / "x" / "episodes.jsonl").read_bytes() == b'{"forged": true}\n'
    assert not verify(path, suite=MINI).ok


# ---- self-reported metrics ------------------------------------------------------------------------------
ABSURD = {
    "huge MI": ("trajectory/mi_estimate", 1.7e308),
    "huge negative MI": ("trajectory/mi_estimate", -1.7e308),
    "NaN MI": ("trajectory/mi_estimate", math.nan),
    "infinite entropy": ("token_entropy", math.inf),
    "negative entropy": ("token_entropy", -0.5),
    "accuracy above one": ("trajectory/retrieval_accuracy", 1.5),
    "chance below zero": ("trajectory/retrieval_chance", -0.1),
    "z-score beyond bounds": ("trajectory/mi_zscore", 1e300),
    "an int beyond floats": ("token_entropy", 10**400),
    "MI as a string": ("trajectory/mi_estimate", "0.5"),
    "MI as a bool": ("trajectory/mi_estimate", True),
    "MI as a list": ("trajectory/mi_estimate", [0.1]),
}


@pytest.mark.parametrize("attack", sorted(ABSURD))
def test_absurd_self_reported_metrics_are_refused_at_verify(forge, attack):
    key, value = ABSURD[attack]
    f = forge()
    summary = json.loads(f.members["summary.json"])
    summary["rows"][0]["metrics"][key] = {"value": value, "stderr": None, "n": 8}
    f.members["summary.json"] = json.dumps(summary, allow_nan=True).encode()
    report = verify(f.save(), suite=MINI)
    assert not report.ok
    assert any("self-reported" in p and key in p for p in report.problems), report.problems


@pytest.fixture(scope="module")
def board(submissions, tmp_path_factory):
    root = tmp_path_factory.mktemp("board")
    for agent in ("random", "oracle"):
        assert main(["add", str(submissions[agent]), "--store", str(root / "store")]) == 0
    return root / "store"


def _edit_entries(store, tmp_path, edit):
    copy = tmp_path / "store"
    shutil.copytree(store, copy)
    for folder in sorted(p for p in copy.iterdir() if p.is_dir()):
        entry = json.loads((folder / "entry.json").read_text())
        edit(entry)
        (folder / "entry.json").write_text(json.dumps(entry, allow_nan=True))
    return copy


STORED_VALUES = [1.7e308, -1.7e308, math.nan, math.inf, "0.5", None, [1], {"a": 1}, True, 10**400]


@pytest.mark.parametrize("value", STORED_VALUES, ids=[repr(v)[:20] for v in STORED_VALUES])
def test_build_survives_any_stored_value(board, tmp_path, value):
    def edit(entry):
        for env in entry["self_reported"].values():
            env.update({k: value for k in env})
        for env in entry["envs"].values():
            env.update({k: value for k in env})

    store = _edit_entries(board, tmp_path, edit)
    paths = build(tmp_path / "site", store)
    page = paths["index"].read_text()
    assert "inf" not in page.lower().replace("info", "") and "nan%" not in page.lower()
    assert "1.7e+308" not in paths["markdown"].read_text()


# ---- submitter text ---------------------------------------------------------------------------------------
HOSTILE_TEXT = {
    "markdown link": "[click me](https://evil.example/phish)",
    "markdown image": "![logo](https://evil.example/track.png)",
    "reference link": "[x][1]\n\n[1]: https://evil.example",
    "autolink": "<https://evil.example>",
    "bare url": "see https://evil.example now",
    "www link": "www.evil.example",
    "html": '<img src=x onerror="alert(1)">',
    "emphasis and table break": "**bold** | injected | cell",
    "carriage return": "honest\r| 1 | fake row |",
    "line feed": "honest\n| 1 | fake row |",
    "bidi override": "\u202etxt.exe",
    "bidi isolate": "model \u2066evil\u2069",
    "zero width": "Qw\u200ben",
    "line separator": "a\u2028b",
}
BAD_CHARS = ("\r", "\u202e", "\u2066", "\u2069", "\u200b", "\u2028")


@pytest.mark.parametrize("attack", sorted(HOSTILE_TEXT))
def test_hostile_submitter_text_is_escaped_in_every_output(board, tmp_path, attack):
    text = HOSTILE_TEXT[attack]

    def edit(entry):
        entry["metadata"].update(model_name=text, org=text, parameters=text)

    paths = build(tmp_path / "site", _edit_entries(board, tmp_path, edit))
    markdown = paths["markdown"].read_text()
    try:
        from markdown_it import MarkdownIt
    except ImportError:  # the renderer is optional; the escaping checks below still run
        pass
    else:
        rendered = MarkdownIt("commonmark").enable("table").render(markdown)
        assert "<a " not in rendered and "<img" not in rendered and "<strong>" not in rendered
    assert "](" not in markdown.replace("\\](", "").replace("\\(", "")
    lines = [line for line in markdown.splitlines() if line.startswith("| 1 |")]
    assert lines and all(line.count("|") == lines[0].count("|") for line in lines[:1])
    for out in (paths[name].read_bytes().decode() for name in ("markdown", "index", "csv")):  # CR kept as is
        assert not any(ch in out for ch in BAD_CHARS)
    page = paths["index"].read_text()
    assert "<img src=x" not in page and '<a href="https://evil' not in page


@pytest.mark.parametrize("attack", ["carriage return", "line feed", "bidi override", "bidi isolate", "zero width"])
def test_hostile_submitter_text_is_refused_at_verify(forge, attack):
    f = forge()
    meta = json.loads(f.members["metadata.json"])
    meta["model_name"] = HOSTILE_TEXT[attack]
    f.members["metadata.json"] = json.dumps(meta).encode()
    report = verify(f.save(), suite=MINI)
    assert not report.ok and any("model_name" in p and "U+" in p for p in report.problems), report.problems


def test_verified_is_said_to_mean_the_episodes_replay(board, tmp_path):
    paths = build(tmp_path / "site", board)
    assert "the episodes replay" in paths["index"].read_text()
    assert "not that this model produced them" in paths["markdown"].read_text()
