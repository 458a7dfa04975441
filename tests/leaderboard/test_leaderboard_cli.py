"""The ``leaderboard`` CLI, in-process through ``main(argv)``: exit codes and what it prints."""

from __future__ import annotations

import hashlib
import json
import shlex

from lb_helpers import MINI

from leaderboard.cli import main
from leaderboard.suite import OFFICIAL


def test_verify_prints_verified_and_exits_0(submissions, capsys):
    assert main(["verify", str(submissions["oracle"])]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verified") and "ragen/Sokoban-v0: 256 episodes replayed, success 100.0%" in out


def test_verify_prints_every_reason_and_exits_1(mini_submissions, forge, tmp_path, capsys):
    assert main(["verify", str(mini_submissions["oracle"])]) == 1  # a suite that is not built in
    assert "unknown suite mini-1: not a leaderboard suite" in capsys.readouterr().out
    suite_file = tmp_path / "mini.json"
    suite_file.write_text(json.dumps(MINI.to_dict()))
    assert main(["verify", str(mini_submissions["oracle"]), "--suite", str(suite_file)]) == 0
    capsys.readouterr()
    f = forge()
    f.episodes[0]["turns"][0]["reward"] = 42.0
    removed = f.name(5)
    del f.episodes[5]
    assert main(["verify", str(f.save()), "--suite", str(suite_file)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("rejected:")
    assert f"{f.name(0)} (episodes.jsonl line 1) turn 1: recorded reward 42.0" in out
    assert f"{removed}: missing from episodes.jsonl" in out


def test_verify_json(submissions, capsys):
    assert main(["verify", str(submissions["random"]), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] and document["problems"] == []
    assert document["summary"]["metadata"]["agent"] == "random"


def test_pack_is_harness_submit(suite_runs, tmp_path, capsys):
    out = tmp_path / "mine.ragen.tar.gz"
    argv = ["pack", str(suite_runs["oracle"]), "--model-name", "My 3B", "--org", "Lab", "--contact", "me@lab.org"]
    assert main([*argv, "--out", str(out)]) == 0
    assert main(["verify", str(out)]) == 0
    assert main([*argv, "--out", str(tmp_path / "wrong.tar.gz")]) == 2
    assert "must end with .ragen.tar.gz" in capsys.readouterr().err
    assert main([*argv[:-2], "--out", str(tmp_path / "x.ragen.tar.gz")]) == 2  # no contact
    assert main([*argv, "--weights", "ftp://x", "--out", str(tmp_path / "y.ragen.tar.gz")]) == 2
    assert "'weights' must be an http(s) link or 'closed'" in capsys.readouterr().err


def test_suite_and_secret_commands(tmp_path, capsys):
    assert main(["suite"]) == 0
    out = capsys.readouterr().out
    assert OFFICIAL.label in out and "ragen/Sokoban-v0" in out and OFFICIAL.hidden.secret_sha256 in out
    assert main(["suite", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["fingerprint"] == OFFICIAL.fingerprint()
    secret_file = tmp_path / "season.secret"
    assert main(["secret", "--out", str(secret_file)]) == 0
    digest = capsys.readouterr().out.strip().splitlines()[-1]
    assert digest == hashlib.sha256(secret_file.read_bytes().strip()).hexdigest()
    assert oct(secret_file.stat().st_mode & 0o777) == "0o600"
    assert main(["secret", "--out", str(secret_file)]) == 2  # never overwritten
    # the official season's hash is not this new secret's: the hidden seeds are refused
    assert main(["suite", "--hidden", "--secret-file", str(secret_file)]) == 2
    assert "secret does not match" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys, tmp_path):
    assert main([]) == 2
    assert main(["verfy"]) == 2
    assert main(["verify", str(tmp_path / "nope.ragen.tar.gz")]) == 1
    assert "cannot read" in capsys.readouterr().out
    assert main(["build", "--split", "hiden", "--out", str(tmp_path / "s")]) == 2
    assert "Did you mean 'hidden'" in capsys.readouterr().err
    assert main(["verify", "x.ragen.tar.gz", "--suite", "oficial"]) == 2
    assert "Did you mean 'official'" in capsys.readouterr().err
    assert main(["remove", "nothing", "--store", str(tmp_path)]) == 2


def test_hidden_split_through_both_clis(tmp_path, capsys):
    from harness.cli import main as harness

    secret_file = tmp_path / "season.secret"
    assert main(["secret", "--out", str(secret_file)]) == 0
    digest = capsys.readouterr().out.strip().splitlines()[-1]
    season = MINI.to_dict()
    season["entries"] = season["entries"][2:3]  # Bandit only: fast
    season["hidden"] = {"season": "test", "secret_sha256": digest, "seeds_per_env": 3}
    suite_file = tmp_path / "season.json"
    suite_file.write_text(json.dumps(season))
    common = ["--suite", str(suite_file), "--secret-file", str(secret_file)]
    argv = ["run", "oracle", "--split", "hidden", *common, "--out", str(tmp_path), "--run-id", "h", "--quiet"]
    assert harness([*argv, "--no-plots"]) == 0
    capsys.readouterr()
    submit = ["submit", str(tmp_path / "h"), "--model-name", "M", "--org", "O", "--contact", "a@b.c"]
    assert harness([*submit, "--out", str(tmp_path / "x.ragen.tar.gz")]) == 2  # no secret: not a known split
    assert "a hidden-split run also needs --secret-file" in capsys.readouterr().err
    archive = tmp_path / "h.ragen.tar.gz"
    assert harness([*submit, *common, "--out", str(archive)]) == 0
    assert main(["verify", str(archive), "--suite", str(suite_file)]) == 1
    assert "needs the maintainer's secret" in capsys.readouterr().out
    assert main(["verify", str(archive), *common]) == 0
    capsys.readouterr()
    assert main(["suite", "--hidden", *common]) == 0
    seeds = json.loads(capsys.readouterr().out)["ragen/Bandit-v0"]
    recorded = {json.loads(line)["seed"] for line in (tmp_path / "h" / "episodes.jsonl").read_text().splitlines()}
    assert recorded == set(seeds) and len(seeds) == 3 and min(seeds) >= 2**20


def test_add_suggests_the_build_that_publishes_the_same_store(submissions, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)  # site/ of the suggested command lands here
    store = tmp_path / "my store"
    assert main(["add", str(submissions["oracle"]), "--store", str(store)]) == 0
    suggested = capsys.readouterr().out.splitlines()[-1].partition("publish with: ")[2]
    words = shlex.split(suggested)
    assert words[:2] == ["leaderboard", "build"] and words[words.index("--store") + 1] == str(store)
    assert main(words[1:]) == 0
    assert "oracle" in (tmp_path / "site" / "leaderboard.csv").read_text()
