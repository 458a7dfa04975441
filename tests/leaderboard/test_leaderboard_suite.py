"""The official suite: a versioned, validated definition; hidden seeds from a secret of published hash."""

from __future__ import annotations

import hashlib
import json

import pytest

import ragen_envs
from leaderboard.records import identify_run, suite_run_config
from leaderboard.suite import (
    HIDDEN_SEED_LOW,
    OFFICIAL,
    OFFICIAL_V1,
    HiddenSplit,
    Suite,
    SuiteEntry,
    env_version,
    find_suite,
    hidden_seeds,
    load_suite,
)

SECRET = b"test-secret-do-not-use"
SECRET_HASH = hashlib.sha256(SECRET).hexdigest()


def test_official_suite_envs_are_registered_at_their_current_version():
    registered = set(ragen_envs.registered_ids())
    for env_id in OFFICIAL.env_ids:
        assert env_id in registered
        base = env_id.rsplit("-v", 1)[0]
        newer = [e for e in registered if e.startswith(base + "-v") and env_version(e) > env_version(env_id)]
        assert not newer, f"{env_id} is stale: bump the suite version"


def test_official_suite_is_pinned_by_its_fingerprint():
    # Changing the official suite without bumping its version would silently invalidate submissions:
    # update this constant only together with OFFICIAL.version.
    assert (OFFICIAL.name, OFFICIAL.version) == ("official", "2")
    assert OFFICIAL.fingerprint() == Suite.from_dict(OFFICIAL.to_dict()).fingerprint()
    assert OFFICIAL.fingerprint() == "dfd9bc891ee6a7498fc8437055e9f9f52af6b37cca814ef483d1d05163335f82"
    assert "ragen/SearchQA-v0" in OFFICIAL.env_ids


def test_older_suite_versions_stay_as_published_and_are_still_recognised():
    # version 1 as it was published: runs made with it keep verifying against it
    assert OFFICIAL_V1.fingerprint() == "99a91bf5dd21bb14c367642ba8cdea8d1b5989b3e66ba4ff6d75c0f718f4a9ed"
    assert find_suite("official", "1") is OFFICIAL_V1 and find_suite("official", "2") is OFFICIAL
    assert load_suite("official-1") is OFFICIAL_V1 and load_suite("official-2") is OFFICIAL
    for suite in (OFFICIAL_V1, OFFICIAL):
        config = json.loads(json.dumps({"run": suite_run_config(suite, "random").to_json()}))
        assert identify_run(config) == (suite, "official")


def test_episodes_cover_every_seed_and_sample_once():
    episodes = list(OFFICIAL.episodes())
    assert len(episodes) == len(set(episodes))
    expected = sum(len(e.seeds) * e.samples_per_seed for e in OFFICIAL.entries)
    assert len(episodes) == expected


def test_hidden_seeds_are_deterministic_distinct_and_disjoint_from_public_ones():
    a = hidden_seeds(SECRET, "s1", "ragen/Bandit-v0", 500)
    assert a == hidden_seeds(SECRET, "s1", "ragen/Bandit-v0", 500)
    assert len(set(a)) == 500 and list(a) == list(range(a[0], a[0] + 500))  # a seed range, as harness plans take
    assert all(HIDDEN_SEED_LOW <= s < 2**31 for s in a)
    assert not set(a) & set(OFFICIAL.entries[0].seeds)
    assert a != hidden_seeds(SECRET, "s2", "ragen/Bandit-v0", 500)  # a new season is a new split
    assert a != hidden_seeds(b"other", "s1", "ragen/Bandit-v0", 500)
    assert a != hidden_seeds(SECRET, "s1", "ragen/Sokoban-v0", 500)
    starts = {hidden_seeds(bytes([i]), "s1", "ragen/Bandit-v0", 1)[0] for i in range(200)}
    assert len(starts) == 200  # the start is spread over a huge range: not guessable


def test_hidden_split_needs_the_right_secret():
    suite = Suite("t", "1", (SuiteEntry("ragen/Bandit-v0", (1, 2)),), HiddenSplit("s1", SECRET_HASH, 5))
    assert len(suite.seeds("ragen/Bandit-v0", "hidden", SECRET)) == 5
    with pytest.raises(ValueError, match="secret does not match"):
        suite.seeds("ragen/Bandit-v0", "hidden", b"wrong")
    with pytest.raises(ValueError, match="needs the maintainer's secret"):
        list(suite.episodes("hidden"))
    assert OFFICIAL.hidden is not None and len(OFFICIAL.hidden.secret_sha256) == 64


def test_suite_round_trips_through_json_and_files(tmp_path):
    suite = Suite("mini", "3", (SuiteEntry("ragen/Bandit-v0", (5, 6, 7), 2, {"risky_prob": 0.5}),))
    path = tmp_path / "mini.json"
    path.write_text(json.dumps(suite.to_dict()))
    loaded = load_suite(path)
    assert loaded == suite and loaded.fingerprint() == suite.fingerprint()
    assert load_suite("official") is OFFICIAL and load_suite(OFFICIAL.label) is OFFICIAL
    ranged = Suite.from_dict(
        {"name": "r", "version": "1", "entries": [{"env_id": "ragen/Bandit-v0", "seeds": {"start": 10, "count": 3}}]}
    )
    assert ranged.entries[0].seeds == (10, 11, 12)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: SuiteEntry("Bandit-v0", (1,)), "env_id must look like"),
        (lambda: SuiteEntry("ragen/Bandit-v0", ()), "seeds must not be empty"),
        (lambda: SuiteEntry("ragen/Bandit-v0", (1, 1)), "distinct"),
        (lambda: SuiteEntry("ragen/Bandit-v0", (-1,)), r"\[0, 2\*\*31\)"),
        (lambda: SuiteEntry("ragen/Bandit-v0", (1,), 0), "samples_per_seed must be in"),
        (lambda: SuiteEntry("ragen/Bandit-v0", (1,), kwargs={"x": object()}), "JSON values"),
        (lambda: HiddenSplit("s 1", SECRET_HASH), "season"),
        (lambda: HiddenSplit("s1", "abc"), "secret_sha256"),
        (lambda: Suite("t", "1", ()), "no entries"),
        (lambda: load_suite("oficial"), "Did you mean 'official'"),
        (lambda: OFFICIAL.seeds("ragen/Bandit-v0", "hiden"), "Did you mean 'hidden'"),
        (lambda: Suite.from_dict({"name": "t", "version": "1", "entries": [], "extra": 1}), "unknown suite field"),
    ],
)
def test_bad_definitions_name_the_field(make, message):
    with pytest.raises((ValueError, KeyError), match=message):
        make()
