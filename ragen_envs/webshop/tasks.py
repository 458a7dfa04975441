"""Shopping tasks: per task id, a WebShop-style instruction with a ground-truth product.

A task asks for a product *type* with some of the ground-truth product's attributes, one value of each of
its option groups, and (usually) a price ceiling, drawn as WebShop draws it: from the next four multiples
of $10 above the price, the larger of two picks. Other products of the same type with the same attributes,
options and a lower price satisfy it just as well; the reward does not care which one is bought.

A task is a pure function of ``(tier, task_id)``; ``task_id_for_seed(seed)`` is the id that
``env.reset(seed=seed)`` plays, so a browser user who opens ``/new?seed=7`` gets the env's seed-7 task.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ragen_envs.webshop.catalogue import Catalogue, Product

TASK_ID_HIGH = 2**31
NO_PRICE_CEILING = 1_000_000.0
PRICE_STEPS = tuple(10.0 * i for i in range(1, 100))
_OPENERS = (
    "i need", "i am looking for", "find me", "i want to buy", "i'd like", "please get me", "can you find me",
    "show me", "i'm shopping for", "get me",
)  # fmt: skip


@dataclass(frozen=True)
class Task:
    """What to buy. ``product`` is one product that earns reward 1; others may too."""

    task_id: int
    instruction: str
    product: Product
    attributes: tuple[str, ...]
    options: tuple[tuple[str, str], ...]
    """(option group, wanted value) for every option group of the product."""
    price_upper: float

    @property
    def query(self) -> str:
        """The search query that finds the target product."""
        return self.product.query

    @property
    def option_values(self) -> tuple[str, ...]:
        """The wanted option values, in option-group order."""
        return tuple(value for _, value in self.options)


def task_id_for_seed(seed: int) -> int:
    """The task id ``env.reset(seed=seed)`` draws first (Gymnasium seeds ``np_random`` as ``default_rng``)."""
    return draw_task_id(np.random.default_rng(seed))


def draw_task_id(rng: np.random.Generator) -> int:
    """A task id in [0, 2**31) drawn from ``rng``."""
    return int(rng.integers(TASK_ID_HIGH))


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def make_task(catalogue: Catalogue, task_id: int) -> Task:
    """Task ``task_id`` over ``catalogue`` (a pure function of the tier and the id)."""
    u = np.random.default_rng([0x7A5C, task_id]).random(32).tolist()
    product = catalogue[int(u[0] * len(catalogue))]
    n_attrs = len(product.attributes)
    count = min(n_attrs, 1 + int(u[1] * 3))
    picked = sorted(sorted(range(n_attrs), key=lambda j: u[8 + j])[:count])  # u[8:20]: one key per attribute
    attributes = tuple(product.attributes[j] for j in picked)
    options = tuple((name, values[int(u[2 + k] * len(values))]) for k, (name, values) in enumerate(product.options))
    steps = [p for p in PRICE_STEPS if p > product.price][:4]
    if len(steps) >= 2:
        two = sorted(range(len(steps)), key=lambda j: u[20 + j])[:2]  # u[20:24]
        price_upper = float(max(steps[j] for j in two))
    else:
        price_upper = NO_PRICE_CEILING
    instruction = _instruction(u[24:30], product, attributes, options, price_upper)
    return Task(task_id, instruction, product, attributes, options, price_upper)


def _instruction(u: list[float], product: Product, attributes, options, price_upper: float) -> str:
    opener = _OPENERS[int(u[0] * len(_OPENERS))]
    lead, *rest = attributes
    audience = f" for {product.audience}" if product.audience else ""
    shape = int(u[1] * 3)
    if shape == 0:
        wanted = f"{_article(lead)} {lead} {product.query}{audience}"
        extra = rest
    elif shape == 1:
        wanted = f"{_article(product.query)} {product.query}{audience} that is {lead}"
        extra = rest
    else:
        wanted = f"{_article(product.query)} {product.query}{audience}"
        extra = list(attributes)
    text = f"{opener} {wanted}"
    if extra:
        text += ", " + " and ".join(extra) if len(extra) <= 2 else ", " + ", ".join(extra)
    if options:
        text += " with " + ", and ".join(f"{name}: {value}" for name, value in options)
    if price_upper < NO_PRICE_CEILING:
        text += f", and price lower than {price_upper:.2f} dollars"
    return text
