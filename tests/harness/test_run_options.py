"""``harness run --env-kwargs``, ``--resume DIR`` on its own (and refusing flags that contradict the run), and
``harness train`` refusing an ``--out-dir`` that holds a different run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.records import read_episodes
from tests.helpers.paths import TINY_MODEL


def _run(tmp_path: Path, *args: str, run_id: str = "r") -> Path:
    assert main(["run", *args, "--out", str(tmp_path), "--run-id", run_id, "--quiet", "--no-plots"]) == 0
    return tmp_path / run_id


def _error(capsys) -> str:
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("harness: error: "), err
    return err[0]


def test_env_kwargs_reach_the_env_are_recorded_and_resumed(tmp_path, capsys):
    kwargs = '{"size": 6, "slip": 0.25}'
    common = ["random", "--env", "ragen/FrozenLake-v0,ragen/Bandit-v0", "--episodes", "3", "--samples", "2"]
    run_dir = _run(tmp_path, *common, "--env-kwargs", f"ragen/FrozenLake-v0={kwargs}", "--mi-samples", "0")
    config = json.loads((run_dir / "config.json").read_text())
    plans = {plan["env_id"]: plan["kwargs"] for plan in config["run"]["envs"]}
    assert plans == {"ragen/FrozenLake-v0": {"size": 6, "slip": 0.25}, "ragen/Bandit-v0": {}}
    records, _ = read_episodes(run_dir / "episodes.jsonl")
    lake = [r for r in records if r["env_id"] == "ragen/FrozenLake-v0"]
    assert lake and all(r["env_kwargs"] == {"size": 6, "slip": 0.25} for r in lake)
    # the 6x6 board is what the agent saw
    import gymnasium as gym

    first, _ = gym.make("ragen/FrozenLake-v0", size=6, slip=0.25).reset(seed=lake[0]["seed"])
    default, _ = gym.make("ragen/FrozenLake-v0").reset(seed=lake[0]["seed"])
    assert first in lake[0]["turns"][0]["user"] and default not in lake[0]["turns"][0]["user"]
    # kill the run's tail and resume with the folder alone: the recorded kwargs are used again
    path = run_dir / "episodes.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]))
    (run_dir / "summary.json").unlink()
    capsys.readouterr()
    assert main(["run", "--resume", str(run_dir), "--quiet", "--no-plots"]) == 0
    resumed, _ = read_episodes(path)
    assert len(resumed) == len(records)
    assert all(r["env_kwargs"] == {"size": 6, "slip": 0.25} for r in resumed if r["env_id"] == "ragen/FrozenLake-v0")


def test_env_kwargs_mistakes_are_one_line(tmp_path, capsys):
    base = ["run", "random", "--env", "ragen/FrozenLake-v0", "--out", str(tmp_path), "--quiet"]
    assert main([*base, "--env-kwargs", '{"slipp": 0.2}']) == 2
    assert "unknown argument 'slipp'. Did you mean 'slip'?" in _error(capsys)
    assert main([*base, "--env-kwargs", "{slip: 0.2}"]) == 2
    assert "--env-kwargs for ragen/FrozenLake-v0: not valid JSON" in _error(capsys)
    assert main([*base, "--env-kwargs", "ragen/Bandit-v0={}"]) == 2
    assert "names ragen/Bandit-v0, which is not an env of this run" in _error(capsys)
    assert main(["run", "random", "--env", "ragen/Bandit-v0,ragen/FrozenLake-v0", "--env-kwargs", "{}"]) == 2
    assert "name one: --env-kwargs 'ENV={}'" in _error(capsys)
    assert main(["run", "random", "--suite", "official", "--env-kwargs", "{}", "--out", str(tmp_path)]) == 2
    assert "drop --env-kwargs" in _error(capsys)


def test_a_suite_is_matched_with_the_env_kwargs_a_run_used(tmp_path):
    from leaderboard.records import identify_run
    from leaderboard.suite import Suite

    suite = Suite.from_dict({
        "name": "lake-slip", "version": "1",
        "entries": [{"env_id": "ragen/FrozenLake-v0", "kwargs": {"slip": 0.25}, "seeds": {"start": 0, "count": 2},
                     "samples_per_seed": 1}],
    })  # fmt: skip
    common = ["random", "--env", "ragen/FrozenLake-v0", "--episodes", "2", "--samples", "1", "--mi-samples", "0"]
    slippery = _run(tmp_path, *common, "--env-kwargs", '{"slip": 0.25}', run_id="slip")
    plain = _run(tmp_path, *common, run_id="plain")
    assert identify_run(json.loads((slippery / "config.json").read_text()), suite) == (suite, "official")
    with pytest.raises(ValueError):
        identify_run(json.loads((plain / "config.json").read_text()), suite)


def test_resume_needs_only_the_folder_and_refuses_contradicting_flags(tmp_path, capsys):
    run_dir = _run(tmp_path, "random", "--env", "ragen/Bandit-v0", "--episodes", "2", "--samples", "2",
                   "--temperature", "0.7", "--mi-samples", "0")  # fmt: skip
    capsys.readouterr()
    # the folder alone; the same values again; execution options: all fine
    assert main(["run", "--resume", str(run_dir), "--quiet", "--no-plots"]) == 0
    assert main(["run", "random", "--resume", str(run_dir), "--temperature", "0.7", "--episodes", "2", "--quiet",
                 "--no-plots", "--workers", "2", "--threads", "1"]) == 0  # fmt: skip
    capsys.readouterr()
    refused = {
        ("oracle",): "the agent/preset argument oracle contradicts",
        ("--temperature", "1.0"): "--temperature 1.0 contradicts the run's config.json (0.7)",
        ("--episodes", "3"): "--episodes 3 contradicts",
        ("--env", "ragen/FrozenLake-v0"): "--env ragen/FrozenLake-v0 contradicts",
        ("--env-kwargs", '{"safe_reward": 0.2}'): "--env-kwargs",
        ("--mi-samples", "8"): "--mi-samples 8 contradicts",
        ("--seed", "1"): "--seed 1 contradicts",
        ("--context", "2"): "--context 2 contradicts",
        ("--out", "elsewhere"): "--out does not apply",
    }
    for extra, message in refused.items():
        positional = [extra[0]] if len(extra) == 1 else []
        flags = [] if len(extra) == 1 else list(extra)
        assert main(["run", *positional, "--resume", str(run_dir), *flags, "--quiet"]) == 2, extra
        assert message in _error(capsys), extra
    assert main(["run"]) == 2
    assert "needs a preset or agent spec" in _error(capsys)


def test_train_refuses_an_out_dir_holding_a_different_run(tmp_path, capsys):
    pytest.importorskip("torch")
    from baselines.ppo.cli import check_out_dir
    from baselines.ppo.config import PPOConfig

    model = str(TINY_MODEL)
    out = tmp_path / "train"
    out.mkdir()
    recorded = PPOConfig(model=model, out_dir=str(out), iterations=2, actor_lr=1e-6)
    (out / "config.json").write_text(recorded.to_json())
    args = ["train", "--model", model, "--out-dir", str(out), "--iterations", "2", "--actor-lr", "2e-6"]
    assert main(args) == 2
    line = _error(capsys)
    assert f"--out-dir {out} holds a run with a different config (changed: actor_lr 1e-06 -> 2e-06)" in line
    assert "--fresh" in line and "new --out-dir" in line
    # more iterations is the same run, continued
    check_out_dir(PPOConfig(model=model, out_dir=str(out), iterations=5, actor_lr=1e-6))
    (out / "config.json").write_text("{broken")
    assert main(args) == 2
    assert f"{out / 'config.json'}: not a training config" in _error(capsys)


def test_response_format_reaches_every_env_is_recorded_and_checked_on_resume(tmp_path, capsys):
    common = ["random", "--env", "ragen/Bandit-v0,ragen/WebShop-v0", "--episodes", "2", "--samples", "1"]
    web = 'ragen/WebShop-v0={"response_format": "answer", "tier": "1k"}'  # an env's own kwargs win
    run_dir = _run(tmp_path, *common, "--response-format", "tool", "--env-kwargs", web, "--mi-samples", "0")
    records, _ = read_episodes(run_dir / "episodes.jsonl")
    kwargs = {r["env_id"]: r["env_kwargs"] for r in records}
    assert kwargs == {"ragen/Bandit-v0": {"response_format": "tool"},
                      "ragen/WebShop-v0": {"response_format": "answer", "tier": "1k"}}  # fmt: skip
    for record in records:
        tool = record["env_id"] == "ragen/Bandit-v0"
        assert all(("<tool_call>" in t["response"]) is tool and t["info"]["action_is_valid"] for t in record["turns"])
    capsys.readouterr()
    assert main(["run", "--resume", str(run_dir), "--response-format", "think", "--quiet"]) == 2
    assert "--response-format think contradicts the run's config.json" in _error(capsys)
    with pytest.raises(SystemExit) as exited:
        main(["run", "random", "--response-format", "json", "--out", str(tmp_path), "--quiet"])
    assert exited.value.code == 2
    assert "argument --response-format: invalid choice: 'json'" in _error(capsys)
    assert main(["run", "random", "--suite", "official", "--response-format", "tool", "--out", str(tmp_path)]) == 2
    assert "drop --response-format" in _error(capsys)


def test_the_tool_format_runs_through_the_harness_with_its_reasoning_measured(tmp_path):
    kwargs = '{"response_format": "tool"}'
    common = ["random,oracle", "--env", "ragen/Sokoban-v0", "--episodes", "6", "--samples", "2"]
    run_dir = _run(tmp_path, *common, "--env-kwargs", kwargs)
    records, _ = read_episodes(run_dir / "episodes.jsonl")
    assert len(records) == 2 * 6 * 2 and all(r["env_kwargs"] == {"response_format": "tool"} for r in records)
    from ragen_envs.parsing import reasoning_of

    for record in records:
        assert "<tools>" in record["instructions"]
        for turn in record["turns"]:
            assert "<tool_call>" in turn["response"] and turn["info"]["action_is_valid"]
            assert turn["reasoning"] == reasoning_of(turn["response"], "tool") and turn["reasoning"]
    rows = {r["agent"]: r["metrics"] for r in json.loads((run_dir / "summary.json").read_text())["rows"]}
    assert rows["oracle"]["success_rate"]["value"] == 1.0
    assert rows["random"]["first_turn/mi_estimate"]["value"] == 0.0  # input-agnostic words before the calls
    assert rows["oracle"]["first_turn/mi_estimate"]["value"] > 1.0  # the oracle's reasoning names its state


def test_workers_auto_is_the_idle_cores_capped_by_the_work_and_n_is_kept(monkeypatch):
    from harness import threads

    monkeypatch.setattr(threads, "idle_cores", lambda: 6)
    assert threads.resolve_workers("auto", 40) == 6 and threads.resolve_workers("AUTO", 4) == 4
    assert threads.resolve_workers("auto", 0) == 1  # a resumed run with nothing left still runs its summary
    assert threads.resolve_workers(3, 1) == 3 and threads.resolve_workers("2", 40) == 2  # N: as asked
    for bad in (0, -1, "many", "", 1.5, True):
        with pytest.raises(ValueError, match="workers must be a number >= 1 or 'auto'"):
            threads.resolve_workers(bad, 40)


@pytest.mark.parametrize("value", ["0", "many", "-2"])
def test_bad_workers_is_one_line(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        main(["run", "random", f"--workers={value}"])
    assert exit_.value.code == 2
    assert _error(capsys).startswith("harness: error: argument --workers: --workers must be a number >= 1 or 'auto'")


def test_workers_are_an_execution_option_recorded_as_given(tmp_path, monkeypatch):
    import harness.cli
    from harness import threads

    assert threads.DEFAULT_WORKERS == "auto"
    monkeypatch.setattr(harness.cli, "DEFAULT_WORKERS", threads.DEFAULT_WORKERS)  # tests/conftest.py pins 1
    monkeypatch.setattr(threads, "idle_cores", lambda: 2)
    common = ["random", "--env", "ragen/Bandit-v0", "--episodes", "2", "--samples", "2", "--mi-samples", "0"]
    auto = json.loads((_run(tmp_path, *common, run_id="auto") / "config.json").read_text())
    two = json.loads((_run(tmp_path, *common, "--workers", "auto", run_id="two") / "config.json").read_text())
    assert auto["run"] == two["run"] and "workers" not in json.dumps(two["run"])  # a resume may change it
    command = two["command"]
    assert command[command.index("--workers") + 1] == "auto"  # the choice as given, like --threads
