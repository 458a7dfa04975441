"""Unit tests of ragen_envs.parsing and of the step semantics ragen_envs.core gives every env."""

from __future__ import annotations

import threading

import pytest
from gymnasium.error import ResetNeeded
from hypothesis import given
from hypothesis import strategies as st

from ragen_envs.core import INFO_KEYS, ActionResult, TextEnv
from ragen_envs.parsing import (
    MAX_REASONING_WORDS,
    MIN_REASONING_WORDS,
    REASONING_VOCAB,
    RESPONSE_FORMATS,
    SAMPLE_VOCAB,
    ParsedResponse,
    decode_tool_call,
    format_instructions,
    format_response,
    normalize_action,
    parse_response,
    random_reasoning,
    reasoning_of,
    split_actions,
    tool_call_bodies,
)


# ---- parse_response -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "thinking", "answer"),
    [
        ("<think>go left</think><answer>Left</answer>", "go left", "Left"),
        ("<think> a </think>\n \t<answer>  Left || Up \n</answer>", "a", "Left || Up"),
        ("preamble <think>t</think><answer>a</answer> trailing words", "t", "a"),
        ("<think></think><answer>x</answer>", "", "x"),
        ("<think>multi\nline</think><answer>a</answer><answer>b</answer>", "multi\nline", "a"),
        ("<think>x</think><answer><answer>y</answer></answer>", "x", "<answer>y"),
        ("<think>a <answer>fake</answer> b</think><answer>real</answer>", "a <answer>fake</answer> b", "real"),
    ],
)
def test_think_format_accepts(text, thinking, answer):
    assert parse_response(text) == ParsedResponse(ok=True, thinking=thinking, answer=answer)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "missing <think>"),
        ("Left", "missing <think>"),
        ("<answer>Left</answer>", "missing <think>"),
        ("<think>never closed <answer>Left</answer>", "missing </think> after <think>"),
        ("<think>t</think> so <answer>Left</answer>", "</think> must be followed by <answer>"),
        ("<think>t</think>", "</think> must be followed by <answer>"),
        ("<think>t</think><answer>Left", "missing </answer> after <answer>"),
        ("<think>t</think><answer> \n </answer>", "empty answer"),
        # Nested think tags: the first </think> closes the block, so what follows must be the answer.
        ("<think><think>a</think></think><answer>x</answer>", "</think> must be followed by <answer>"),
    ],
)
def test_think_format_rejects_with_a_reason(text, error):
    parsed = parse_response(text)
    assert not parsed.ok and parsed.error == error and parsed.answer == ""


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (
            'I go up.\n<tool_call>\n{"name": "move"}\n</tool_call>',
            ParsedResponse(True, "I go up.", '<tool_call>\n{"name": "move"}\n</tool_call>'),
        ),
        (
            "<think>t</think>\n<tool_call>a</tool_call> and <tool_call>b</tool_call> trailing",
            ParsedResponse(True, "t", "<tool_call>a</tool_call> and <tool_call>b</tool_call>"),
        ),
        ("<tool_call>a</tool_call><tool_call>b", ParsedResponse(True, "", "<tool_call>a</tool_call>")),
        ('{"name": "move"}', ParsedResponse(False, error="missing <tool_call>")),
        ("<answer>Up</answer>", ParsedResponse(False, error="missing <tool_call>")),
        ('plan <tool_call>{"name": "move"}', ParsedResponse(False, error="missing </tool_call> after <tool_call>")),
        ("</tool_call><tool_call>", ParsedResponse(False, error="missing </tool_call> after <tool_call>")),
    ],
)
def test_tool_format(text, parsed):
    assert parse_response(text, "tool") == parsed


@pytest.mark.parametrize(
    ("answer", "limit", "bodies"),
    [
        ("<tool_call> a </tool_call>x<tool_call>b</tool_call>", None, ["a", "b"]),
        ("<tool_call>a</tool_call><tool_call>b</tool_call><tool_call>c</tool_call>", 2, ["a", "b"]),
        ("<tool_call>a</tool_call><tool_call>unclosed", None, ["a"]),
        ("<tool_call></tool_call>", None, [""]),
        ("<tool_call><tool_call>a</tool_call>", None, ["<tool_call>a"]),
    ],
)
def test_tool_call_bodies(answer, limit, bodies):
    assert tool_call_bodies(answer, limit) == bodies


@pytest.mark.parametrize(
    ("body", "decoded"),
    [
        ('{"name": "move", "arguments": {"direction": "Up"}}', ("move", {"direction": "Up"})),
        (
            '{"name": "move", "arguments": "{\\"direction\\": \\"Up\\"}"}',
            ("move", {"direction": "Up"}),
        ),  # OpenAI's wire form
        ('{"name": "move"}', ("move", {})),
        ('{"name": "move", "arguments": ""}', ("move", {})),
        ("", "the tool call is not valid JSON (Input is a zero-length, empty document at character 0)"),
        (
            '{"name": "move",}',
            "the tool call is not valid JSON (trailing comma is not allowed at character 15)",
        ),
        ("[" * 100_000, "the tool call is not valid JSON (depth limit exceeded at character 1025)"),
        (
            "1" * 5000,
            "the tool call is not valid JSON (number is infinity when parsed as double at character 0)",
        ),
        ("null", 'a tool call must be a JSON object {"name": ..., "arguments": {...}}'),
        ('{"name": ["move"]}', 'a tool call needs a "name" string'),
        ('{"name": "move", "arguments": [1]}', "the \"arguments\" of tool call 'move' must be a JSON object"),
        ('{"name": "move", "arguments": "[1]"}', "the \"arguments\" of tool call 'move' must be a JSON object"),
        (
            '{"name": "move", "arguments": "{"}',
            "the \"arguments\" string of tool call 'move' is not valid JSON (unexpected end of data at character 1)",
        ),
    ],
)
def test_decode_tool_call_never_raises(body, decoded):
    assert decode_tool_call(body) == decoded


def test_answer_and_raw_formats():
    assert parse_response("I think Left.<answer> Left </answer>", "answer") == ParsedResponse(
        ok=True, thinking="I think Left.", answer="Left"
    )
    assert parse_response("<think>t</think><answer>Up</answer>", "answer").answer == "Up"
    assert parse_response("Left", "answer").error == "missing <answer>"
    assert parse_response("  Left || Up \n", "raw") == ParsedResponse(ok=True, answer="Left || Up")
    assert parse_response(" \n\t ", "raw").error == "empty response"


def test_bad_inputs_fail_without_raising():
    assert parse_response(None).error == "response must be a string, got NoneType"
    assert parse_response(b"<think></think><answer>x</answer>").error == "response must be a string, got bytes"
    assert "unknown response format 'json'" in parse_response("x", "json").error


def _finishes(fn, seconds: float = 60.0):
    """Run ``fn`` in a thread; a hang guard (a quadratic scan of these inputs would run for hours), not a timer."""
    result = []
    worker = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, "parsing did not finish: is the scan still linear?"
    return result[0]


HUGE_INPUTS = {
    "1e6 think tags": ("<think>" * 1_000_000, False),
    "1e6 think tags then a valid tail": ("<think>" * 1_000_000 + "</think><answer>Left</answer>", True),
    "spaces then 1e6 answer tags": ("<think>x</think>" + " " * 1_000_000 + "<answer>" * 1_000_000, False),
    "1e6 near-miss closers": (
        "<think>" + "</think" * 1_000_000 + "</think><answer>" + "a || " * 200_000 + "</answer>",
        True,
    ),
    "3e6 angle brackets": ("<" * 3_000_000, False),
}
HUGE_TOOL_INPUTS = {
    "1e6 tool-call openers": ("<tool_call>" * 1_000_000, False),
    "1e6 empty calls": ("<tool_call></tool_call>" * 1_000_000, True),
    "a 1e6-deep call": ("<tool_call>" + "[" * 1_000_000 + "</tool_call>", True),
    "1e6 near-miss closers": ("<tool_call>" + "</tool_call" * 1_000_000, False),
}


@pytest.mark.parametrize(("text", "ok"), list(HUGE_INPUTS.values()), ids=list(HUGE_INPUTS))
def test_huge_inputs_parse_in_linear_time(text, ok):
    parsed = _finishes(lambda: parse_response(text))
    assert parsed.ok is ok
    for response_format in RESPONSE_FORMATS:
        _finishes(lambda response_format=response_format: parse_response(text, response_format))


@pytest.mark.parametrize(("text", "ok"), list(HUGE_TOOL_INPUTS.values()), ids=list(HUGE_TOOL_INPUTS))
def test_huge_tool_inputs_parse_in_linear_time(text, ok):
    parsed = _finishes(lambda: parse_response(text, "tool"))
    assert parsed.ok is ok
    _finishes(lambda: reasoning_of(text, "tool"))
    bodies = _finishes(lambda: tool_call_bodies(parsed.answer, 3))
    assert bool(bodies) is ok
    for body in bodies:
        assert isinstance(_finishes(lambda body=body: decode_tool_call(body)), str)  # a reason, never a raise


def test_huge_answer_splits_and_keeps_only_the_limit():
    answer = " || ".join(["Left"] * 500_000)
    parsed = _finishes(lambda: parse_response(f"<think>t</think><answer>{answer}</answer>"))
    assert _finishes(lambda: split_actions(parsed.answer, "||", 2)) == ["Left", "Left"]


# ---- split_actions and formatting ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("answer", "separator", "limit", "expected"),
    [
        ("Left || Up", "||", None, ["Left", "Up"]),
        ("Left||Up||Down", "||", 2, ["Left", "Up"]),
        (" Left ||  || Up ||", "||", None, ["Left", "Up"]),
        ("Left | Up", "||", None, ["Left | Up"]),
        ("a|||b", "||", None, ["a", "|b"]),
        ("Bank Vault || x", None, None, ["Bank Vault || x"]),
        ("   ", None, None, []),
        ("||", "||", None, []),
        ("Left\n||\tUp", "||", 1, ["Left"]),
    ],
)
def test_split_actions(answer, separator, limit, expected):
    assert split_actions(answer, separator, limit) == expected


_plain = st.text(alphabet=st.characters(blacklist_characters="<>"), max_size=50)


@given(_plain, _plain.filter(lambda s: s.strip()))
def test_format_then_parse_round_trips(thinking, answer):
    for response_format in RESPONSE_FORMATS:
        written = f"<tool_call>{answer}</tool_call>" if response_format == "tool" else answer  # a tool answer is calls
        parsed = parse_response(format_response(thinking, written, response_format), response_format)
        assert parsed.ok and parsed.answer == written.strip()
        if response_format in ("think", "tool"):
            assert parsed.thinking == thinking.strip()


# ---- reasoning_of: the reasoning Z the collapse metrics measure ----------------------------------------------
@pytest.mark.parametrize(
    ("response", "response_format", "reasoning"),
    [
        ("<think> go left </think><answer>Left</answer>", "think", "go left"),
        ("<think>go left</think>no answer block", "think", "go left"),  # Z is measured even when the answer fails
        ("pre <think>a</think> <think>b</think>", "think", "a"),  # the first block
        ("<think>a <think> b</think>", "think", "a <think> b"),
        ("<think>\n \t</think><answer>x</answer>", "think", ""),  # present and empty
        ("<think>never closed", "think", None),  # no block
        ("</think><think>", "think", None),
        ("<answer>Left</answer>", "think", None),
        ("", "think", None),
        (" step by step\n<answer>Left</answer>", "answer", "step by step"),
        ("<answer>Left</answer>", "answer", ""),
        ("no tag at all", "answer", None),
        ("<think>a</think><answer>Left</answer>", "raw", None),  # the raw format has no reasoning
        (' go left \n<tool_call>{"name": "move"}</tool_call>', "tool", "go left"),  # free text before the call
        ("pre <think> a </think> post <tool_call>x</tool_call>", "tool", "a"),  # its <think> block when it has one
        ("<think>never closed <tool_call>x</tool_call>", "tool", "<think>never closed"),
        ("<tool_call>x</tool_call>", "tool", ""),
        ("plan <tool_call>unclosed", "tool", "plan"),  # Z is measured even when the call fails
        ("<think>a</think> no call", "tool", None),
        ("a <tool_call>x</tool_call> b <tool_call>y</tool_call>", "tool", "a"),
        ("<think>a</think>", "unknown", None),
    ],
)
def test_reasoning_of(response, response_format, reasoning):
    assert reasoning_of(response, response_format) == reasoning


@given(st.text(st.characters(blacklist_characters="<"), max_size=40), st.text(max_size=20))
def test_reasoning_of_reads_back_what_format_response_wrote(thinking, answer):
    assert reasoning_of(format_response(thinking, answer, "think"), "think") == thinking.strip()
    assert reasoning_of(format_response("", answer, "answer"), "answer") == ""


def test_the_answer_format_writes_reasoning_before_the_tag_only_when_asked():
    assert format_response("plan", "Up", "answer") == "<answer>Up</answer>"
    written = format_response("plan", "Up", "answer", reasoning_before_answer=True)
    assert written == "plan\n<answer>Up</answer>"
    assert parse_response(written, "answer") == ParsedResponse(ok=True, thinking="plan", answer="Up")
    assert reasoning_of(written, "answer") == "plan"
    assert format_response("", "Up", "answer", reasoning_before_answer=True) == "<answer>Up</answer>"
    assert format_response("plan", "Up", "think", reasoning_before_answer=True) == format_response("plan", "Up")


# ---- random reasoning and action normalisation: one home each ------------------------------------------------
def test_random_reasoning_draws_the_word_count_then_the_words():
    import numpy as np

    for seed in range(50):
        words = random_reasoning(np.random.default_rng(seed))
        rng = np.random.default_rng(seed)
        k = int(rng.integers(MIN_REASONING_WORDS, MAX_REASONING_WORDS + 1))
        assert words == [REASONING_VOCAB[int(i)] for i in rng.integers(len(REASONING_VOCAB), size=k)]
        assert MIN_REASONING_WORDS <= len(words) <= MAX_REASONING_WORDS
        assert set(random_reasoning(np.random.default_rng(seed), SAMPLE_VOCAB)) <= set(SAMPLE_VOCAB)
    assert SAMPLE_VOCAB == REASONING_VOCAB[: len(SAMPLE_VOCAB)] and len(set(REASONING_VOCAB)) == len(REASONING_VOCAB)


def test_the_random_agent_and_action_space_samples_write_random_reasoning():
    import gymnasium as gym
    import numpy as np

    import ragen_envs  # noqa: F401
    from harness.agents.base import Context, EnvHandle, Request
    from harness.agents.scripted import RandomAgent

    env = gym.make("ragen/Bandit-v0")
    observation, _ = env.reset(seed=0)
    context = Context(({"role": "user", "content": observation},), "<think>", EnvHandle(env.unwrapped))
    (generation,) = RandomAgent().generate([Request(context, 7)])
    assert parse_response("<think>" + generation.text).thinking == " ".join(random_reasoning(np.random.default_rng(7)))
    env.action_space.seed(3)
    thinking = parse_response(env.action_space.sample()).thinking.split(" ")
    assert set(thinking) <= set(SAMPLE_VOCAB) and MIN_REASONING_WORDS <= len(thinking) <= MAX_REASONING_WORDS


@pytest.mark.parametrize(
    ("text", "strip_chars", "normalized"),
    [
        ("Left", ".", "left"),
        ("  **UP**! ", "*!", "up"),
        ("[Left]", " .!\"'`[]()", "left"),
        ("Up .", " .", "up"),  # a space among the forgiven characters reaches inside the punctuation
        ("Up .", ".", "up "),
        ("Le ft", " .", "le ft"),
        ("", ".", ""),
    ],
)
def test_normalize_action(text, strip_chars, normalized):
    assert normalize_action(text, strip_chars) == normalized


@pytest.mark.parametrize(
    ("env_id", "accepted", "rejected"),
    [
        ("ragen/FrozenLake-v0", ["LEFT", "[Left]", "Up .", "(down)", "`Right`!"], ["**Up**", "Le ft"]),
        ("ragen/Sokoban-v0", ["LEFT", "**Up**", "Down!", "`Right`"], ["[Left]", "(down)", "Up ."]),
    ],
)
def test_each_env_forgives_its_own_punctuation_around_an_action(env_id, accepted, rejected):
    import gymnasium as gym

    import ragen_envs  # noqa: F401

    env = gym.make(env_id)
    for text in accepted + rejected:
        env.reset(seed=0)
        info = env.step(f"<think>t</think><answer>{text}</answer>")[4]
        assert info["action_is_valid"] == (text in accepted), text


def test_format_response_rejects_unknown_formats_and_instructions_name_the_separator():
    with pytest.raises(ValueError, match=r"response_format must be one of \('think', 'answer', 'raw', 'tool'\)"):
        format_response("t", "a", "xml")
    text = format_instructions("think", "Left || Up")
    assert "<think>...</think><answer>Left || Up</answer>" in text and "' || '" in text
    assert "Separate" not in format_instructions("answer", "Dragon", None)


# ---- core.TextEnv step semantics ----------------------------------------------------------------------------
class CounterEnv(TextEnv):
    """A minimal env: ``inc`` adds one, ``noop`` does nothing, ``win`` ends the episode successfully."""

    example_answer = "inc || inc"

    def __init__(self, **kwargs) -> None:
        super().__init__(max_turns=kwargs.pop("max_turns", 4), max_actions_per_turn=3, **kwargs)
        self.count = 0
        self.applied: list[str] = []

    def _generate(self) -> None:
        self.count = int(self.np_random.integers(10))
        self.applied = []

    def _observe(self) -> str:
        return f"count={self.count}"

    def _instructions(self) -> str:
        return "Count."

    def _parse_action(self, text: str) -> str | None:
        return text.lower() if text.lower() in ("inc", "noop", "win") else None

    def _apply(self, action: str) -> ActionResult:
        self.applied.append(action)
        if action == "win":
            return ActionResult(reward=1.0, effective=True, terminated=True, success=True, message="You win.")
        if action == "inc":
            self.count += 1
            return ActionResult(reward=0.5, effective=True)
        return ActionResult(reward=0.0, effective=False)

    def oracle(self) -> tuple[str, str]:
        return "win now", "win"


def test_unknown_action_costs_the_penalty_and_the_others_are_still_played():
    env = CounterEnv()
    env.reset(seed=0)
    start = env.count
    obs, reward, terminated, _, info = env.step("<think>t</think><answer>inc || fly || INC</answer>")
    assert env.applied == ["inc", "inc"] and env.count == start + 2
    assert reward == pytest.approx(-0.1 + 0.5 + 0.5)
    assert not info["action_is_valid"] and info["action_is_effective"] and not terminated
    assert info["parsed_actions"] == ["inc", "fly", "INC"]
    assert obs == f"Unknown action(s) 'fly' were ignored.\ncount={start + 2}"


def test_actions_after_termination_are_ignored():
    env = CounterEnv()
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("<think>t</think><answer>win || inc || inc</answer>")
    assert env.applied == ["win"] and terminated and not truncated and info["success"]
    assert reward == 1.0 and obs.startswith("You win.\n")
    with pytest.raises(ResetNeeded):
        env.step("<think>t</think><answer>inc</answer>")


def test_extra_actions_beyond_the_limit_are_dropped():
    env = CounterEnv()
    env.reset(seed=0)
    _, reward, _, _, info = env.step("<think>t</think><answer>inc || inc || inc || inc || win</answer>")
    assert env.applied == ["inc"] * 3 and info["parsed_actions"] == ["inc"] * 3
    assert reward == pytest.approx(1.5) and info["action_is_valid"]


def test_a_response_that_does_not_parse_keeps_the_state_and_says_why():
    env = CounterEnv()
    obs0, info0 = env.reset(seed=1)
    assert info0["instructions"].startswith("Count.\nAlways respond as <think>")
    obs, reward, terminated, truncated, info = env.step("<answer>inc</answer>")
    assert env.applied == [] and reward == pytest.approx(-0.1)
    assert obs == f"Your last response was invalid (missing <think>); the state is unchanged.\n{obs0}"
    assert info == {
        "success": False,
        "action_is_valid": False,
        "action_is_effective": False,
        "parsed_actions": [],
        "turn": 1,
    }
    assert set(INFO_KEYS) == set(info)


def test_an_answer_with_no_actions_is_invalid_and_noop_is_valid_but_not_effective():
    env = CounterEnv()
    env.reset(seed=0)
    obs, reward, *_ = env.step("<think>t</think><answer> || </answer>")
    assert reward == pytest.approx(-0.1) and "(no action)" in obs
    _, reward, _, _, info = env.step("<think>t</think><answer>noop</answer>")
    assert reward == 0.0 and info["action_is_valid"] and not info["action_is_effective"]


def test_turns_count_and_truncate():
    env = CounterEnv(max_turns=2)
    env.reset(seed=0)
    _, _, terminated, truncated, info = env.step("<think>t</think><answer>noop</answer>")
    assert info["turn"] == 1 and not truncated and not terminated
    _, _, terminated, truncated, info = env.step("<think>t</think><answer>noop</answer>")
    assert info["turn"] == 2 and truncated and not terminated
    with pytest.raises(ResetNeeded):
        env.step("<think>t</think><answer>noop</answer>")


def test_penalty_and_format_are_configurable():
    env = CounterEnv(format_penalty=-1.0, response_format="raw")
    env.reset(seed=0)
    assert env.step("")[1] == -1.0
    assert env.step("inc || inc")[1] == 1.0
