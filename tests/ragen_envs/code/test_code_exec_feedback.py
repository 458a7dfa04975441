"""CodeExec's feedback on an answer it did not run says what was wrong (the env's one format penalty unchanged)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import ragen_envs  # noqa: F401
from ragen_envs.code.env import rejection_reason


@pytest.fixture
def env():
    env = gym.make("ragen/CodeExec-v0")
    yield env
    env.close()


def _step(env, answer: str) -> tuple[str, float, dict]:
    _, info = env.reset(seed=0)
    obs, reward, _, _, step_info = env.step(f"<think>I write it.</think><answer>{answer}</answer>")
    return obs, reward, {**info, **step_info}


def test_code_without_the_target_function_names_it(env):
    obs, reward, info = _step(env, "```python\ndef helper(x):\n    return x\n```")
    name = info["function"]
    first = obs.splitlines()[0]
    assert first == (
        f"Your code was not run: it has no function named {name} (the task asks for def {name}(...)); it defines helper."
    )
    assert "Unknown action" not in obs and reward == pytest.approx(-0.1) and not info["action_is_valid"]


def test_a_syntax_error_names_its_line(env):
    obs, _, _ = _step(env, "```python\nimport math\nresult = [\n    1,\n    2\nprint(result)\n```")
    assert obs.splitlines()[0] == "Your code was not run: syntax error on line 2 ('[' was never closed): result = ["


def test_no_code_and_hostile_code_get_a_reason_not_a_crash():
    assert rejection_reason("```python\n```", "f").startswith("Your answer holds no code")
    nested = rejection_reason("x = " + "(" * 5000 + ")" * 5000, "f")  # the parser's own limits, on the host
    assert nested.startswith("Your code was not run: ") and ("cannot parse it" in nested or "syntax error" in nested)
    assert rejection_reason("x = 1\x00", "f").startswith("Your code was not run: syntax error")
    assert rejection_reason("class f: pass", "g").endswith("it defines no function.")
