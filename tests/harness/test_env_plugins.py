"""Envs from another package: the ``ragen_envs.envs`` entry-point group, ``harness run`` on them, the public
contract check, and an env whose MI cannot be computed reported without sinking the run."""

from __future__ import annotations

import json
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import registry

from harness.agents import register_agent
from harness.agents.scripted import RandomAgent
from harness.cli import main
from ragen_envs import contract, plugins
from tests.helpers.paths import ROOT

EXAMPLE = ROOT / "examples" / "guess_env"


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """examples/guess_env installed as a distribution's metadata on the path (what `pip install` leaves), with
    the process's env plugins reset before and after."""
    info = tmp_path / "site" / "guess_env-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: guess-env\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[ragen_envs.envs]\nguess = guess_env:register\n")
    monkeypatch.syspath_prepend(str(EXAMPLE))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(plugins, "_LOADED", {})
    yield
    registry.pop("guess/Number-v0", None)
    sys.modules.pop("guess_env", None)


def test_an_installed_package_env_is_listed_and_run(installed, tmp_path, capsys):
    assert "guess/Number-v0" not in registry
    assert main(["ls"]) == 0
    assert "guess/Number-v0" in capsys.readouterr().out
    out = tmp_path / "runs"
    args = ["run", "oracle,random", "--env", "guess/Number-v0", "--episodes", "6", "--samples", "2"]
    assert main([*args, "--out", str(out), "--run-id", "g", "--quiet", "--no-plots"]) == 0
    rows = json.loads((out / "g" / "summary.json").read_text())["rows"]
    oracle = next(r["metrics"] for r in rows if r["agent"] == "oracle")
    assert oracle["success_rate"]["value"] == 1.0
    # the number is hidden: every seed shows the same prompt, so first-turn MI is unavailable, and says why
    assert "1 distinct prompt" in oracle["first_turn/mi_estimate"]["unavailable"]


def test_the_public_contract_check_passes_the_example_env(installed):
    contract.check_text_env("guess/Number-v0")  # a fresh interpreter finds it through the entry point too
    with pytest.raises(contract.ContractError, match="same first observation"):
        contract.check_seeds_differ("guess/Number-v0", first_observation=True)


def test_the_contract_check_names_what_a_broken_env_breaks(installed):
    import guess_env

    class Leaky(guess_env.GuessNumberEnv):
        def _generate(self):  # global RNG, not self.np_random: another episode in every process
            self.secret = int(np.random.default_rng().integers(1, self.high + 1))
            self.low_bound, self.high_bound = 1, self.high

    gym.register(id="guess/Leaky-v0", entry_point=Leaky)
    try:
        with pytest.raises(contract.ContractError) as error:
            contract.check_text_env("guess/Leaky-v0")
        assert "check_same_seed_same_episode" in str(error.value) and "check_oracle_solves" not in str(error.value)
    finally:
        registry.pop("guess/Leaky-v0", None)


def test_a_registered_env_that_is_not_a_text_env_is_one_line(tmp_path, capsys):
    assert main(["run", "random", "--env", "CartPole-v1", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a ragen_envs.core.TextEnv" in err and "docs/extending.md" in err


class _UnscorableOwn(RandomAgent):
    """A random agent whose scores put every reasoning at -inf (a scorer bug or an impossible text)."""

    def __init__(self) -> None:
        super().__init__()
        self.spec = "minus-inf"

    def score_matrix(self, contexts, texts, wanted=None):
        return np.full((len(texts), len(contexts)), -np.inf), np.ones((len(texts), len(contexts)), dtype=np.int64)


def test_one_cell_whose_mi_fails_is_unavailable_and_the_run_finishes(tmp_path, capsys, monkeypatch):
    from harness.agents import registry as agents

    monkeypatch.setattr(agents, "_AGENTS", dict(agents._AGENTS))
    register_agent("minus-inf", lambda argument, options: _UnscorableOwn(), "scores every text -inf")
    out = tmp_path / "runs"
    args = ["run", "minus-inf,random", "--env", "ragen/Bandit-v0", "--episodes", "6", "--samples", "2"]
    assert main([*args, "--out", str(out), "--run-id", "m", "--quiet", "--no-plots"]) == 0
    rows = json.loads((out / "m" / "summary.json").read_text())["rows"]
    broken = next(r["metrics"] for r in rows if r["agent"] == "minus-inf")
    assert "could not be computed" in broken["trajectory/mi_estimate"]["unavailable"]
    assert "-inf under their own prompt" in broken["trajectory/mi_estimate"]["unavailable"]
    fine = next(r["metrics"] for r in rows if r["agent"] == "random")
    assert fine["trajectory/mi_estimate"]["value"] == 0.0 and (out / "m" / "report.md").exists()


class _CrashingScorer(RandomAgent):
    """A random agent whose scoring backend fails (as a GPU out of memory would)."""

    def __init__(self) -> None:
        super().__init__()
        self.spec = "crash"

    def score_matrix(self, contexts, texts, wanted=None):
        raise RuntimeError("CUDA out of memory")


def test_an_agent_whose_scoring_crashes_loses_only_its_mi(tmp_path, monkeypatch):
    from harness.agents import registry as agents

    monkeypatch.setattr(agents, "_AGENTS", dict(agents._AGENTS))
    register_agent("crash", lambda argument, options: _CrashingScorer(), "scoring fails")
    out = tmp_path / "runs"
    args = ["run", "crash", "--env", "ragen/Bandit-v0", "--episodes", "4", "--samples", "2"]
    with pytest.warns(UserWarning, match="CUDA out of memory"):
        assert main([*args, "--out", str(out), "--run-id", "c", "--quiet", "--no-plots"]) == 0
    metrics = json.loads((out / "c" / "summary.json").read_text())["rows"][0]["metrics"]
    assert "RuntimeError: CUDA out of memory" in metrics["first_turn/mi_estimate"]["unavailable"]
    assert metrics["success_rate"]["value"] is not None
