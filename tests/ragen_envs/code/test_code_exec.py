"""ragen/CodeExec-v0: the problem bank, the unforgeable runner, feedback and rewards."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import ragen_envs  # noqa: F401
from ragen_envs.code.env import CodeExecEnv, extract_code
from ragen_envs.code.problems import FAMILIES, make_problem, run_reference
from ragen_envs.code.runner import encode
from ragen_envs.code.verdicts import matches, run_tests
from ragen_envs.sandbox import bwrap, get_backend

pytestmark = pytest.mark.skipif(not bwrap.BwrapBackend.available(), reason="bubblewrap cannot run here")


def answer(code: str) -> str:
    return f"<think>t</think><answer>```python\n{code}\n```</answer>"


@pytest.fixture
def env():
    e = gym.make("ragen/CodeExec-v0").unwrapped  # the default backend: the warm pool
    e.reset(seed=4)
    return e


@pytest.fixture(params=["pool", "bwrap"])
def any_env(request):
    e = CodeExecEnv(backend=request.param)
    e.reset(seed=4)
    return e


def test_bank_has_at_least_60_families():
    assert len(FAMILIES) >= 60


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_reference_passes_its_hidden_tests_in_the_sandbox(name):
    p = make_problem(name, np.random.default_rng(12345))
    report = run_tests(
        get_backend(), p.reference, p.name, list(p.visible + p.hidden), list(p.visible_expected + p.hidden_expected)
    )
    assert all(o.passed for o in report.outcomes), [o for o in report.outcomes if not o.passed][:2]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_instances_differ_across_seeds(name):
    """Code memorized from one seed fails another seed's instance (other name, constants or edge cases)."""
    problems = [make_problem(name, np.random.default_rng(seed)) for seed in range(12)]
    for p in problems:
        assert len(p.visible) == 2 and len(p.hidden) == 8 and p.name in p.prompt
    base = problems[0]
    for other in problems[1:]:
        if other.name != base.name:
            return
        try:
            outputs = run_reference(base.reference, base.name, list(other.hidden))
        except Exception:  # noqa: BLE001 - the memorized code crashes on this instance: it differs
            return
        if any(
            not matches(encode(want), repr(encode(got)))
            for want, got in zip(other.hidden_expected, outputs, strict=True)
        ):
            return
    pytest.fail(f"{name}: 12 seeds give the same function name and behaviour")


def test_extract_code_handles_fences_and_bare_code():
    assert extract_code("```python\ndef f():\n    return 1\n```") == "def f():\n    return 1"
    assert extract_code("Here:\n```py\nx = 1\n```\nmore text") == "x = 1"
    assert extract_code("def f(): return 2") == "def f(): return 2"
    assert extract_code("```python\ndef f(): return 3") == "def f(): return 3"


def test_oracle_solves_with_full_reward(env):
    obs, reward, terminated, truncated, info = env.step(env.oracle_response())
    assert terminated and info["success"] and reward == 1.0
    assert info["tests_passed"] == info["tests_total"] == 8 and info["sandbox_backend"] == "pool"


def test_answer_without_the_function_name_runs_nothing(env):
    obs, reward, terminated, truncated, info = env.step(answer("def something_else():\n    return 1"))
    assert reward == env.format_penalty and not info["action_is_valid"] and "tests_passed" not in info


def _forgeries(name: str) -> dict[str, str]:
    return {
        "exit_at_import": f"import sys\nsys.exit(0)\ndef {name}(*args):\n    return None",
        "os_exit_in_function": f"import os\ndef {name}(*args):\n    os._exit(0)",
        "print_fake_records": (
            f"def {name}(*args):\n    for k in range(20):\n        print('0' * 32, k, 'ok', repr(('int', 0)), flush=True)\n"
            "    raise SystemExit(0)"
        ),
        "patch_the_runner": (
            "import sys\nm = sys.modules['__main__']\nm.encode = lambda v, depth=0: ('int', 0)\n"
            "m._send = lambda fd, rec: None\nm.matches = lambda *a: True\n"
            f"def {name}(*args):\n    return None"
        ),
        "always_equal_object": (
            f"class Yes:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__\n"
            f"def {name}(*args):\n    return Yes()"
        ),
        "kill_the_runner": f"import os, signal\nos.kill(1, signal.SIGKILL)\nos.kill(os.getppid(), signal.SIGKILL)\ndef {name}(*args):\n    return None",
        "string_subclass": f"class S(str):\n    def __eq__(self, o):\n        return True\ndef {name}(*args):\n    return S('x')",
    }


@pytest.mark.parametrize("attack", sorted(_forgeries("f")))
def test_forged_verdicts_earn_nothing(any_env, attack):
    code = _forgeries(any_env.problem.name)[attack]
    obs, reward, terminated, truncated, info = any_env.step(answer(code))
    assert reward == 0.0 and not info["success"] and info["tests_passed"] == 0, obs


@pytest.mark.parametrize("backend", ["bwrap", "pool"])
def test_the_runner_is_unreachable_from_the_candidate(backend):
    """The nonce lives in the non-dumpable runner: the candidate cannot read its fds or memory."""
    code = """
import os
def probe():
    out = []
    paths = [f'/proc/{pid}/{what}' for pid in (1, os.getppid()) for what in ('fd/0', 'fd/1', 'mem', 'environ')]
    for path in paths:
        try:
            with open(path, 'rb') as f:
                out.append(path + ' readable ' + repr(f.read(200)))
        except OSError as e:
            out.append(path + ' ' + type(e).__name__)
    return out
"""
    report = run_tests(get_backend(backend), code, "probe", [()], [None], nonce="n" * 32)
    assert report.outcomes[0].status == "ok", report
    assert "readable" not in report.outcomes[0].detail, report.outcomes[0].detail


def test_hardcoded_examples_pass_visible_but_not_hidden(env):
    p = env.problem
    table = {tuple(map(repr, args)): want for args, want in zip(p.visible, p.visible_expected, strict=True)}
    code = f"TABLE = {table!r}\ndef {p.name}(*args):\n    return TABLE.get(tuple(map(repr, args)))"
    obs, reward, terminated, truncated, info = env.step(answer(code))
    assert not terminated and reward < 1.0
    assert "passes the examples but only" in obs
    for args in p.hidden:
        if args not in p.visible:
            assert repr(args)[1:-1] not in obs.split("Examples:")[0] or not repr(args)[1:-1]


def test_feedback_shows_the_first_failing_visible_example_and_rewards_improvement(env):
    p = env.problem
    obs, reward, terminated, truncated, info = env.step(answer(f"def {p.name}(*args):\n    return 'wrong'"))
    assert reward == 0.0 and obs.startswith("Example failed:") and repr(p.visible_expected[0]) in obs
    obs, reward, terminated, truncated, info = env.step(env.oracle_response())
    assert terminated and reward == 1.0


def test_error_trace_is_shown_truncated(env):
    p = env.problem
    obs, *_ = env.step(answer(f"def {p.name}(*args):\n    raise ValueError('x' * 100000)"))
    assert "ValueError" in obs and len(obs) < 6000


def test_timeout_is_reported(env):
    env.config = type(env.config)(per_test_s=0.3)
    p = env.problem
    obs, reward, *_ = env.step(answer(f"def {p.name}(*args):\n    while True:\n        pass"))
    assert reward == 0.0 and "did not finish" in obs


def test_family_option_is_validated():
    with pytest.raises(ValueError, match="Did you mean 'caesar'"):
        CodeExecEnv(families=("ceasar",))
    env = CodeExecEnv(families=["caesar"])
    env.reset(seed=0)
    assert env.problem.family == "caesar"


def test_unsafe_backend_is_opt_in_and_flagged():
    with pytest.raises(ValueError, match="allow_unsafe"):
        CodeExecEnv(backend="unsafe-subprocess")
    env = CodeExecEnv(backend="unsafe-subprocess", allow_unsafe=True)
    env.reset(seed=0)
    *_, info = env.step(env.oracle_response())
    assert info["success"] and info["sandbox_unsafe"] is True
