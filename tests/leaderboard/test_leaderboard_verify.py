"""Verification: honest harness runs verify; every kind of tampering is rejected with a reason naming it."""

from __future__ import annotations

import json

import pytest
from lb_helpers import MINI

from leaderboard.pack import write_archive
from leaderboard.suite import OFFICIAL, Suite, SuiteEntry
from leaderboard.verify import check_env_versions, verify


@pytest.mark.parametrize("agent", ["oracle", "random"])
def test_honest_runs_verify(submissions, agent):
    report = verify(submissions[agent])
    assert report.ok, report.problems
    assert report.summary["episodes"] == len(list(OFFICIAL.episodes()))
    assert set(report.summary["envs"]) == set(OFFICIAL.env_ids)
    if agent == "oracle":
        assert report.summary["overall"]["success_rate"] == 1.0
    else:
        assert report.summary["overall"]["success_rate"] < 1.0
    # collapse metrics come from the run and are labelled self-reported; the scripted agents report them
    mi = report.summary["self_reported"]["ragen/Bandit-v0"]["mi_estimate"]
    assert mi is not None and (mi > 0.5 if agent == "oracle" else abs(mi) < 1e-9)


def _rejected(path, *needles, **kwargs):
    kwargs.setdefault("suite", MINI)
    report = verify(path, **kwargs)
    assert not report.ok
    text = "\n".join(report.problems)
    for needle in needles:
        assert needle in text, f"{needle!r} not in:\n{text}"
    return report


def test_edited_reward(forge):
    f = forge("random")
    i = f.find("ragen/Sokoban-v0", min_turns=2)
    f.episodes[i]["turns"][1]["reward"] += 1.0
    _rejected(f.save(), f"{f.name(i)} (episodes.jsonl line {i + 1}) turn 2: recorded reward")


def test_edited_return(forge):
    f = forge()
    i = f.find("ragen/Bandit-v0")
    f.episodes[i]["return"] = 1.0 if f.episodes[i]["return"] != 1.0 else 0.5
    _rejected(f.save(), f"{f.name(i)}", "recorded return")


def test_flipped_success(forge):
    f = forge("random")
    i = f.find("ragen/FrozenLake-v0", success=False)
    f.episodes[i]["success"] = True
    f.episodes[i]["turns"][-1]["info"]["success"] = True
    _rejected(f.save(), f"{f.name(i)}", "info differs from the replay in 'success'")
    g = forge("random")
    g.episodes[i]["success"] = True  # the final flag only
    _rejected(g.save(), f"{g.name(i)}", "recorded final success=True, replay gives False")


def test_altered_response_answer(forge):
    f = forge()
    i = f.find("ragen/Countdown-v0")
    turn = f.episodes[i]["turns"][0]
    turn["response"] = turn["response"].replace("<answer>", "<answer>1+", 1)
    _rejected(f.save(), f"{f.name(i)}", "turn 1")


def test_altered_user_message_or_context_window(forge):
    # A record stores each turn's new user message once: it must be the harness's rendering of the replay.
    f = forge()
    i = f.find("ragen/Sokoban-v0", min_turns=2)
    f.episodes[i]["turns"][1]["user"] = f.episodes[i]["turns"][1]["user"].replace("Reward:", "Reward: +", 1)
    _rejected(f.save(), f.name(i), "turn 2: the recorded user message differs")
    g = forge()
    g.episodes[i]["context_turns"] = 1  # the run's config.json says full history
    _rejected(g.save(), g.name(i), "recorded context window 1, the run's is None")


def test_reasoning_field_must_be_the_responses(forge):
    f = forge("random")
    i = f.find("ragen/Bandit-v0")
    f.episodes[i]["turns"][0]["reasoning"] = "something else entirely"
    _rejected(f.save(), f"{f.name(i)}", "recorded reasoning is not the response's")


def test_swapped_seeds(forge):
    f = forge()
    a = f.find("ragen/Sokoban-v0", seed=MINI.entries[0].seeds[0], sample=0)
    b = f.find("ragen/Sokoban-v0", seed=MINI.entries[0].seeds[1], sample=0)
    assert f.episodes[a]["initial_observation"] != f.episodes[b]["initial_observation"]
    f.episodes[a]["seed"], f.episodes[b]["seed"] = f.episodes[b]["seed"], f.episodes[a]["seed"]
    report = _rejected(f.save(), f.name(a), f.name(b), "initial observation differs")
    assert not any("missing" in p for p in report.problems)  # the seed set itself is still complete


def test_removed_episode(forge):
    f = forge()
    i = f.find("ragen/FrozenLake-v0")
    name = f.name(i)
    del f.episodes[i]
    _rejected(f.save(), f"{name}: missing from episodes.jsonl", "summary.json ragen/FrozenLake-v0")


def test_duplicated_episode(forge):
    f = forge()
    i = f.find("ragen/Bandit-v0")
    f.episodes.append(dict(f.episodes[i]))
    _rejected(f.save(), f"{f.name(i)} (episodes.jsonl line {len(f.episodes)}): duplicated")


def test_extra_episode_outside_the_split(forge):
    f = forge()
    i = f.find("ragen/Bandit-v0")
    extra = dict(f.episodes[i], seed=7)
    f.episodes.append(extra)
    _rejected(f.save(), "episode ragen/Bandit-v0 seed 7 sample 0", "not in the official split of mini-1")


def test_forged_summary(forge):
    f = forge("random")
    summary = json.loads(f.members["summary.json"])
    row = next(r for r in summary["rows"] if r["env_id"] == "ragen/Sokoban-v0")
    row["metrics"]["success_rate"]["value"] = 0.99
    f.members["summary.json"] = json.dumps(summary).encode()
    _rejected(f.save(), "summary.json ragen/Sokoban-v0 success_rate: claims 0.99")


def test_wrong_env_version(forge):
    f = forge()
    i = f.find("ragen/Bandit-v0")
    f.episodes[i]["env_id"] = "ragen/Bandit-v1"
    _rejected(f.save(), "episode ragen/Bandit-v1 seed", "wrong env version (suite has ragen/Bandit-v0)")


def test_wrong_env_version_in_config(forge):
    f = forge()
    config = json.loads(f.members["config.json"])
    config["envs"]["ragen/Sokoban-v0"]["version"] = "v7"
    f.members["config.json"] = json.dumps(config).encode()
    _rejected(f.save(), "config.json records ragen/Sokoban-v0 at version 'v7'; the registered one is v0")


def test_stale_suite_versions_are_reported():
    suite = Suite("t", "1", (SuiteEntry("ragen/Bandit-v0", (1,)), SuiteEntry("ragen/Gone-v0", (1,))))
    problems = check_env_versions(suite, ["ragen/Bandit-v0", "ragen/Bandit-v1"])
    assert any("ragen/Bandit-v1 is the current version" in p for p in problems)
    assert any("ragen/Gone-v0, which this ragen-envs does not register" in p for p in problems)


def test_manifest_hash_mismatch(forge):
    f = forge()
    i = f.find("ragen/Bandit-v0")
    f.episodes[i]["turns"][0]["tokens"] = 12345  # a self-reported field: only the hash can tell
    _rejected(f.save(keep_manifest=True), "episodes.jsonl: sha256 does not match manifest.json")


def test_malformed_json_line(forge, tmp_path):
    f = forge()
    members = dict(f.members)
    lines = members["episodes.jsonl"].split(b"\n")
    lines[4] = lines[4][: len(lines[4]) // 2]
    members["episodes.jsonl"] = b"\n".join(lines)
    path = write_archive(tmp_path / "bad-json.ragen.tar.gz", members)
    _rejected(path, "episodes.jsonl line 5: malformed JSON", f"{f.name(4)}: missing")


def test_malformed_record_fields(forge):
    f = forge()
    f.episodes[2]["turns"][0]["reward"] = "1.0"
    f.episodes[3].pop("instructions")
    _rejected(
        f.save(), "line 3): field turns[0].'reward' must be a finite number", "line 4): field 'instructions' is missing"
    )


def test_malformed_metadata_and_config(forge):
    f = forge()
    meta = json.loads(f.members["metadata.json"])
    meta["weights"] = "javascript:alert(1)"
    f.members["metadata.json"] = json.dumps(meta).encode()
    _rejected(f.save("meta"), "metadata field 'weights' must be an http(s) link or 'closed'")
    g = forge()
    g.members["config.json"] = b"{not json"
    _rejected(g.save("config"), "config.json is malformed JSON")


def test_metadata_must_agree_with_the_run(forge):
    f = forge()
    meta = json.loads(f.members["metadata.json"])
    meta["agent"] = "hf:/models/famous-model"
    f.members["metadata.json"] = json.dumps(meta).encode()
    _rejected(f.save(), "agent is 'hf:/models/famous-model', the run's config.json says 'oracle'")


def test_truncated_archive(mini_submissions, tmp_path):
    data = mini_submissions["oracle"].read_bytes()
    path = tmp_path / "cut.ragen.tar.gz"
    path.write_bytes(data[: len(data) // 2])
    _rejected(path, "archive is truncated or corrupt")


def test_hidden_split_needs_and_checks_the_secret(tmp_path):
    import hashlib

    from harness.runner import run
    from leaderboard.pack import pack_run
    from leaderboard.records import suite_run_config
    from leaderboard.suite import HiddenSplit

    secret = b"season secret"
    suite = Suite(
        "mini", "1", (SuiteEntry("ragen/Bandit-v0", (1, 2, 3), 2),),
        HiddenSplit("s1", hashlib.sha256(secret).hexdigest(), seeds_per_env=4),
    )  # fmt: skip
    run_dir = run(suite_run_config(suite, "oracle", "hidden", secret), tmp_path, progress=False, plots=False).run_dir
    with pytest.raises(ValueError, match="not a leaderboard split"):
        pack_run(run_dir, tmp_path / "x.ragen.tar.gz", model_name="m", org="o", contact="a@b.c", suite=suite)
    path = pack_run(run_dir, tmp_path / "h.ragen.tar.gz", model_name="m", org="o", contact="a@b.c",
                    suite=suite, secret=secret)  # fmt: skip
    assert verify(path, suite=suite, secret=secret).ok
    _rejected(path, "needs the maintainer's secret", suite=suite)
    _rejected(path, "secret does not match", suite=suite, secret=b"guess")


def test_unknown_suite_version(forge):
    f = forge()
    meta = json.loads(f.members["metadata.json"])
    meta["suite"], meta["suite_version"] = "official", "999"
    f.members["metadata.json"] = json.dumps(meta).encode()
    _rejected(f.save(), "unknown suite official-999", suite=None)


def test_a_run_of_another_suite_is_not_the_official_one(mini_submissions):
    # Verified against the official suite, the mini run's config is not the official split.
    report = verify(mini_submissions["oracle"], suite=OFFICIAL)
    assert not report.ok and "not a leaderboard split" in "\n".join(report.problems)


def test_package_level_api(submissions):
    import leaderboard

    report = leaderboard.verify(submissions["oracle"])
    assert isinstance(report, leaderboard.Report) and report.ok and str(report) == "verified"
