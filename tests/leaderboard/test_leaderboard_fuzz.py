"""Hostile submissions: any JSON put into any field of an episode, config or summary never crashes verify."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leaderboard.pack import read_archive, write_archive
from leaderboard.suite import Suite, SuiteEntry
from leaderboard.verify import verify

TINY = Suite("tiny", "1", (SuiteEntry("ragen/Bandit-v0", (1, 2), 1), SuiteEntry("ragen/Sokoban-v0", (1,), 1)))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture(scope="module")
def tiny_members(tmp_path_factory):
    from harness.runner import run
    from leaderboard.pack import pack_run
    from leaderboard.records import suite_run_config

    out = tmp_path_factory.mktemp("tiny")
    result = run(suite_run_config(TINY, "random", mi_samples=0), out, run_id="r", progress=False, plots=False)
    archive = pack_run(result.run_dir, out / "t.ragen.tar.gz", model_name="t", org="o", contact="a@b.c", suite=TINY)
    assert verify(archive, suite=TINY).ok
    return read_archive(archive)


def _paths(value, prefix=()):
    """Every (path) into a JSON document, containers included."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _set(document, path, value):
    if not path:
        return value
    target = document
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return document


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), value=json_values, member=st.sampled_from(["episodes.jsonl", "config.json", "summary.json"]))
def test_any_json_anywhere_never_crashes(tiny_members, tmp_path_factory, data, value, member):
    members = dict(tiny_members)
    if member == "episodes.jsonl":
        episodes = [json.loads(line) for line in members[member].splitlines()]
        index = data.draw(st.integers(0, len(episodes) - 1))
        path = data.draw(st.sampled_from(list(_paths(episodes[index]))))
        episodes[index] = _set(episodes[index], path, value)
        members[member] = "".join(json.dumps(ep) + "\n" for ep in episodes).encode()
    else:
        document = json.loads(members[member])
        path = data.draw(st.sampled_from(list(_paths(document))))
        members[member] = json.dumps(_set(document, path, value)).encode()
    archive = write_archive(tmp_path_factory.mktemp("fuzz") / "f.ragen.tar.gz", members)
    report = verify(archive, suite=TINY)  # must return, whatever the edit
    assert isinstance(report.ok, bool) and all(isinstance(p, str) for p in report.problems)
    assert report.ok == (not report.problems)


def test_deeply_nested_json_line_is_reported_not_raised(tiny_members, tmp_path):
    members = dict(tiny_members)
    members["episodes.jsonl"] += b"[" * 100_000 + b"]" * 100_000 + b"\n"
    report = verify(write_archive(tmp_path / "deep.ragen.tar.gz", members), suite=TINY)
    assert not report.ok and any("malformed JSON" in p for p in report.problems)
