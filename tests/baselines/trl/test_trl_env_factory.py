"""TRL's ``environment_factory`` path: every env's actions as tools, played as TRL calls them, and a real run."""

import json
import math
import os
from pathlib import Path

import gymnasium as gym
import pytest

from tests.helpers.paths import TINY_MODEL

pytest.importorskip("trl", reason="needs the trl extra: pip install 'ragen-envs[trl]'")
torch = pytest.importorskip("torch")

import ragen_envs  # noqa: E402
from baselines.trl import MICallback, SNRFilterGRPOTrainer, env_return, make_tool_dataset, tool_environment  # noqa: E402
from baselines.trl.env_factory import ENDED  # noqa: E402
from ragen_envs.parsing import decode_tool_call, parse_response, tool_call_bodies  # noqa: E402

MODEL = str(TINY_MODEL)
ENV_IDS = [env_id for env_id in ragen_envs.registered_ids() if env_id.startswith("ragen/")]


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_oracle_played_through_the_tool_methods_is_the_gym_episode(env_id):
    """Each call TRL would make (the method named by the call, its JSON arguments as keywords) is one env turn of
    the tool format: observations and rewards equal ``gym.make``'s stepped with the same calls one per turn, and the
    oracle's calls solve the episode through the tools whenever they solve it in gym."""
    env_class = tool_environment(env_id, env_kwargs={"max_turns": 40})
    tools, reference = env_class(), gym.make(env_id, max_turns=40, response_format="tool")
    for seed in (0, 1):
        first, _ = reference.reset(seed=seed)
        assert tools.reset(env_seed=seed, prompt=[]) == first
        done, total = False, 0.0
        while not done:
            oracle = reference.unwrapped.oracle_response()
            bodies = tool_call_bodies(parse_response(oracle, "tool").answer)
            assert bodies, f"{env_id}: the oracle wrote no call"
            name, arguments = decode_tool_call(bodies[0])  # one call per turn on both sides
            block = f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
            observation, reward, terminated, truncated, info = reference.step(block)
            answer = getattr(tools, name)(**arguments)
            total += reward
            done = terminated or truncated
            assert answer.startswith(observation)
            assert tools.rewards[-1] == reward and tools.episode_return == pytest.approx(total)
        assert tools.done and tools.success == bool(info.get("success"))
        assert "The episode has ended" in answer
        assert getattr(tools, name)(**arguments) == ENDED  # a call after the end changes nothing
        assert tools.episode_return == pytest.approx(total)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_schemas_trl_renders_are_the_envs_declared_tools(env_id):
    """TRL renders each public method through transformers' ``get_json_schema``: name, description, argument,
    type and choices are the env's own declaration (``info["tools"]`` of the tool format)."""
    from transformers.utils import get_json_schema

    env_class = tool_environment(env_id)
    instance = env_class()
    _, info = gym.make(env_id, response_format="tool").reset(seed=0)
    for declared in info["tools"]:
        rendered = get_json_schema(getattr(instance, declared["function"]["name"]))["function"]
        want = declared["function"]
        assert rendered["name"] == want["name"] and rendered["description"] == want["description"]
        parameter = next(iter(want["parameters"]["properties"]))
        got, expected = rendered["parameters"]["properties"][parameter], want["parameters"]["properties"][parameter]
        assert got["description"] == expected["description"]
        assert got.get("enum") == expected.get("enum")
        assert sorted(got["type"] if isinstance(got["type"], list) else [got["type"]]) == sorted(
            expected["type"] if isinstance(expected["type"], list) else [expected["type"]]
        )
        assert rendered["parameters"]["required"] == [parameter]


def test_bad_arguments_name_the_fix():
    with pytest.raises(ValueError, match="Did you mean 'ragen/Sokoban-v0'"):
        tool_environment("ragen/Sokobn-v0")
    with pytest.raises(ValueError, match="response_format"):
        tool_environment("ragen/Sokoban-v0", env_kwargs={"response_format": "think"})
    with pytest.raises(ValueError, match="max_turn"):
        tool_environment("ragen/Sokoban-v0", env_kwargs={"max_turn": 3})
    with pytest.raises(ValueError, match="env seeds"):
        make_tool_dataset("ragen/Sokoban-v0", [-1])
    with pytest.raises(ValueError, match="tool_environment"):
        MICallback(object())
    with pytest.raises(ValueError, match="mi_probe_seeds must be 0"):
        MICallback(tool_environment("ragen/Sokoban-v0"), probe_seeds=2)


@pytest.mark.slow
def test_two_grpo_steps_with_the_environment_factory(tmp_path):
    """A real ``GRPOTrainer`` run (TRL's own tool-calling loop and generation) on the tiny model, with the SNR filter
    subclass and the MI callback: the env's rules and first observation reach the prompt, the tools are rendered,
    every rollout is one episode of its row's seed, the reward is the environments' return, and the filter's and
    the MI family's keys are logged each step. (The tiny model was not trained to call tools: its rollouts end
    without calls, so the reward is 0 here; the calls themselves are tested above.)"""
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig

    from baselines.algos import FilterOptions

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    torch.manual_seed(0)
    torch.set_num_threads(1)
    env_id, groups, samples = "ragen/Sokoban-v0", 2, 2
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    # TRL needs a template that renders tool calls; the tiny model's does not, so TRL's own Qwen2.5 one is set
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()
    env_class = tool_environment(env_id, env_kwargs={"max_turns": 2})
    mi = MICallback(env_class, every=1, samples=8)
    args = GRPOConfig(
        output_dir=str(tmp_path), use_cpu=True, per_device_train_batch_size=groups * samples, num_generations=samples,
        max_steps=2, logging_steps=1, learning_rate=5e-5, seed=0, save_strategy="no", max_completion_length=24,
        gradient_checkpointing=False, report_to="none", max_tool_calling_iterations=2,
    )  # fmt: skip
    trainer = SNRFilterGRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32), args=args,
        processing_class=tokenizer, reward_funcs=env_return, environment_factory=env_class,
        train_dataset=make_tool_dataset(env_id, range(4), env_kwargs={"max_turns": 2}), callbacks=[mi],
        filter=FilterOptions(include_zero=True, value=1.0),
    )  # fmt: skip
    assert [tool.__name__ for tool in trainer.tools] == ["move"]
    trainer.train()
    logs = [row for row in trainer.state.log_history if "loss" in row]
    assert len(logs) == 2 and len(mi.history) == 2
    for row in logs:
        assert math.isfinite(row["loss"])
        assert row["rewards/env_return/mean"] == pytest.approx(row["reward"])
        assert row["rollout/filter_kept_ratio"] == 1.0  # include_zero with value 1: every group kept
        assert "collapse_first_turn/valid_rate" in row and "tools/call_frequency" in row
    batch = env_class.last
    assert batch.trainer is trainer and len(batch.records) == groups * samples
    seeds = [record["seed"] for record in batch.records]
    assert seeds[::samples] == seeds[1::samples] and len(set(seeds)) == groups  # a group is one seed
    assert [record["sample"] for record in batch.records] == [0, 1] * groups
    for record in batch.records:
        first, _ = gym.make(env_id, max_turns=2, response_format="tool").reset(seed=record["seed"])
        assert record["turns"][0]["user"] == first
    rendered = tokenizer.apply_chat_template(
        [*trainer.train_dataset[0]["prompt"][:1], {"role": "user", "content": "x"}], tools=trainer.tools,
        tokenize=False,
    )  # fmt: skip
    assert '"name": "move"' in rendered and "push every box onto a target" in rendered
