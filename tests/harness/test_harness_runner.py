"""The harness end to end: CLI in-process, files, determinism across workers/backends, resume after kill -9."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.agents import Agent, Generation, register_agent
from harness.cli import main
from harness.records import RecordsCorrupt, read_episodes, sort_episodes
from harness.transcript import record_messages

ENVS = "ragen/Bandit-v0,ragen/FrozenLake-v0"


def run_cli(tmp_path: Path, *args: str, run_id: str = "r") -> Path:
    assert main(["run", *args, "--out", str(tmp_path), "--run-id", run_id, "--quiet", "--no-plots"]) == 0
    return tmp_path / run_id


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def episodes(run_dir: Path) -> list[dict]:
    return sort_episodes(read_episodes(run_dir / "episodes.jsonl")[0])


def row(doc: dict, agent: str, env_id: str) -> dict:
    return next(r["metrics"] for r in doc["rows"] if r["agent"] == agent and r["env_id"] == env_id)


def test_run_writes_the_run_folder_and_separates_collapsed_from_input_dependent(tmp_path):
    run_dir = run_cli(tmp_path, "random,oracle", "--env", ENVS, "--episodes", "12", "--samples", "3", "--parquet")
    for name in ("config.json", "episodes.jsonl", "summary.json", "summary.csv", "summary.parquet", "report.md"):
        assert (run_dir / name).exists(), name
    config = json.loads((run_dir / "config.json").read_text())
    assert config["run"]["agents"] == ["random", "oracle"] and config["envs"]["ragen/Bandit-v0"]["version"] == "v0"
    assert len(episodes(run_dir)) == 2 * 2 * 12 * 3
    doc = summary(run_dir)
    oracle, rand = row(doc, "oracle", "ragen/Bandit-v0"), row(doc, "random", "ragen/Bandit-v0")
    assert oracle["success_rate"]["value"] == 1.0 and oracle["pass@k"]["value"] == 1.0
    for scheme in ("first_turn", "trajectory"):
        # random: diverse, input-agnostic reasoning ⇒ MI exactly 0, retrieval at chance, high entropy
        assert rand[f"{scheme}/mi_estimate"]["value"] == 0.0
        assert rand[f"{scheme}/retrieval_accuracy"]["value"] == pytest.approx(
            rand[f"{scheme}/retrieval_chance"]["value"]
        )
        assert rand[f"{scheme}/reasoning_entropy_estimate"]["value"] > 2.0
        # oracle: deterministic, input-dependent reasoning ⇒ MI near log N, retrieval near 1, zero H(Z|X)
        assert oracle[f"{scheme}/mi_estimate"]["value"] > 0.8 * math.log(12)
        assert oracle[f"{scheme}/retrieval_accuracy"]["value"] > 0.8
        assert oracle[f"{scheme}/cond_entropy_estimate"]["value"] == 0.0
    assert rand["token_entropy"]["value"] > 1.0 and oracle["token_entropy"]["value"] == 0.0
    report = (run_dir / "report.md").read_text()
    assert "ragen/FrozenLake-v0" in report and "retrieval_accuracy" in report
    record = episodes(run_dir)[0]
    turn = record["turns"][0]
    assert "prompt" not in turn and record["context_turns"] is None  # the chat is stored as deltas
    prompt = record_messages(record, 0)
    assert prompt[0] == {"role": "system", "content": record["instructions"]}
    assert prompt[1] == {"role": "user", "content": turn["user"]}
    assert turn["user"].endswith(record["initial_observation"]) and turn["prefill"] == "<think>"
    assert turn["response"].startswith("<think>") and turn["reasoning"]


def test_one_and_two_workers_give_identical_results(tmp_path):
    args = ("random,oracle", "--env", ENVS, "--episodes", "6", "--samples", "2", "--batch-size", "5")
    one = run_cli(tmp_path, *args, run_id="one")
    two = run_cli(tmp_path, *args, "--workers", "2", run_id="two")
    assert episodes(one) == episodes(two)
    assert summary(one)["rows"] == summary(two)["rows"]


def test_mi_scored_in_two_workers_is_the_serial_summary(tmp_path):
    # the workers score the MI family with their own agents (the tiny LM loaded in each): the same summary.json
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    args = ("tiny,random", "--env", ENVS, "--episodes", "3", "--samples", "2", "--batch-size", "3",
            "--max-new-tokens", "24", "--mi-samples", "6")  # fmt: skip
    one = run_cli(tmp_path, *args, "--workers", "1", run_id="one")
    two = run_cli(tmp_path, *args, "--workers", "2", run_id="two")
    assert episodes(one) == episodes(two)
    masked = [{**summary(run_dir), "run_id": None} for run_dir in (one, two)]
    assert masked[0] == masked[1]
    tiny = row(masked[0], "tiny", "ragen/FrozenLake-v0")
    assert tiny["first_turn/mi_estimate"]["n"] > 0 and tiny["trajectory/mi_estimate"]["n"] > 0  # really scored


@pytest.mark.ray
def test_ray_gives_the_same_results_as_one_worker(tmp_path):
    pytest.importorskip("ray")
    args = ("random", "--env", ENVS, "--episodes", "4", "--samples", "2", "--batch-size", "3")
    one = run_cli(tmp_path, *args, run_id="one")
    ray_run = run_cli(tmp_path, *args, "--ray", "--workers", "2", run_id="ray")
    assert episodes(one) == episodes(ray_run)
    assert summary(one)["rows"] == summary(ray_run)["rows"]


def test_resume_after_kill_9_is_lossless_and_drops_a_torn_line(tmp_path):
    args = ["random", "--env", "ragen/FrozenLake-v0", "--episodes", "600", "--samples", "2", "--mi-samples", "16"]
    reference = run_cli(tmp_path, *args, run_id="reference")
    total = len(episodes(reference))
    cmd = [sys.executable, "-m", "harness.cli", "run", *args, "--out", str(tmp_path), "--run-id", "killed", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    path = tmp_path / "killed" / "episodes.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not path.exists() or path.read_bytes().count(b"\n") < 100):
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = path.read_bytes().count(b"\n")
    assert 100 <= before < total, "the run must be killed mid-way"
    with open(path, "ab") as handle:  # what a write cut short by the kill leaves behind
        handle.write(b'{"agent": "random", "env_id": "ragen/FrozenLake-v0", "seed": 999, "sa')
    assert main(["run", "random", "--resume", str(tmp_path / "killed"), "--quiet", "--no-plots"]) == 0
    resumed = episodes(tmp_path / "killed")
    assert len(resumed) == total and resumed == episodes(reference)
    assert summary(tmp_path / "killed")["rows"] == summary(reference)["rows"]


def test_read_episodes_rejects_corruption_before_the_end(tmp_path):
    path = tmp_path / "episodes.jsonl"
    record = {"agent": "a", "env_id": "e", "seed": 0, "sample": 0, "turns": [], "return": 0.0, "success": False}
    line = json.dumps({**record, "num_turns": 0}) + "\n"
    path.write_text(line + "not json\n" + line.replace('"sample": 0', '"sample": 1'))
    with pytest.raises(RecordsCorrupt, match="malformed line"):
        read_episodes(path)
    path.write_text(line + line)
    with pytest.raises(RecordsCorrupt, match="recorded twice"):
        read_episodes(path)
    path.write_text(line + "{broken\n")  # a garbled *last* line is a torn write: dropped
    records, length = read_episodes(path)
    assert len(records) == 1 and length == len(line)


def test_context_window_keeps_the_last_k_turns(tmp_path):
    run_dir = run_cli(
        tmp_path, "random", "--env", "ragen/Sokoban-v0", "--episodes", "2", "--samples", "1", "--context", "1"
    )
    turns = max(episodes(run_dir), key=lambda r: len(r["turns"]))["turns"]
    assert len(turns) >= 3
    record = max(episodes(run_dir), key=lambda r: len(r["turns"]))
    prompt = record_messages(record, 2)
    assert record["context_turns"] == 1
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user"]
    assert prompt[1]["content"] == turns[1]["user"] and prompt[2]["content"] == turns[1]["response"]
    assert prompt[3]["content"] == turns[2]["user"] and turns[2]["user"].startswith("Reward: ")


class _Silent(Agent):
    can_score = False

    def generate(self, requests):
        return [Generation("</think><answer>x</answer>") for _ in requests]


register_agent("test-silent", lambda arg, opts: _Silent(), "test agent that cannot score")


def test_agent_that_cannot_score_reports_mi_as_unavailable(tmp_path):
    run_dir = run_cli(tmp_path, "test-silent", "--env", "ragen/Bandit-v0", "--episodes", "3", "--samples", "2")
    metrics = row(summary(run_dir), "test-silent", "ragen/Bandit-v0")
    mi = metrics["trajectory/mi_estimate"]
    assert mi["value"] is None and "cannot score" in mi["unavailable"]
    assert metrics["token_entropy"]["value"] is None and metrics["invalid_action_rate"]["value"] == 1.0
    assert "n/a" in (run_dir / "report.md").read_text()


def test_mi_columns_subsamples_the_columns_and_is_recorded(tmp_path, capsys):
    args = ("oracle", "--env", "ragen/FrozenLake-v0", "--episodes", "16", "--samples", "2", "--mi-columns", "4")
    run_dir = run_cli(tmp_path, *args)
    assert json.loads((run_dir / "config.json").read_text())["run"]["mi_columns"] == 4
    metrics = row(summary(run_dir), "oracle", "ragen/FrozenLake-v0")
    assert metrics["first_turn/retrieval_chance"]["value"] == pytest.approx(1 / 4)  # 16 seeds, 4 scored each
    assert metrics["first_turn/retrieval_accuracy"]["value"] == 1.0  # the oracle's reasoning names its state
    assert main(["run", "oracle", "--env", "ragen/Bandit-v0", "--mi-columns", "1", "--out", str(tmp_path)]) == 2
    assert "mi_columns must be in [2, inf]" in capsys.readouterr().err


def test_progress_covers_the_mi_phase_and_its_time_is_reported_outside_the_summary(tmp_path):
    import io

    from harness.config import EnvPlan, RunConfig
    from harness.runner import run

    config = RunConfig(agents=("random", "oracle"), envs=(EnvPlan("ragen/Bandit-v0", 4, 2),))
    stream = io.StringIO()
    result = run(config, tmp_path, run_id="p", progress=True, plots=False, stream=stream)
    text = stream.getvalue()
    # one bar per agent: each ETA is its own agent's rate, not an average of fast and slow agents
    for agent in ("random", "oracle"):
        assert re.search(rf"{agent}\s*: 100%.*\b8/8 turns.*8/8 episodes", text), text  # Bandit: one turn each
        assert re.search(rf"{agent}\s*: 100%.*\b(\d+)/\1 MI pairs", text), text
    assert result.mi_seconds > 0 and "mi_s" not in json.dumps(result.summary)


def test_user_mistakes_answer_did_you_mean(tmp_path, capsys):
    assert main(["run", "radnom", "--env", "ragen/Bandit-v0", "--out", str(tmp_path)]) == 2
    assert "Did you mean 'random'?" in capsys.readouterr().err
    assert main(["run", "random", "--env", "ragen/Bandti-v0", "--out", str(tmp_path)]) == 2
    assert "Did you mean 'ragen/Bandit-v0'?" in capsys.readouterr().err
    assert main(["run", "baselin", "--out", str(tmp_path)]) == 2
    assert "Did you mean 'baseline'?" in capsys.readouterr().err
    assert main(["run", "baseline", "--resume", str(tmp_path / "nope")]) == 2
    assert "not a run folder" in capsys.readouterr().err
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    assert "ragen/Bandit-v0" in out and "hf:<dir-or-name>" in out and "mi_zscore" in out


def test_report_side_by_side(tmp_path, capsys):
    a = run_cli(tmp_path, "random", "--env", "ragen/Bandit-v0", "--episodes", "4", "--samples", "2", run_id="a")
    b = run_cli(tmp_path, "oracle", "--env", "ragen/Bandit-v0", "--episodes", "4", "--samples", "2", run_id="b")
    capsys.readouterr()
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    table = capsys.readouterr().out
    header = table.splitlines()[0].split()
    assert header == ["env", "agent", "run", "success_rate", "mi_estimate", "retrieval_accuracy", "mi_zscore",
                      "token_entropy"]  # fmt: skip
    assert f"a: {a.name}" in table and f"b: {b.name}" in table and max(map(len, table.splitlines())) <= 120
    rows = [line.split()[1:3] for line in table.splitlines()[2:] if line.startswith("ragen/")]
    assert rows == [["random", "a"], ["oracle", "b"]]  # each run's own rows
    assert (tmp_path / "cmp" / "report.md").exists() and (tmp_path / "cmp" / "mi_entropy.png").exists()
    assert main(["report", str(a)]) == 0 and (a / "success.png").exists()


def test_response_seeds_equal_response_seed():
    """The rollout hashes an episode's fixed seed parts once; every turn's seed is still response_seed's."""
    from harness.seeding import ResponseSeeds, response_seed

    for run_seed, env_id, env_seed, sample in [(0, "ragen/Bandit-v0", 3, 1), (2**40 + 7, "ragen/Sokoban-v0", 0, 0)]:
        seed_of = ResponseSeeds(run_seed, env_id, env_seed, sample)
        assert [seed_of(t) for t in range(1, 25)] == [
            response_seed(run_seed, env_id, env_seed, sample, t) for t in range(1, 25)
        ]


class _Recording(Agent):
    """The random agent, keeping every context and seed it was asked for."""

    can_score = False

    def __init__(self):
        from harness.agents.scripted import RandomAgent

        self.inner, self.seen = RandomAgent(), []

    def generate(self, requests):
        self.seen += [(r.context.messages, r.seed) for r in requests]
        return self.inner.generate(requests)


@pytest.mark.parametrize("window", [None, 0, 2])
def test_record_deltas_rebuild_exactly_the_chat_the_agent_saw(window):
    """A record stores each turn's new user message only; record_messages rebuilds every turn's full chat,
    and the lazily derived request seeds are response_seed's."""
    from harness.config import EnvPlan, RunConfig
    from harness.rollout import EnvPool, Job, rollout_chunk
    from harness.seeding import response_seed

    config = RunConfig(agents=("random",), envs=(EnvPlan("ragen/Sokoban-v0", 3, 2),), context_turns=window)
    pool, long_episodes = EnvPool(config), 0
    for seed in range(3):
        agent = _Recording()
        (record,) = rollout_chunk(agent, config, [Job("random", "ragen/Sokoban-v0", seed, 1)], pool)
        assert record["context_turns"] == window and len(agent.seen) == len(record["turns"])
        for index, (messages, request_seed) in enumerate(agent.seen):
            assert record_messages(record, index) == messages
            assert request_seed == response_seed(config.seed, "ragen/Sokoban-v0", seed, 1, index + 1)
        long_episodes += len(record["turns"]) > 3
    assert long_episodes  # the window actually cut something


def test_request_seed_is_derived_once_and_only_when_read():
    import pickle

    from harness.agents.base import Context, Request

    calls = []

    def seed():
        calls.append(1)
        return 42

    context = Context(({"role": "user", "content": "x"},), "<think>")
    request = Request(context, seed)
    assert calls == []  # an agent that never reads the seed (the oracle) never derives it
    assert request.seed == 42 and request.seed == 42 and calls == [1]
    assert request == Request(context, 42) and request != Request(context, 41)
    assert pickle.loads(pickle.dumps(request)) == request
    with pytest.raises(AttributeError):
        request.seed = 3
