"""Attacks through return values: whatever a candidate's function returns, or whatever its process sends on
the result channel in the runner's place, ``step`` judges it without raising on the host."""

from __future__ import annotations

import marshal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragen_envs.code.env import CodeExecEnv
from ragen_envs.code.runner import encode
from ragen_envs.code.verdicts import matches
from ragen_envs.sandbox import bwrap

pytestmark = pytest.mark.skipif(not bwrap.BwrapBackend.available(), reason="bubblewrap cannot run here")

# Bodies of the candidate's function (its name is the problem's); the expected values are floats.
HOSTILE_RETURNS = {
    "huge int list": "return [2**1500] * max(1, len(args[0]))",
    # One huge int per window, whatever the window (2 to 4): every output length is met on some test.
    "huge int per window of 2": "return [2**1500] * max(1, len(args[0]) - 1)",
    "huge int per window of 3": "return [-(2**1500)] * max(1, len(args[0]) - 2)",
    "huge int per window of 4": "return [10**400] * max(1, len(args[0]) - 3)",
    "huge int": "return 2**3999",
    "huge negative int list": "return [-(2**3000), 2**1100, 10**300]",
    "nan list": "return [float('nan')] * 3",
    "infinities": "return [float('inf'), -float('inf'), 1e308 * 10]",
    "max float": "return [1.7976931348623157e308, -1.7976931348623157e308]",
    "deep nesting": "x = []\n    for _ in range(100_000):\n        x = [x]\n    return x",
    "nesting at the encoder's limit": "x = 0.5\n    for _ in range(50):\n        x = [x]\n    return x",
    "self-containing list": "x = [1.0]\n    x.append(x)\n    return x",
    "huge string": "return 'a' * 10_000_000",
    "many small floats": "return [0.1] * 200_000",
    "complex": "return [1j, 2 + 3j]",
    "bytes": "return [b'\\xff' * 100, bytearray(b'x')]",
    "float subclass": "class F(float):\n        def __eq__(s, o): return True\n    return [F(1.0)] * 5",
    "str subclass": "class S(str):\n        def __eq__(s, o): return True\n    return S('x')",
    "int subclass": "class I(int):\n        def __eq__(s, o): return True\n    return [I(2**1500)]",
    "type object": "return [float, int, type]",
    "generator": "return (x for x in args[0])",
    "exception object": "return [OverflowError('boom')]",
    "raising __repr__": "class R:\n        def __repr__(s): raise OverflowError\n    return [R()]",
    "dict with huge keys": "return {2**1500: float('nan'), float('inf'): 2**2000}",
    "set of mixed": "return {2**1500, float('nan'), 'x', None, True}",
}

# Payloads a candidate sends itself, writing records on the runner's private pipe in its place.
FORGED_PAYLOADS = [
    repr(("int", 2**1500)),
    *(repr(("list", (("int", 2**1500),) * n)) for n in range(1, 8)),  # every output length
    repr(("float", b"1.0")),
    repr(("float", 1j)),
    repr(("float", None)),
    repr(("float", "1e99999")),
    repr(("float", "nan")),
    repr(("float",)),
    repr(("list", 5)),
    repr(("list", "abc")),
    repr(("list", (("int", 1), 2))),
    repr(("dict", ((1,), 2))),
    repr(("set", {1, 2})),
    repr(()),
    repr("a string, not a tuple"),
    repr(("int", -(2**3500), "extra")),
    "(" * 150 + ")" * 150,
    "1" * 5000,
    "[" * 3000,
    "\x00\udcff not a literal",
]


def _answer(name: str, body: str) -> str:
    return f"<think>t</think><answer>```python\ndef {name}(*args):\n    {body}\n```</answer>"


def _forging_answer(name: str, payload: str, tests: int) -> str:
    body = (
        "import sys, os, marshal\n"
        "    w = sys._getframe(1).f_locals['write_fd']\n"
        f"    for k in range({tests}):\n"
        f"        data = marshal.dumps((k, 'ok', {payload!r}))\n"
        "        os.write(w, len(data).to_bytes(4, 'big') + data)\n"
        "    os._exit(0)"
    )
    return _answer(name, body)


@pytest.fixture(scope="module", params=["pool", "bwrap"])
def float_env(request):
    env = CodeExecEnv(families=["moving_average"], backend=request.param, max_turns=100)
    env.reset(seed=1)
    return env


def _step(env, response):
    if env._done:
        env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(response)
    assert isinstance(obs, str) and obs in env.observation_space
    return reward


@pytest.mark.parametrize("attack", sorted(HOSTILE_RETURNS))
def test_hostile_return_values_are_judged_without_raising(float_env, attack):
    assert _step(float_env, _answer(float_env.problem.name, HOSTILE_RETURNS[attack])) < 1.0  # never solves


@pytest.mark.parametrize("payload", FORGED_PAYLOADS, ids=range(len(FORGED_PAYLOADS)))
def test_forged_payloads_on_the_result_channel_are_judged_without_raising(float_env, payload):
    p = float_env.problem
    response = _forging_answer(p.name, payload, len(p.visible) + len(p.hidden))
    assert _step(float_env, response) == 0.0  # forged records earn nothing


# ---- fuzz: random return values ------------------------------------------------------------------------
_atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**3990), max_value=2**3990),
    st.sampled_from([2**1023, 2**1024, -(2**1024), 2**1500, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=50),
    st.binary(max_size=20),
    st.complex_numbers(allow_nan=True),
)
_values = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.lists(inner, max_size=6).map(tuple),
        st.dictionaries(st.one_of(st.integers(), st.text(max_size=5), st.floats()), inner, max_size=4),
        st.frozensets(st.one_of(st.integers(), st.floats(allow_nan=False)), max_size=4),
    ),
    max_leaves=30,
)


def test_fuzzed_return_values_never_raise():
    env = CodeExecEnv(families=["moving_average"], backend="pool", max_turns=10_000)
    env.reset(seed=2)

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(_values)
    def step_never_raises(value):
        blob = marshal.dumps(value).hex()
        body = f"import marshal\n    return marshal.loads(bytes.fromhex({blob!r}))"
        _step(env, _answer(env.problem.name, body))

    step_never_raises()


_literals = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**4000), max_value=2**4000),
        st.floats(), st.text(max_size=8), st.binary(max_size=8), st.complex_numbers(),
        st.sampled_from(["float", "int", "list", "dict", "set", "str", "none", "bool", "other"]),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=5).map(tuple), st.lists(inner, max_size=5)),
    max_leaves=25,
)  # fmt: skip
_wants = st.sampled_from(
    [encode(1.5), encode([0.5, 2.0]), encode({"a": 1.0}), encode({1.0, 2.0}), encode(3), encode("x"), encode(None)]
)


@settings(max_examples=3000, deadline=None, database=None)
@given(_wants, _literals)
def test_any_literal_compares_without_raising(want, got):
    try:
        text = repr(got)
    except ValueError:  # an int too long to print: the runner could not have sent it either
        return
    assert matches(want, text) in (True, False)


def test_huge_ints_compare_exactly_against_floats():
    assert not matches(encode(1.5), repr(("int", 2**1500)))
    assert not matches(encode(float("inf")), repr(("int", 2**1500)))
    assert matches(encode(2.0**1000), repr(("int", 2**1000)))
    assert matches(encode(3.0), repr(("int", 3)))
    assert matches(encode(float("nan")), repr(("float", "nan")))
    assert not matches(encode(1.0), repr(("float", b"1.0")))
