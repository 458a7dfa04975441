"""Building blocks of the MathWord generator: fast seeded draws, a worked-solution recorder, word lists.

A problem family is a pure function ``family(draw, work, steps) -> (text, answer)``. It draws everything
from ``draw`` (which reads a seeded numpy Generator) and performs *every* arithmetic step of the solution
through ``work.op``: the text and the answer come from the same values, the recorded lines are the
oracle's worked solution, and ``len(work.lines) == steps`` is the difficulty (tested for every family).
"""

from __future__ import annotations

from fractions import Fraction

from ragen_envs.math.answers import format_number

_BATCH = 64


class Draw:
    """Uniform draws from a seeded ``numpy.random.Generator``, fetched 64 at a time (a numpy call per scalar
    costs microseconds; the generator stays the only source of randomness)."""

    __slots__ = ("rng", "buffer")

    def __init__(self, rng) -> None:
        self.rng = rng
        self.buffer: list[float] = []

    def uniform(self) -> float:
        """A uniform float in [0, 1) (from the buffered batch)."""
        if not self.buffer:
            self.buffer = self.rng.random(_BATCH).tolist()
        return self.buffer.pop()

    def int(self, low: int, high: int) -> int:
        """An integer in [low, high]."""
        return low + int(self.uniform() * (high - low + 1))

    def mult(self, low: int, high: int, step: int) -> int:
        """A multiple of ``step`` in [low, high] (low and high multiples of step)."""
        return step * self.int(low // step, high // step)

    def pick(self, options):
        """One item of ``options``, uniformly."""
        return options[int(self.uniform() * len(options))]

    def chance(self, p: float = 0.5) -> bool:
        """True with probability ``p``."""
        return self.uniform() < p

    def sample(self, options, count: int) -> list:
        """``count`` distinct items of ``options`` in random order."""
        pool = list(options)
        return [pool.pop(int(self.uniform() * len(pool))) for _ in range(count)]


_SYMBOLS = {"+": "+", "-": "-", "*": "×", "/": "÷"}


class Work:
    """Records the solution: one operation per step, formatted as lines only when asked for."""

    __slots__ = ("ops",)

    def __init__(self) -> None:
        self.ops: list[tuple] = []

    def op(self, a, symbol: str, b):
        """Compute ``a symbol b`` exactly (symbol in ``+ - * /``), record it, return an int when integral."""
        if symbol == "+":
            result = a + b
        elif symbol == "-":
            result = a - b
        elif symbol == "*":
            result = a * b
        elif type(a) is int and type(b) is int:
            result = a // b if a % b == 0 else Fraction(a, b)
        else:
            result = Fraction(a) / b
        if type(result) is Fraction and result.denominator == 1:
            result = result.numerator
        self.ops.append((a, symbol, b, result))
        return result

    @property
    def count(self) -> int:
        """How many operations were recorded."""
        return len(self.ops)

    @property
    def lines(self) -> list[str]:
        """The worked solution, one ``a op b = result`` line per operation."""
        return [f"{num(a)} {_SYMBOLS[s]} {num(b)} = {num(r)}" for a, s, b, r in self.ops]


def num(value) -> str:
    """A number as the text writes it (exact: ``12``, ``2.5``, ``7/3``)."""
    if type(value) is int:
        return str(value)
    return format_number(value)


def money(value) -> str:
    """Dollars: ``$12``, ``$12.50``."""
    if type(value) is int:
        return f"${value}"
    value = Fraction(value)
    if value.denominator == 1:
        return f"${value.numerator}"
    cents = value * 100
    if cents.denominator == 1:
        return f"${cents.numerator // 100}.{cents.numerator % 100:02d}"
    return f"${num(value)}"


def percent(fraction: Fraction) -> str:
    """A fraction as a percentage text, e.g. ``Fraction(1, 4)`` -> ``"25%"``."""
    return f"{num(Fraction(fraction) * 100)}%"


def ratio_text(fraction: Fraction) -> str:
    """A fraction in words where it reads naturally (``half``, ``a third``), else ``2/5``."""
    fraction = Fraction(fraction)
    return _FRACTION_WORDS.get(fraction, f"{fraction.numerator}/{fraction.denominator}")


_FRACTION_WORDS = {
    Fraction(1, 2): "half",
    Fraction(1, 3): "a third",
    Fraction(2, 3): "two thirds",
    Fraction(1, 4): "a quarter",
    Fraction(3, 4): "three quarters",
    Fraction(1, 5): "a fifth",
}

NAMES = (
    "Ava", "Ben", "Chloe", "Diego", "Emma", "Farah", "Gus", "Hana", "Ivan", "Jada", "Kofi", "Lena", "Mateo",
    "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sam", "Tara", "Uma", "Victor", "Wen", "Ximena", "Yusuf", "Zoe",
    "Aiko", "Bruno", "Carmen", "Dmitri", "Elif", "Felix", "Grace", "Hiro", "Isla", "Jonas", "Keiko", "Leo",
    "Maya", "Nico", "Olga", "Pablo", "Rahul", "Sofia", "Tomas", "Vera", "Will", "Yara",
)  # fmt: skip


def names(draw: Draw, count: int) -> list[str]:
    """``count`` distinct names of :data:`NAMES`."""
    return draw.sample(NAMES, count)


def join_words(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
