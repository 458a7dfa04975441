"""The one thread default (harness.threads) and ``harness run --threads``: what the hf: agent generates and scores with."""

from __future__ import annotations

import json

import pytest

from harness.threads import DEFAULT_THREADS, idle_cores, resolve_threads, usable_cores

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from harness.cli import main  # noqa: E402
from tests.helpers.tiny_lm import build_tiny_llama  # noqa: E402


def test_the_default_is_one_thread_and_more_is_opt_in(tmp_path):
    assert DEFAULT_THREADS == 1 and resolve_threads(None) == 1
    assert resolve_threads(3) == 3 and resolve_threads("2") == 2
    assert 1 <= resolve_threads("auto") <= usable_cores()
    for bad in (0, -1, "x", 1.5, True):
        with pytest.raises(ValueError, match="threads must be a number >= 1 or 'auto'"):
            resolve_threads(bad)
    busy = tmp_path / "loadavg"
    busy.write_text("9.50 3.00 1.00 2/97 5064\n")
    assert idle_cores(str(busy)) == 1
    quiet = tmp_path / "quiet"
    quiet.write_text("0.00 0.00 0.00 1/97 5064\n")
    assert idle_cores(str(quiet)) == usable_cores()
    assert idle_cores(str(tmp_path / "missing")) == usable_cores()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture
def seen_threads(monkeypatch):
    """The torch thread count in effect during each generation and each scoring call (the real functions run)."""
    from harness.lm import generation, scoring

    seen: dict[str, set[int]] = {"generate": set(), "score": set()}
    real_generate, real_score = generation.generate_ids, scoring.score_matrix_ids

    def generate(*args, **kwargs):
        seen["generate"].add(torch.get_num_threads())
        return real_generate(*args, **kwargs)

    def score(*args, **kwargs):
        seen["score"].add(torch.get_num_threads())
        return real_score(*args, **kwargs)

    monkeypatch.setattr(generation, "generate_ids", generate)
    monkeypatch.setattr(scoring, "score_matrix_ids", score)
    before = torch.get_num_threads()
    torch.set_num_threads(3)  # what the process had before the agent: the agent must not inherit it
    yield seen
    torch.set_num_threads(before)


def _run(model_dir, tmp_path, *extra: str) -> dict:
    args = ["run", f"hf:{model_dir}", "--env", "ragen/Bandit-v0", "--episodes", "3", "--samples", "2"]
    args += ["--max-new-tokens", "6", "--device", "cpu", "--mi-samples", "4", "--out", str(tmp_path)]
    assert main([*args, "--run-id", "t", "--quiet", "--no-plots", *extra]) == 0
    return json.loads((tmp_path / "t" / "config.json").read_text())


def _agent_calls(model_dir, options):
    from harness.agents import AgentOptions, Context, Request, make_agent

    agent = make_agent(f"hf:{model_dir}", AgentOptions(max_new_tokens=4, device="cpu", **options))
    contexts = [Context(({"role": "user", "content": f"Arm {j}?"},), "<think>") for j in range(2)]
    agent.generate([Request(c, seed=j) for j, c in enumerate(contexts)])
    agent.score_matrix(contexts, ["I pull A", "B"])
    agent.close()


def test_hf_agent_generates_and_scores_with_one_thread_by_default(model_dir, seen_threads):
    _agent_calls(model_dir, {})
    assert seen_threads == {"generate": {1}, "score": {1}}


def test_threads_option_sets_generation_and_scoring(model_dir, seen_threads):
    _agent_calls(model_dir, {"extra": {"threads": 2}})
    assert seen_threads == {"generate": {2}, "score": {2}}


def test_threads_flag_reaches_the_agent_and_is_not_part_of_the_run(model_dir, tmp_path, seen_threads):
    document = _run(model_dir, tmp_path, "--threads", "2")
    assert seen_threads["generate"] == {2}
    assert "threads" not in json.dumps(document["run"])  # an execution option: a resume may change it


def test_bad_threads_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "random", "--threads", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("harness: error: argument --threads: --threads must be a number")
