"""Typed backend options per agent: checked, converted, listed, settable from the CLI (``--agent-opt``)."""

from __future__ import annotations

import pytest

from harness.agents import AgentOptions, make_agent
from harness.agents.registry import parse_agent_opts, parse_spec
from harness.cli import main


def test_every_lm_agent_declares_its_options():
    names = {entry: {o.name for o in parse_spec(spec)[0].options}
             for entry, spec in (("hf", "hf:x"), ("vllm", "vllm:x"), ("openai", "openai:http://h#m"))}  # fmt: skip
    assert {"prefix_cache", "threads", "score_threads"} <= names["hf"]
    assert {"max_model_len", "gpu_memory_utilization", "enforce_eager", "seed", "max_num_seqs"} <= names["vllm"]
    assert {"concurrency", "timeout_s", "tokenizer", "prefill"} <= names["openai"]


def test_unknown_keys_and_bad_values_are_one_line_errors_with_a_close_match():
    with pytest.raises(ValueError, match=r"^agent 'random' has no option 'threads'\. Its options: none$"):
        make_agent("random", AgentOptions(extra={"threads": 2}))
    with pytest.raises(ValueError, match=r"no option 'prefix_cach'\. Did you mean 'prefix_cache'\?"):
        make_agent("tiny", AgentOptions(extra={"prefix_cach": False}))
    with pytest.raises(ValueError, match=r"option threads must be in \[1, inf\], got 0"):
        make_agent("tiny", AgentOptions(extra={"threads": 0}))
    with pytest.raises(ValueError, match=r"option prefix_cache must be true or false"):
        make_agent("tiny", AgentOptions(extra={"prefix_cache": "sometimes"}))
    with pytest.raises(ValueError, match=r"names no agent\. Did you mean vllm\.seed\?"):
        make_agent("random", AgentOptions(extra={"vlm.seed": 1}))


def test_cli_texts_become_typed_values_scoped_per_agent():
    assert parse_agent_opts(["max_model_len=2048", "enforce_eager=false", "gpu_memory_utilization=0.2"], ["vllm:m"]) == {
        "max_model_len": 2048, "enforce_eager": False, "gpu_memory_utilization": 0.2,
    }  # fmt: skip
    assert parse_agent_opts(["vllm.seed=3", "tiny.threads=2"], ["tiny", "vllm:m"]) == {
        "vllm.seed": 3,
        "tiny.threads": 2,
    }
    assert parse_agent_opts(["max_model_len=none"], ["vllm:m"]) == {"max_model_len": None}
    with pytest.raises(ValueError, match=r"for one agent write vllm\.max_model_len"):
        parse_agent_opts(["max_model_len=2048"], ["tiny", "vllm:m"])
    with pytest.raises(ValueError, match=r"takes key=value"):
        parse_agent_opts(["max_model_len"], ["vllm:m"])


def test_a_scoped_option_reaches_only_its_agent():
    agent = make_agent("tiny", AgentOptions(extra={"tiny.prefix_cache": False, "vllm.max_model_len": 64}))
    assert agent.options.extra == {"prefix_cache": False, "threads": None, "score_threads": None}
    assert agent._reuse_prefixes is False
    agent.close()


def test_harness_run_takes_agent_opts_and_records_them(tmp_path, capsys):
    import json

    status = main([
        "run", "tiny", "--env", "ragen/Bandit-v0", "--episodes", "1", "--samples", "1", "--mi-samples", "0",
        "--out", str(tmp_path), "--run-id", "r", "--quiet", "--no-plots", "--agent-opt", "prefix_cache=false",
    ])  # fmt: skip
    assert status == 0
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    assert config["run"]["agent_options"]["extra"] == {"prefix_cache": False}
    capsys.readouterr()
    assert (
        main(["run", "tiny", "--env", "ragen/Bandit-v0", "--agent-opt", "prefix_cahce=0", "--out", str(tmp_path)]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["harness: error: agent 'tiny' has no option 'prefix_cahce'. Did you mean 'prefix_cache'? "
                   "Its options: prefix_cache, threads, score_threads"]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # nothing was started


def test_harness_ls_lists_each_agents_options(capsys):
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    vllm = out[out.index("  vllm:<model>") :]
    assert "max_model_len=INT" in vllm and "derived by vLLM" in vllm
    assert "prefix_cache=BOOL (default True)" in out


def test_the_threads_flag_reaches_only_agents_that_take_threads():
    from harness.config import EnvPlan, RunConfig
    from harness.runner import with_threads

    config = with_threads(RunConfig(agents=("random", "tiny"), envs=(EnvPlan("ragen/Bandit-v0", 1, 1),)), "auto")
    assert config.agent_options.extra == {"tiny.threads": "auto"}
    make_agent("random", config.agent_options).close()  # no thread option: none reaches it
    assert parse_agent_opts(["threads=auto"], ["tiny"]) == {"threads": "auto"}
