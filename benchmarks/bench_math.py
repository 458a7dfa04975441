"""Math envs: Countdown generation (solvability proven) beside reasoning-gym's, answer checking with our safe
parser beside RAGEN-style plain ``eval``, and MathWord generation.

Two ways to run it (neither is part of the test command):

    python -m pytest benchmarks/bench_math.py --benchmark-only          # pytest-benchmark tables
    .venv-bench-math/bin/python benchmarks/bench_math.py --rounds 7      # side by side, with ratios

The second form interleaves the contenders round by round on the same (shared) CPU and prints the median
rate of each plus the ratios. reasoning-gym is never our dependency: install it into a separate venv that
also sees this package (``python3 -m venv .venv-bench-math --system-site-packages &&
.venv-bench-math/bin/pip install reasoning-gym``). Without it its reference figure in docs/benchmarks.md (139/s) is used.

Workloads:

- ``countdown generate``: ``generate_problem`` with RAGEN's sizes (3–4 numbers in 1–99, target 1–100),
  every problem proven solvable and its solution written. ``countdown reset(seed)`` is the same through
  ``env.reset``. reasoning-gym: ``create_dataset("countdown", …)`` with the same sizes, items ``ds[i]``
  (forward construction through sympy).
- ``countdown check``: 2,000 answers (a third correct, a third wrong value, a third wrong numbers) over
  generated problems, scored 1 / 0.1 / 0. Ours: :func:`ragen_envs.math.countdown.score_answer` (tokenizer and
  recursive descent over rationals, with limits). RAGEN-style: the number check by regex, the character
  whitelist regex, then ``eval(expr, {"__builtins__": None}, {})`` and a float comparison — unsafe
  (``9**9**9**9`` hangs it), reimplemented here only for the comparison, never in the package.
- ``mathword generate``: ``generate_problem`` (text, exact answer, recorded operations), with and without
  writing the worked solution out as text; ``mathword reset(seed)`` through the env.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time

import gymnasium as gym
import numpy as np
import pytest

import ragen_envs  # noqa: F401  (registers the ids)
from ragen_envs.math import countdown, math_word

GENERATE = 2000
RG_GENERATE = 40
CHECKS = 2000
WORD = 5000
ANCHORS = {"reasoning-gym countdown generate": 139.0}
"""Peer reference figure (docs/benchmarks.md; problems per second), shown when reasoning-gym is not installed."""


# ---- workloads: each returns (setup, run); run() does the batch and returns how many items it made ---------------
def countdown_generate():
    config = countdown.CountdownConfig()
    state = {"round": 0}

    def setup():
        state["round"] += 1

    def run():
        rng = np.random.default_rng(state["round"])
        for _ in range(GENERATE):
            countdown.generate_problem(rng, config)
        return GENERATE

    return setup, run


def env_resets(env_id: str, count: int):
    env = gym.make(env_id).unwrapped
    state = {"round": 0}

    def setup():
        state["round"] += 1

    def run():
        base = state["round"] * count
        for seed in range(base, base + count):
            env.reset(seed=seed)
        return count

    return setup, run


def reasoning_gym_generate():
    import reasoning_gym

    state = {"round": 0}

    def setup():
        state["round"] += 1

    def run():
        ds = reasoning_gym.create_dataset(
            "countdown", min_numbers=3, max_numbers=4, min_value=1, max_value=99, min_target=1, max_target=100,
            seed=state["round"], size=RG_GENERATE,
        )  # fmt: skip
        for i in range(RG_GENERATE):
            ds[i]
        return RG_GENERATE

    return setup, run


def check_cases() -> list[tuple[str, tuple[int, ...], int]]:
    """Answers as a model might write them: correct, well-formed but wrong, wrong numbers."""
    rng = np.random.default_rng(0)
    cases = []
    for i in range(CHECKS):
        p = countdown.generate_problem(rng, countdown.CountdownConfig())
        nums = [str(n) for n in p.numbers]
        answer = (p.solution, " + ".join(nums), " * ".join(nums[:-1]))[i % 3]
        cases.append((answer, p.numbers, p.target))
    return cases


def ours_check():
    cases = check_cases()

    def run():
        for answer, numbers, target in cases:
            countdown.score_answer(answer, numbers, target)
        return len(cases)

    return (lambda: None), run


_DIGITS = re.compile(r"\d+")
_ALLOWED = re.compile(r"^[\d+\-*/().\s]+$")


def ragen_style_score(equation: str, numbers, target: int) -> float:
    """RAGEN/TinyZero's Countdown check, for the benchmark only: regex number check, whitelist, bare eval."""
    try:
        used = [int(n) for n in _DIGITS.findall(equation)]
        if sorted(used) != sorted(numbers):
            return 0.0
        if not _ALLOWED.match(equation):
            return 0.1
        result = eval(equation, {"__builtins__": None}, {})  # noqa: S307 - the unsafe peer behaviour being measured
        return 1.0 if abs(result - target) < 1e-5 else 0.1
    except Exception:
        return 0.1


def ragen_check():
    cases = check_cases()

    def run():
        for answer, numbers, target in cases:
            ragen_style_score(answer, numbers, target)
        return len(cases)

    return (lambda: None), run


def mathword_generate(with_solution: bool):
    state = {"round": 0}

    def setup():
        state["round"] += 1

    def run():
        rng = np.random.default_rng(state["round"])
        for _ in range(WORD):
            problem = math_word.generate_problem(rng)
            if with_solution:
                _ = problem.solution
        return WORD

    return setup, run


def _agree():
    """Both checkers give the same reward on every benchmark case (the comparison is like for like)."""
    for answer, numbers, target in check_cases():
        assert countdown.score_answer(answer, numbers, target)[0] == ragen_style_score(answer, numbers, target)


# ---- pytest-benchmark --------------------------------------------------------------------------------------------
def _bench(benchmark, workload, rounds: int = 5):
    setup, run = workload
    benchmark.pedantic(run, setup=setup, rounds=rounds, iterations=1)


@pytest.mark.benchmark(group="countdown generate")
def test_countdown_generate(benchmark):
    _bench(benchmark, countdown_generate())


@pytest.mark.benchmark(group="countdown generate")
def test_countdown_reset(benchmark):
    _bench(benchmark, env_resets("ragen/Countdown-v0", GENERATE))


@pytest.mark.benchmark(group="countdown generate")
def test_reasoning_gym_countdown_generate(benchmark):
    pytest.importorskip("reasoning_gym")
    _bench(benchmark, reasoning_gym_generate(), rounds=3)


@pytest.mark.benchmark(group="countdown check")
def test_countdown_check_safe_parser(benchmark):
    _agree()
    _bench(benchmark, ours_check())


@pytest.mark.benchmark(group="countdown check")
def test_countdown_check_ragen_style_eval(benchmark):
    _bench(benchmark, ragen_check())


@pytest.mark.benchmark(group="mathword generate")
@pytest.mark.parametrize("with_solution", [False, True])
def test_mathword_generate(benchmark, with_solution):
    _bench(benchmark, mathword_generate(with_solution))


@pytest.mark.benchmark(group="mathword generate")
def test_mathword_reset(benchmark):
    _bench(benchmark, env_resets("ragen/MathWord-v0", WORD))


# ---- side by side -------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    try:
        import reasoning_gym  # noqa: F401

        have_rg = True
    except ImportError:
        have_rg = False
    _agree()
    contenders = {
        "countdown generate": countdown_generate(),
        "countdown reset(seed)": env_resets("ragen/Countdown-v0", GENERATE),
        "countdown check (safe parser)": ours_check(),
        "countdown check (RAGEN-style eval)": ragen_check(),
        "mathword generate": mathword_generate(False),
        "mathword generate + solution text": mathword_generate(True),
        "mathword reset(seed)": env_resets("ragen/MathWord-v0", WORD),
        "mathqa reset(seed)": env_resets("ragen/MathQA-v0", WORD),
    }
    if have_rg:
        contenders["reasoning-gym countdown generate"] = reasoning_gym_generate()
    rates: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.rounds):  # interleaved: every contender once per round, so load hits all alike
        for name, (setup, run) in contenders.items():
            setup()
            start = time.perf_counter()
            count = run()
            rates[name].append(count / (time.perf_counter() - start))
    median = {name: statistics.median(values) for name, values in rates.items()}
    for name, value in ANCHORS.items():
        median.setdefault(name, value)
    print(f"{'contender':38} {'median /s':>12} {'min /s':>12} {'max /s':>12}")
    for name, values in rates.items():
        print(f"{name:38} {median[name]:12,.0f} {min(values):12,.0f} {max(values):12,.0f}")
    source = "measured" if have_rg else "the reference figure in docs/benchmarks.md (reasoning-gym not installed)"
    rg = median["reasoning-gym countdown generate"]
    print(f"\nratios (reasoning-gym {source}):")
    print(
        f"  countdown generate / reasoning-gym generate      {median['countdown generate'] / rg:8.1f}x  (target >= 100x)"
    )
    print(f"  countdown reset(seed) / reasoning-gym generate   {median['countdown reset(seed)'] / rg:8.1f}x")
    ratio = median["countdown check (safe parser)"] / median["countdown check (RAGEN-style eval)"]
    print(f"  safe parser / RAGEN-style eval                   {ratio:8.2f}x  (target >= 1x)")
    print(
        f"  mathword generate                                {median['mathword generate']:8,.0f}/s (target >= 10,000/s)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
