"""The tool format (``response_format="tool"``): ragen_envs.tools, and what TextEnv.step makes of tool calls."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_parsing import CounterEnv

import ragen_envs
from harness.agents.base import Context, EnvHandle, Request
from harness.agents.scripted import OracleAgent, RandomAgent, random_reasoning_logprob
from ragen_envs.parsing import parse_response, random_reasoning, reasoning_of
from ragen_envs.tools import DEFAULT_TOOLS, ActionTool, read_tool_call, read_tool_calls, write_tool_calls
from tests.helpers.paths import TINY_MODEL

MOVE = ActionTool("move", "Move.", "direction", "Where.", choices=("Up", "Down"))
SEARCH = ActionTool("search", "Search.", "query", "Words.", template="search[{}]")
CLICK = ActionTool("click", "Click.", "element", "What.", template="click[{}]")
ANSWER = ActionTool("answer", "Answer.", "answer", "The answer.", accepts_numbers=True)


def call(name: str, **arguments) -> str:
    return json.dumps({"name": name, "arguments": arguments})


def test_schema_is_an_openai_function_schema():
    assert MOVE.schema == {
        "type": "function",
        "function": {
            "name": "move",
            "description": "Move.",
            "parameters": {
                "type": "object",
                "properties": {"direction": {"type": "string", "description": "Where.", "enum": ["Up", "Down"]}},
                "required": ["direction"],
            },
        },
    }
    assert ANSWER.schema["function"]["parameters"]["properties"]["answer"]["type"] == ["string", "number"]


@pytest.mark.parametrize(
    ("tools", "body", "result"),
    [
        ((MOVE,), call("move", direction="Up"), ("Up", "")),
        ((MOVE,), call("move", direction="sideways"), ("sideways", "")),  # the env judges the value, as in text
        ((SEARCH, CLICK), call("click", element="buy now"), ("click[buy now]", "")),
        ((SEARCH, CLICK), call("search", query="red [shoes]"), ("search[red [shoes]]", "")),
        ((ANSWER,), call("answer", answer=42), ("42", "")),
        ((ANSWER,), call("answer", answer=-0.5), ("-0.5", "")),
        ((ANSWER,), call("answer", answer=True), ("", "argument 'answer' of tool 'answer' must be a string or a number, got a boolean")),
        ((MOVE,), call("move", direction=1), ("", "argument 'direction' of tool 'move' must be a string, got a number")),
        ((MOVE,), call("move", direction=None), ("", "argument 'direction' of tool 'move' must be a string, got null")),
        ((MOVE,), call("move", direction=["Up"]), ("", "argument 'direction' of tool 'move' must be a string, got an array")),
        ((MOVE,), call("move"), ("", "tool 'move' needs the argument 'direction' (a string)")),
        ((MOVE,), call("move", direction="Up", speed=2), ("", "tool 'move' takes only 'direction', not 'speed'")),
        ((MOVE,), call("mvoe", direction="Up"), ("", "unknown tool 'mvoe'. Did you mean 'move'? Available: move")),
        ((SEARCH, CLICK), call("x" * 1000), ("", f"unknown tool {'x' * 40!r}. Available: search, click")),
    ],
)  # fmt: skip
def test_a_call_becomes_the_action_string_or_a_reason(tools, body, result):
    assert read_tool_call(body, tools) == result


@given(
    st.text(max_size=40) | st.sampled_from(["</tool_call>", "a</tool_call><tool_call>b", "<\\/", '"}}']),
    st.sampled_from([(MOVE,), (SEARCH, CLICK), (ANSWER,), DEFAULT_TOOLS]),
)
def test_written_calls_read_back_as_the_actions(argument, tools):
    actions = [tool.template.replace("{}", argument) for tool in tools]
    written = write_tool_calls(actions, tools)
    parsed = parse_response(f"plan\n{written}", "tool")
    assert parsed.ok and parsed.thinking == "plan"
    assert read_tool_calls(parsed.answer, tools, limit=10) == (actions, [""] * len(actions))


def test_an_action_no_tool_writes_is_an_error_of_the_env():
    with pytest.raises(ValueError, match=r"no tool of \['search', 'click'\] writes the action 'buy'"):
        write_tool_calls(["buy"], (SEARCH, CLICK))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"template": "go"}, r"template must hold one '\{\}', got 'go'"),
        ({"template": "{} {}"}, r"template must hold one"),
        ({"name": "my tool"}, r"name must be letters, digits and '_', got 'my tool'"),
        ({"parameter": ""}, r"parameter must be letters, digits and '_', got ''"),
    ],
)
def test_a_bad_tool_declaration_names_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ActionTool(**{"name": "t", "description": "d", "parameter": "p", "parameter_description": "p", **kwargs})


# ---- TextEnv.step in the tool format --------------------------------------------------------------------------
def test_each_call_is_one_action_up_to_the_limit():
    env = CounterEnv(response_format="tool")
    env.reset(seed=0)
    start = env.count
    calls = "".join(f"<tool_call>{call('act', action=a)}</tool_call>" for a in ("inc", "INC", "noop", "inc"))
    obs, reward, _, _, info = env.step(f"counting up\n{calls}")
    assert env.applied == ["inc", "inc", "noop"] and info["parsed_actions"] == ["inc", "INC", "noop"]
    assert reward == pytest.approx(1.0) and info["action_is_valid"] and obs == f"count={start + 2}"


def test_refused_and_unknown_calls_cost_one_penalty_and_the_others_are_still_played():
    env = CounterEnv(response_format="tool")
    env.reset(seed=0)
    start = env.count
    response = "".join(
        f"<tool_call>{body}</tool_call>"
        for body in (call("act", action="inc"), "{oops", call("act", action="fly"), call("jump", action="inc"))
    )
    obs, reward, terminated, _, info = env.step(response)
    assert env.applied == ["inc"] and reward == pytest.approx(-0.1 + 0.5) and not terminated
    assert not info["action_is_valid"] and info["action_is_effective"]
    assert info["parsed_actions"] == ["inc", "{oops", "fly"]  # the limit is 3 calls; a refused one as written
    assert obs.splitlines() == [
        "Tool call 2 was refused: the tool call is not valid JSON (unexpected character, expected a string key at "
        "character 1).",
        "Unknown action(s) 'fly' were ignored.",
        f"count={start + 1}",
    ]


def test_an_env_that_declares_no_tools_offers_its_action_strings_through_one():
    env = CounterEnv(response_format="tool")
    _, info = env.reset(seed=0)
    assert env.action_tools == DEFAULT_TOOLS and [t["function"]["name"] for t in info["tools"]] == ["act"]
    assert (
        env.oracle_response() == 'win now\n<tool_call>\n{"name": "act", "arguments": {"action": "win"}}\n</tool_call>'
    )
    assert "You may make several calls in one response" in info["instructions"]
    assert info["instructions"].endswith(write_tool_calls(["inc", "inc"], DEFAULT_TOOLS))  # its example_answer


def test_the_tool_format_leaves_the_default_prompt_and_samples_alone():
    default, tool = CounterEnv(), CounterEnv(response_format="tool")
    assert default.reset(seed=0)[1]["instructions"] == "Count.\n" + (
        "Always respond as <think>your reasoning</think><answer>your answer</answer> with no other text, e.g. "
        "<think>...</think><answer>inc || inc</answer>. Separate several actions with ' || '."
    )
    tool.reset(seed=0)
    default.action_space.candidates = tool.action_space.candidates = ("inc", "noop")
    default.action_space.seed(5)
    tool.action_space.seed(5)
    words, answer = parse_response(default.action_space.sample()), parse_response(tool.action_space.sample(), "tool")
    assert answer.thinking == words.thinking  # the same draws, written as calls
    assert read_tool_calls(answer.answer, DEFAULT_TOOLS, 3)[0] == words.answer.split(" || ")


def test_numbers_reach_a_math_env_as_their_json_text():
    env = gym.make("ragen/MathWord-v0", response_format="tool").unwrapped
    env.reset(seed=0)
    _, answer = env.oracle()
    number = json.loads(answer)
    assert isinstance(number, int)
    _, reward, terminated, _, info = env.step(f"<tool_call>{call('answer', answer=number)}</tool_call>")
    assert terminated and info["success"] and reward == 1.0 and info["parsed_actions"] == [answer]


@pytest.mark.parametrize("env_id", [i for i in ragen_envs.registered_ids() if i.startswith("ragen/")])
def test_every_candidate_action_is_a_call_of_the_envs_tools(env_id):
    env = gym.make(env_id, response_format="tool").unwrapped
    for seed in range(3):
        env.reset(seed=seed)
        candidates = list(env.candidate_actions())
        tokens, errors = read_tool_calls(write_tool_calls(candidates, env.action_tools), env.action_tools, 100)
        assert tokens == candidates and not any(errors)
    env.close()


# ---- scripted agents: their reasoning is where the MI family reads Z -------------------------------------------
def _context(env) -> Context:
    observation, info = env.reset(seed=0)
    messages = ({"role": "system", "content": info["instructions"]}, {"role": "user", "content": observation})
    return Context(messages, "", EnvHandle(env.unwrapped))


def test_the_random_agent_writes_calls_after_its_random_reasoning():
    env = gym.make("ragen/Sokoban-v0", response_format="tool")
    context = _context(env)
    (generation,) = RandomAgent().generate([Request(context, 7)])
    reasoning = reasoning_of(generation.text, "tool")
    assert reasoning == " ".join(random_reasoning(np.random.default_rng(7)))
    assert np.isfinite(random_reasoning_logprob(reasoning).logprob_sum)
    _, _, _, _, info = env.step(generation.text)
    assert info["action_is_valid"] and set(info["parsed_actions"]) <= {"Up", "Down", "Left", "Right"}


def test_the_oracle_agent_scores_its_own_tool_format_reasoning():
    env = gym.make("ragen/WebShop-v0", response_format="tool")
    context = _context(env)
    agent = OracleAgent()
    (generation,) = agent.generate([Request(context, 0)])
    assert generation.text.startswith(env.unwrapped.oracle()[0])
    assert '{"name": "search", "arguments": {"query": ' in generation.text
    (score,) = agent.score([context], [reasoning_of(generation.text, "tool")])
    assert score.logprob_sum == 0.0
    env.close()


def test_the_prompts_tool_list_is_what_a_chat_template_renders_from_info_tools():
    transformers = pytest.importorskip("transformers")

    tokenizer = transformers.AutoTokenizer.from_pretrained(TINY_MODEL)
    # the loop of Qwen2.5's template that lists the tools, rendered by transformers' own chat-template engine
    tokenizer.chat_template = '{%- for tool in tools %}{{- "\\n" }}{{- tool | tojson }}{%- endfor %}'
    for env_id in ("ragen/Sokoban-v0", "ragen/WebShop-v0", "ragen/MathWord-v0"):
        env = gym.make(env_id, response_format="tool")
        _, info = env.reset(seed=0)
        listed = tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tools=info["tools"], tokenize=False)
        assert f"<tools>{listed}\n</tools>" in info["instructions"]
        env.close()
