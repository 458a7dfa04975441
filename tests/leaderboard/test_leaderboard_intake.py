"""Attacks on the leaderboard's intake: a line crafted to blow up the parser, an archive swapped while it is being
verified, a FIFO or a link for an archive, and hidden-split seeds stored where ``git add -A`` publishes them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
import tracemalloc
from pathlib import Path

import pytest
from lb_helpers import MINI

from leaderboard.cli import main
from leaderboard.pack import read_archive, write_archive
from leaderboard.records import RESPONSE_CAP_CHARS
from leaderboard.store import ARCHIVE, add
from leaderboard.verify import Replayer, verify
from tests.helpers.paths import ROOT


def _peak_bytes(fn, *args, **kwargs) -> tuple[object, int]:
    tracemalloc.start()
    try:
        return fn(*args, **kwargs), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_crafted_line_is_refused_before_it_is_parsed(forge):
    f = forge()
    honest = f.save("honest")
    # One record stuffed with 3 MiB of empty objects (about 2 KiB gzip'd): the JSON parser makes a 64-byte dict
    # of every 3 bytes, so parsing it would cost ~60 MiB.
    stuffed = dict(f.episodes[0], sample=99, padding=[{}] * (1 << 20))
    f.episodes.append(stuffed)
    attack = f.save("stuffed")
    assert attack.stat().st_size < honest.stat().st_size + (64 << 10)
    honest_report, honest_peak = _peak_bytes(verify, honest, suite=MINI)
    report, peak = _peak_bytes(verify, attack, suite=MINI)
    assert honest_report.ok and not report.ok
    # Holding the line's bytes (in the stream and in its member) is the cost; parsing it would be 20x that.
    line_bytes = len(json.dumps(stuffed, separators=(",", ":")))
    assert peak - honest_peak < 4 * line_bytes, f"{(peak - honest_peak) / line_bytes:.1f} bytes per byte of the line"
    line = len(f.episodes)
    assert any(f"episodes.jsonl line {line}: " in p and "not parsed" in p for p in report.problems), report.problems


def test_members_are_capped_by_name_before_they_are_parsed(forge):
    f = forge()
    f.members["config.json"] = f.members["config.json"] + b" " * (2 << 20)  # still the same JSON, 2 MiB
    report = verify(f.save("big-config"), suite=MINI)
    assert not report.ok and len(report.problems) == 1
    assert "'config.json' is 2,09" in report.problems[0] and "1,048,576-byte limit" in report.problems[0]


def test_a_response_over_the_cap_is_refused_by_name(forge):
    f = forge()
    i = f.find("ragen/Bandit-v0")
    turn = f.episodes[i]["turns"][0]
    turn["response"] += " " * RESPONSE_CAP_CHARS
    report = verify(f.save("long"), suite=MINI)
    assert any(f"{f.name(i)} " in p and f"over the leaderboard's {RESPONSE_CAP_CHARS:,}" in p for p in report.problems)


def _swapping_replay(path: Path, forged: bytes):
    """Replayer.replay that replaces the file at ``path`` with ``forged`` on its first call (an attacker racing
    the verification), then replays as before."""
    original = Replayer.replay
    swapped = []

    def replay(self, record):
        if not swapped:
            tmp = path.with_name("swap.tmp")
            tmp.write_bytes(forged)
            os.replace(tmp, path)
            swapped.append(True)
        return original(self, record)

    return replay


def test_add_stores_the_bytes_it_verified(mini_submissions, tmp_path, monkeypatch):
    honest = mini_submissions["oracle"].read_bytes()
    members = read_archive(mini_submissions["oracle"])
    members["report.md"] = b"# Forged\n\n[claim your prize](https://evil.example)\n"
    members["episodes.jsonl"] = b'{"forged": true}\n'
    forged = write_archive(tmp_path / "forged.ragen.tar.gz", members).read_bytes()
    path = tmp_path / "submission.ragen.tar.gz"
    path.write_bytes(honest)
    monkeypatch.setattr(Replayer, "replay", _swapping_replay(path, forged))
    report, folder = add(path, tmp_path / "store", suite=MINI)
    assert report.ok and path.read_bytes() == forged  # the swap happened during the replay
    stored = (folder / ARCHIVE).read_bytes()
    assert hashlib.sha256(stored).hexdigest() == hashlib.sha256(honest).hexdigest()
    assert (folder / "report.md").read_bytes() == read_archive(mini_submissions["oracle"])["report.md"]
    assert json.loads((folder / "entry.json").read_text())["archive_sha256"] == hashlib.sha256(honest).hexdigest()


def _within(seconds: float, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, failing the test if it has not returned within ``seconds`` (a blocked open)."""
    result = []
    thread = threading.Thread(target=lambda: result.append(fn(*args, **kwargs)), daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"{fn.__name__} still blocked after {seconds} s"
    return result[0]


def test_a_fifo_or_a_link_is_not_an_archive(mini_submissions, tmp_path):
    fifo = tmp_path / "fifo.ragen.tar.gz"
    os.mkfifo(fifo)
    report = _within(30, verify, fifo, suite=MINI)
    assert not report.ok and "not a regular file" in report.problems[0]
    report, folder = _within(30, add, fifo, tmp_path / "store", suite=MINI)
    assert folder is None and "not a regular file" in report.problems[0]
    link = tmp_path / "link.ragen.tar.gz"
    link.symlink_to(mini_submissions["oracle"])
    report = verify(link, suite=MINI)
    assert not report.ok and "symbolic link" in report.problems[0]
    assert verify(mini_submissions["oracle"], suite=MINI).ok


@pytest.fixture
def hidden_submission(tmp_path_factory) -> tuple[Path, list[str]]:
    """(archive, ``--suite F --secret-file S``) of a hidden-split oracle run of Bandit, 3 seeds."""
    from harness.cli import main as harness

    work = tmp_path_factory.mktemp("season")
    secret = work / "season.secret"
    assert main(["secret", "--out", str(secret)]) == 0
    digest = hashlib.sha256(secret.read_bytes().strip()).hexdigest()
    season = MINI.to_dict()
    season["entries"] = season["entries"][2:3]
    season["hidden"] = {"season": "test", "secret_sha256": digest, "seeds_per_env": 3}
    (work / "season.json").write_text(json.dumps(season))
    common = ["--suite", str(work / "season.json"), "--secret-file", str(secret)]
    run = ["run", "oracle", "--split", "hidden", *common, "--out", str(work), "--run-id", "h", "--quiet", "--no-plots"]
    assert harness(run) == 0
    archive = work / "h.ragen.tar.gz"
    submit = ["submit", str(work / "h"), "--model-name", "M", "--org", "O", "--contact", "a@b.c", *common]
    assert harness([*submit, "--out", str(archive)]) == 0
    return archive, common


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_hidden_seeds_never_land_where_git_add_publishes_them(hidden_submission, tmp_path, monkeypatch, capsys):
    archive, common = hidden_submission
    repo = tmp_path / "checkout"
    repo.mkdir()
    _git(repo, "init", "-q")
    monkeypatch.chdir(repo)
    # A checkout that does not ignore the default hidden store: refused, one line, nothing written.
    assert main(["add", str(archive), *common]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "git add -A" in err and ".gitignore" in err, err
    assert main(["add", str(archive), *common, "--store", str(repo / "published")]) == 2
    assert not (repo / "leaderboard").exists() and not (repo / "published").exists()
    # The project's own .gitignore covers the default hidden store: stored, and `git add -A` skips it.
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    assert main(["add", str(archive), *common]) == 0
    stored = list((repo / "leaderboard" / "hidden-submissions").glob(f"*/{ARCHIVE}"))
    assert len(stored) == 1
    assert "hidden-submissions" not in _git(repo, "add", "-A", "--dry-run")
    # Outside any work tree: stored.
    capsys.readouterr()
    assert main(["add", str(archive), *common, "--store", str(tmp_path / "private")]) == 0
    assert list((tmp_path / "private").glob(f"*/{ARCHIVE}"))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_this_repository_ignores_the_default_hidden_store():
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    probe = ROOT / "leaderboard" / "hidden-submissions" / "2026-12-01-m-0123abcd" / ARCHIVE
    assert subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", str(probe)]).returncode == 0
