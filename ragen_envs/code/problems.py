"""The problem bank of ``ragen/CodeExec-v0``: families of function-writing problems, instanced by a seed.

A *family* is a function ``(Draw) -> Spec``: it draws the function's name (from synonyms), its constants
(a separator, a modulus, a threshold…) and a test-input generator from the seeded generator, and returns
the signature, the description and a reference solution written for exactly those constants. So two seeds
of one family are different problems: code memorized from one instance fails the other's hidden tests.

:func:`make_problem` turns a family and a generator into a :class:`Problem`: two visible examples (shown in
the prompt with their outputs) and ``num_hidden`` hidden tests (edge cases drawn from the family's list,
then random inputs). Expected outputs are computed on the host by running the reference solution (our own
code) in-process; they never enter the sandbox.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragen_envs.code.runner import encode

LOWER = string.ascii_lowercase
WORDS = (
    "apple", "river", "stone", "cloud", "tiger", "maple", "orbit", "pixel", "lemon", "quartz", "delta", "ember",
    "forest", "garden", "harbor", "island", "jungle", "kettle", "ladder", "meadow", "needle", "oyster", "pepper",
    "rocket", "saddle", "timber", "velvet", "walnut", "yellow", "zephyr", "anchor", "basket", "candle", "dragon",
    "engine", "falcon", "ginger", "hammer", "igloo", "jacket", "koala", "lantern", "mirror", "nectar", "otter",
    "parrot", "quiver", "raven", "silver", "tundra", "umbra", "violet", "wizard", "xenon", "yonder", "zebra",
)  # fmt: skip


class Draw:
    """Helpers over a seeded ``np.random.Generator`` (the only source of randomness of a problem)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        """Uniform integer in [lo, hi]."""
        return int(self.rng.integers(lo, hi + 1))

    def pick(self, options):
        """One item of ``options``, uniformly."""
        return options[int(self.rng.integers(len(options)))]

    def bool(self, p: float = 0.5) -> bool:
        """True with probability ``p``."""
        return bool(self.rng.random() < p)

    def ints(self, n_lo: int, n_hi: int, lo: int, hi: int) -> list[int]:
        """A list of ``n_lo``..``n_hi`` integers, each in [``lo``, ``hi``]."""
        return [self.int(lo, hi) for _ in range(self.int(n_lo, n_hi))]

    def string(self, alphabet: str, lo: int, hi: int) -> str:
        """A string of ``lo``..``hi`` characters drawn from ``alphabet``."""
        return "".join(self.pick(alphabet) for _ in range(self.int(lo, hi)))

    def word(self) -> str:
        """One word of :data:`WORDS`."""
        return self.pick(WORDS)

    def words(self, lo: int, hi: int) -> list[str]:
        """A list of ``lo``..``hi`` words of :data:`WORDS` (repeats allowed)."""
        return [self.word() for _ in range(self.int(lo, hi))]

    def shuffled(self, items: list) -> list:
        """A shuffled copy of ``items``."""
        items = list(items)
        order = self.rng.permutation(len(items))
        return [items[int(i)] for i in order]


@dataclass(frozen=True)
class Spec:
    """One instance of a family, as the family function writes it."""

    name: str
    params: str
    """The parameter list with annotations, e.g. ``"text: str, k: int"``."""
    returns: str
    doc: str
    body: str
    """The reference solution's body (indented 4 spaces), written for this instance's constants."""
    gen: Callable[[], tuple]
    """Draws one argument tuple."""
    edges: tuple[tuple, ...] = ()
    prelude: str = ""
    """Module-level lines of the reference (imports, helpers)."""

    @property
    def signature(self) -> str:
        """The function's ``def`` line, e.g. ``def add(a: int, b: int) -> int:``."""
        return f"def {self.name}({self.params}) -> {self.returns}:"

    @property
    def reference(self) -> str:
        """The reference solution's source: prelude (if any), signature and body."""
        head = f"{self.prelude.strip()}\n\n\n" if self.prelude.strip() else ""
        return f"{head}{self.signature}\n{self.body.rstrip()}\n"


@dataclass(frozen=True)
class Problem:
    """A concrete problem: what the prompt shows, the tests, and the reference solution."""

    family: str
    name: str
    signature: str
    description: str
    reference: str
    visible: tuple[tuple, ...]
    """Argument tuples of the examples shown in the prompt."""
    visible_expected: tuple[Any, ...]
    hidden: tuple[tuple, ...]
    hidden_expected: tuple[Any, ...] = field(repr=False)
    arg_names: tuple[str, ...] = ()

    @property
    def prompt(self) -> str:
        """The task as the model sees it: the signature, the description and the visible examples."""
        examples = "\n".join(
            f"    {call_text(self.name, args)} == {value!r}"
            for args, value in zip(self.visible, self.visible_expected, strict=True)
        )
        return f"Write a Python function.\n\n{self.signature}\n    {self.description}\n\nExamples:\n{examples}"


def call_text(name: str, args: tuple) -> str:
    """The call as source text, e.g. ``f(1, 'a')`` (arguments by ``repr``)."""
    return f"{name}({', '.join(repr(a) for a in args)})"


FAMILIES: dict[str, Callable[[Draw], Spec]] = {}


def family(name: str):
    """Register a family under ``name``."""

    def register(fn: Callable[[Draw], Spec]) -> Callable[[Draw], Spec]:
        if name in FAMILIES:
            raise ValueError(f"duplicate problem family {name!r}")
        FAMILIES[name] = fn
        return fn

    return register


def run_reference(reference: str, name: str, args_list: list[tuple]) -> list[Any]:
    """Outputs of our reference solution on each argument tuple (trusted code, run in-process)."""
    namespace: dict[str, Any] = {"__name__": "reference"}
    exec(compile(reference, f"<reference {name}>", "exec"), namespace)  # noqa: S102 - our own source
    fn = namespace[name]
    return [fn(*_copy(args)) for args in args_list]


def _copy(args: tuple) -> tuple:
    import copy

    return copy.deepcopy(args)


def make_problem(family_name: str, rng: np.random.Generator, num_hidden: int = 8, num_visible: int = 2) -> Problem:
    """Instance ``family_name`` from ``rng``: the spec, 1-2 visible examples and ``num_hidden`` hidden tests."""
    spec = FAMILIES[family_name](Draw(rng))
    draw = Draw(rng)
    visible = _distinct([spec.gen() for _ in range(num_visible * 4)], num_visible)
    edges = list(spec.edges)
    hidden: list[tuple] = []
    if edges:
        take = min(len(edges), max(1, num_hidden // 3))
        hidden += [edges[int(i)] for i in sorted(rng.choice(len(edges), size=take, replace=False))]
    tries = 0
    while len(hidden) < num_hidden and tries < num_hidden * 20:
        tries += 1
        args = spec.gen()
        if args not in hidden and args not in visible or tries > num_hidden * 10:
            hidden.append(args)
    hidden = draw.shuffled(hidden)
    outputs = run_reference(spec.reference, spec.name, visible + hidden)
    for value in outputs:
        encode(value)  # our reference must only return encodable values
    return Problem(
        family=family_name,
        name=spec.name,
        signature=spec.signature,
        description=spec.doc,
        reference=spec.reference,
        visible=tuple(visible),
        visible_expected=tuple(outputs[: len(visible)]),
        hidden=tuple(hidden),
        hidden_expected=tuple(outputs[len(visible) :]),
        arg_names=_arg_names(spec.signature),
    )


def _arg_names(signature: str) -> tuple[str, ...]:
    import ast

    tree = ast.parse(signature + "\n    pass\n")
    return tuple(a.arg for a in tree.body[0].args.args)


def _distinct(items: list[tuple], count: int) -> list[tuple]:
    out: list[tuple] = []
    for item in items:
        if item not in out:
            out.append(item)
        if len(out) == count:
            break
    return out


def _load_families() -> None:
    from ragen_envs.code import families_lists, families_math, families_misc, families_text  # noqa: F401


_load_families()
