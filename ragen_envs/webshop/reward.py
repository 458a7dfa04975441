"""WebShop's purchase reward (Yao et al. 2022, ``web_agent_site/engine/goal.py``), without spaCy or thefuzz.

    reward = r_type × (attribute matches + option matches + [price ≤ ceiling]) / (#attributes + #options + 1)

- **type** ``r_type``: 1 when the bought product's type words cover the wanted type's words enough, or the
  type (WebShop's ``query``) is the same, or two category levels agree; 0.5 when none of these holds but
  some type words overlap; 0.1 when under 10 % of them overlap; 0 when none do. WebShop finds type words
  with spaCy's noun tagger; our types are short noun phrases, so all their words count.
- **attributes**: a wanted attribute matches when it *token-set matches* one of the product's attributes
  (one word set contains the other: the case where thefuzz's ``token_set_ratio`` is 100; WebShop's
  threshold is > 85) or appears verbatim in the title, features or description.
- **options**: every chosen option counts when it equals a wanted value (``size`` exactly, others by token
  set), or, as in WebShop, when the chosen value appears verbatim in the title, features or description.
- **price**: 1 when the price is at most the ceiling.

Success is reward exactly 1 (RAGEN counts success only at reward 1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragen_envs.webshop.catalogue import Product
from ragen_envs.webshop.tasks import Task

EXACT_MATCH_OPTIONS = ("size",)
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class RewardBreakdown:
    """The reward and its parts (WebShop's ``verbose`` info)."""

    reward: float
    r_type: float
    attribute_matches: int
    option_matches: int
    price_ok: bool
    n_attributes: int
    n_options: int
    title_score: float

    @property
    def success(self) -> bool:
        """Whether the purchase earned the full reward 1."""
        return self.reward == 1.0

    def as_dict(self) -> dict:
        """The breakdown as a plain dict of its fields."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def token_set_match(a: str, b: str) -> bool:
    """True when the word set of one string contains the other's (both non-empty)."""
    wa, wb = _words(a), _words(b)
    return bool(wa) and bool(wb) and (wa <= wb or wb <= wa)


def type_reward(product: Product, task: Task) -> tuple[float, float]:
    """(r_type, title_score) as WebShop's ``get_type_reward`` computes them."""
    query_match = product.query == task.query
    category_match = len(set(product.product_category) & set(task.product.product_category)) >= 2
    wanted = _words(task.query)
    title_score = len(wanted & _words(product.title)) / len(wanted) if wanted else 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type, title_score


def _in_text(value: str, product: Product) -> bool:
    return (
        value in product.title.lower()
        or value in " ".join(product.bullets).lower()
        or value in product.description.lower()
    )


def purchase_reward(product: Product, task: Task, chosen: dict[str, str]) -> RewardBreakdown:
    """The reward for buying ``product`` with the ``chosen`` options (group → value) for ``task``."""
    r_type, title_score = type_reward(product, task)
    attribute_matches = sum(
        1
        for wanted in task.attributes
        if any(token_set_match(have, wanted) for have in product.attributes) or _in_text(wanted, product)
    )
    goal_values = task.option_values
    option_matches = 0
    for group, value in chosen.items():
        if group.lower() in EXACT_MATCH_OPTIONS:
            matched = value in goal_values
        else:
            matched = any(token_set_match(goal, value) for goal in goal_values)
        if matched or _in_text(value, product):
            option_matches += 1
    # WebShop counts every chosen option, so a product with more option groups than the goal could score
    # above 1; we cap at the number of wanted options.
    option_matches = min(option_matches, len(task.options))
    price_ok = product.price <= task.price_upper
    n_attributes, n_options = len(task.attributes), len(task.options)
    numerator = attribute_matches + option_matches + int(price_ok)
    denominator = n_attributes + n_options + 1
    # Exactly 1.0 when everything matches: the division is of equal integers and r_type is 1.0.
    reward = r_type * numerator / denominator
    return RewardBreakdown(
        reward, r_type, attribute_matches, option_matches, price_ok, n_attributes, n_options, title_score
    )
