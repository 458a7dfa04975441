"""Fixtures: real harness runs of the official suite (oracle and random agents), packed as submissions."""

from __future__ import annotations

from pathlib import Path

import pytest
from lb_helpers import AGENTS, MINI, Forgery

from leaderboard.pack import pack_run
from leaderboard.suite import Suite


def _runs(suite: Suite, out: Path) -> dict[str, Path]:
    from harness.runner import run
    from leaderboard.records import suite_run_config

    return {
        agent: run(suite_run_config(suite, agent), out, run_id=agent, progress=False, plots=False).run_dir
        for agent in AGENTS
    }


def _pack(runs: dict[str, Path], out: Path, suite: Suite | None) -> dict[str, Path]:
    return {
        agent: pack_run(
            run_dir,
            out / f"{agent}.ragen.tar.gz",
            model_name=f"{agent.title()} agent",
            org="ragen-envs",
            contact="maintainers@example.org",
            parameters="0",
            weights="closed",
            date="2026-11-30",
            suite=suite,
        )  # fmt: skip
        for agent, run_dir in runs.items()
    }


@pytest.fixture(scope="session")
def suite_runs(tmp_path_factory) -> dict[str, Path]:
    """``{agent: run folder}`` made exactly as a user does: ``harness run <agent> --suite official``."""
    from harness.cli import main as harness

    out = tmp_path_factory.mktemp("runs")
    for agent in AGENTS:
        argv = ["run", agent, "--suite", "official", "--out", str(out), "--run-id", agent, "--quiet", "--no-plots"]
        assert harness(argv) == 0
    return {agent: out / agent for agent in AGENTS}


@pytest.fixture(scope="session")
def submissions(suite_runs, tmp_path_factory) -> dict[str, Path]:
    """``{agent: archive}``: ``harness submit runs/<agent> --model-name … --out <agent>.ragen.tar.gz``."""
    from harness.cli import main as harness

    out = tmp_path_factory.mktemp("submissions")
    for agent, run_dir in suite_runs.items():
        argv = ["submit", str(run_dir), "--model-name", f"{agent.title()} agent", "--org", "ragen-envs",
                "--contact", "maintainers@example.org", "--parameters", "0", "--date", "2026-11-30",
                "--out", str(out / f"{agent}.ragen.tar.gz")]  # fmt: skip
        assert harness(argv) == 0
    return {agent: out / f"{agent}.ragen.tar.gz" for agent in AGENTS}


@pytest.fixture(scope="session")
def mini_submissions(tmp_path_factory) -> dict[str, Path]:
    """``{agent: archive}`` of the :data:`MINI` suite, for tampering."""
    return _pack(_runs(MINI, tmp_path_factory.mktemp("mini-runs")), tmp_path_factory.mktemp("mini"), MINI)


@pytest.fixture
def forge(mini_submissions, tmp_path):
    return lambda agent="oracle": Forgery(mini_submissions[agent], tmp_path)
