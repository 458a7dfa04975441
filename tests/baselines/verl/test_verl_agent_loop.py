"""verl adapter: the ragen agent loop against a stub generation server that samples the tiny model on CPU.

Runs in the verl venv (``bash scripts/install-verl.sh``; ``.ci/run`` has a lane for it); skipped elsewhere.
"""

import asyncio
import json

import pytest

from tests.helpers.paths import ROOT, TINY_MODEL

pytest.importorskip("verl", reason="needs the verl venv: bash scripts/install-verl.sh")
torch = pytest.importorskip("torch")

import gymnasium as gym  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from baselines.verl import AGENT_NAME, RagenAgentLoop, dataset_rows, write_dataset  # noqa: E402
from baselines.verl.compat import require_verl  # noqa: E402

MODEL = str(TINY_MODEL)
ENV = "ragen/Sokoban-v0"
RESPONSE_LENGTH = 512


class StubServer:
    """``server_manager.generate``: the tiny model sampled with the harness's seeded decoder; records each call."""

    def __init__(self, model, tokenizer, silent: bool = False) -> None:
        self.model, self.tokenizer, self.silent = model, tokenizer, silent
        self.calls: list[dict] = []

    async def generate(self, *, request_id, prompt_ids, sampling_params, **_):
        from verl.workers.rollout.replica import TokenOutput

        from baselines.ppo.generation import sample_responses

        if self.silent:
            await asyncio.sleep(3600)
        seed = 1000 + len(self.calls)
        (out,) = sample_responses(
            self.model, self.tokenizer, [list(prompt_ids)], [seed],
            max_new_tokens=sampling_params["max_tokens"], temperature=sampling_params["temperature"],
        )  # fmt: skip
        self.calls.append({"prompt_ids": list(prompt_ids), "token_ids": list(out.token_ids),
                           "log_probs": list(out.logprobs), "params": dict(sampling_params), "request": request_id})  # fmt: skip
        return TokenOutput(token_ids=list(out.token_ids), log_probs=list(out.logprobs))


@pytest.fixture(scope="module")
def tiny():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    return AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32).eval(), AutoTokenizer.from_pretrained(MODEL)


def play(tiny, row, silent=False):
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap

    model, tokenizer = tiny
    config = OmegaConf.create(
        {"actor_rollout_ref": {"rollout": {"prompt_length": 1024, "response_length": RESPONSE_LENGTH}}, "data": {}}
    )
    server = StubServer(model, tokenizer, silent)

    async def episode():  # the loop captures the running event loop when built
        loop = RagenAgentLoop(
            trainer_config=DictConfigWrap(config), server_manager=server, tokenizer=tokenizer, processor=None,
            dataset_cls=None, data_config=DictConfigWrap(config.data), hf_model_type="llama",
        )  # fmt: skip
        return await loop.run({"temperature": 1.0, "top_p": 1.0, "top_k": -1, "logprobs": True}, **row)

    return asyncio.run(episode()), server


@pytest.fixture(scope="module")
def episodes(tiny):
    rows = dataset_rows(ENV, [0, 1, 2], env_kwargs={"max_turns": 3}, max_new_tokens=48)
    return [(row, *play(tiny, {"raw_prompt": row["prompt"], **row})) for row in rows]


def test_model_tokens_are_masked_in_env_and_prefill_tokens_out(episodes, tiny):
    _, tokenizer = tiny
    multi_turn = 0
    for _, out, server in episodes:
        assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
        assert tokenizer.decode(out.prompt_ids).endswith("<think>")  # turn 1's prefill closes the prompt
        sampled = [t for call in server.calls for t in call["token_ids"]]
        assert [t for t, m in zip(out.response_ids, out.response_mask, strict=True) if m] == sampled
        for call, turn in zip(server.calls, out.extra_fields["ragen_turns"], strict=True):
            # each request is exactly the sequence so far: prompt + every earlier response and env token
            assert call["prompt_ids"] == (out.prompt_ids + out.response_ids)[: len(out.prompt_ids) + turn["start"]]
            assert out.response_ids[turn["start"] : turn["end"]] == call["token_ids"]
            assert call["params"]["max_tokens"] <= 48
        env_text = tokenizer.decode([t for t, m in zip(out.response_ids, out.response_mask, strict=True) if not m])
        if len(server.calls) > 1:
            multi_turn += 1
            assert "Turn 2:" in env_text and env_text.count("<think>") == len(server.calls) - 1
        assert len({call["request"] for call in server.calls}) == 1  # one episode, one sticky request id
    assert multi_turn, "some episode should last several turns"


def test_logprobs_align_with_the_tokens_they_score(episodes, tiny):
    from baselines.ppo.generation import sequence_logprobs

    model, _ = tiny
    for _, out, server in episodes:
        sampled = [lp for call in server.calls for lp in call["log_probs"]]
        assert [lp for lp, m in zip(out.response_logprobs, out.response_mask, strict=True) if m] == pytest.approx(
            sampled
        )
        assert all(lp == 0.0 for lp, m in zip(out.response_logprobs, out.response_mask, strict=True) if not m)
        # teacher-forcing the merged sequence gives the sampled log-probs at the mask-1 positions
        sequence = out.prompt_ids + out.response_ids
        start = len(out.prompt_ids)
        spans = [(start + t["start"], start + t["end"]) for t in out.extra_fields["ragen_turns"]]
        with torch.no_grad():
            logp, mask, _, _ = sequence_logprobs(model, [sequence], [spans])
        forced = logp[0][mask[0].bool()].tolist()
        assert forced == pytest.approx(sampled, abs=1e-4)


def test_reward_is_the_episode_return(episodes, tiny):
    _, tokenizer = tiny
    for row, out, server in episodes:
        info = row["extra_info"]
        env = gym.make(info["env_id"], **json.loads(info["env_kwargs"]))
        env.reset(seed=info["seed"])
        total, done = 0.0, False
        for call in server.calls:
            assert not done
            _, reward, terminated, truncated, _ = env.step(
                "<think>" + tokenizer.decode(call["token_ids"], skip_special_tokens=True)
            )
            total, done = total + reward, terminated or truncated
        assert done
        assert out.reward_score == pytest.approx(total)
        assert out.extra_fields["reward_extra_info"]["episode_return"] == pytest.approx(total)
        assert out.as_dict()["rm_scores"][-1] == pytest.approx(total)  # verl puts it on the last response token
        assert out.as_dict()["rm_scores"][:-1].abs().sum() == 0


def test_dataset_rows_route_to_the_loop(tmp_path):
    import pandas as pd

    path = write_dataset(tmp_path / "train.parquet", ENV, range(4), env_kwargs={"max_turns": 3})
    frame = pd.read_parquet(path)
    assert list(frame["agent_name"]) == [AGENT_NAME] * 4
    assert [int(info["seed"]) for info in frame["extra_info"]] == [0, 1, 2, 3]
    assert frame["prompt"][0][0]["role"] == "system"


# ---- bad input ------------------------------------------------------------------------------------------------
def test_bad_rows_and_dead_servers_name_the_fix(tiny):
    with pytest.raises(ValueError, match="Did you mean 'ragen/Sokoban-v0'"):
        dataset_rows("ragen/Sokobn-v0", [0])
    with pytest.raises(ValueError, match="max_turn"):
        dataset_rows(ENV, [0], env_kwargs={"max_turn": 3})
    with pytest.raises(ValueError, match="write_dataset"):
        play(tiny, {"raw_prompt": [], "extra_info": {}})
    (row,) = dataset_rows(ENV, [0])
    row["extra_info"]["generate_timeout_s"] = 0.5
    with pytest.raises(TimeoutError, match="no response within 0.5 s"):
        play(tiny, {"raw_prompt": row["prompt"], **row}, silent=True)


def test_untested_verl_minor_names_the_install(monkeypatch):
    import verl

    monkeypatch.setattr(verl, "__version__", "0.10.0")
    monkeypatch.delenv("RAGEN_VERL_ANY_VERSION", raising=False)
    with pytest.raises(ImportError, match="install-verl.sh"):
        require_verl()


def test_example_run_composes_with_verls_config(tmp_path):
    """examples/verl_ragen_grpo.sh's overrides are valid keys of ragen_ppo.yaml on verl 0.9's config (composed by
    Hydra and checked as ``baselines.verl.main`` checks them, not run)."""
    import os
    import stat
    import subprocess
    import sys

    root = ROOT
    compose = tmp_path / "compose.py"
    compose.write_text(
        "import json, os, sys, verl\n"
        "from hydra import compose, initialize_config_dir\n"
        "from omegaconf import OmegaConf\n"
        "from baselines.verl.main import check_config\n"
        "assert sys.argv[1] == 'baselines.verl.main', sys.argv[1]\n"
        f"with initialize_config_dir(config_dir={str(root / 'baselines' / 'verl' / 'config')!r}, version_base=None):\n"
        "    cfg = compose(config_name='ragen_ppo', overrides=sys.argv[2:])\n"
        "check_config(cfg)\n"
        "print(json.dumps(OmegaConf.to_container(cfg)))\n"
    )
    python = tmp_path / "python"  # stands in for the venv's python: runs the dataset step, composes the training step
    python.write_text(
        f'#!/bin/bash\nif [ "$1" = "-m" ]; then shift; exec {sys.executable} {compose} "$@"; fi\nexec {sys.executable} "$@"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    env = {
        **os.environ,
        "PY": str(python),
        "MODEL": "/models/chat",
        "OUT": str(tmp_path / "run"),
        "TRAIN_SEEDS": "8",
        "VAL_SEEDS": "2",
    }
    done = subprocess.run(["bash", str(root / "examples" / "verl_ragen_grpo.sh")], env=env, capture_output=True,
                          text=True, timeout=600, cwd=root)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    config = json.loads(done.stdout.strip().splitlines()[-1])
    assert config["algorithm"]["filter_groups"]["enable"] is False  # RAGEN's filter instead of DAPO's
    assert config["ragen"]["filter"]["value"] == 0.9 and config["ragen"]["mi"]["every"] == 5
    assert config["trainer"]["use_v1"] is False
    assert config["actor_rollout_ref"]["rollout"]["agent"]["default_agent_loop"] == AGENT_NAME
    assert config["actor_rollout_ref"]["actor"]["clip_ratio_high"] == 0.28
    assert "wandb" in config["trainer"]["logger"]
    assert (tmp_path / "run" / "data" / "train.parquet").exists()


def test_the_tool_format_plays_through_the_loop(tiny):
    from ragen_envs.parsing import reasoning_of

    kwargs = {"max_turns": 2, "response_format": "tool"}
    (row,) = dataset_rows(ENV, [0], env_kwargs=kwargs, max_new_tokens=24)
    out, _ = play(tiny, {"raw_prompt": row["prompt"], **row})
    episode, turns = out.extra_fields["ragen_episode"], out.extra_fields["ragen_turns"]
    assert "<tools>" in episode["instructions"] and dict(episode["env_kwargs"]) == kwargs
    assert turns and all(t["prefill"] == "" and t["reasoning"] == reasoning_of(t["response"], "tool") for t in turns)
    env = gym.make(ENV, **kwargs)
    env.reset(seed=0)
    for turn in turns:  # the loop's env judged each response in the tool format
        assert env.step(turn["response"])[1] == turn["reward"]
