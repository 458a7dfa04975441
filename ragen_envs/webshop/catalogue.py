"""The product catalogue: generated deterministically by code, product ``i`` a pure function of ``i``.

Tiers are prefixes of one infinite sequence (``1k`` ⊂ ``10k`` ⊂ ``100k``), as WebShop's ``products[:n]`` are.
Each product is drawn from its own ``np.random.default_rng([CATALOGUE_SEED, i])``, so any product can be
built on demand without building the others, in any process, in any order.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ragen_envs.webshop.catalogue_data import BRAND_HEADS, BRAND_TAILS, CATEGORIES, FLOURISHES, CategorySpec

CATALOGUE_VERSION = 2
"""Bump when generated products change: it keys the on-disk search index."""
CATALOGUE_SEED = 0x5E0B5
TIERS = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
_ASIN_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_ASIN_MULTIPLIER = 2_654_435_761  # odd and not a multiple of 3: a bijection on [0, 36**8)
_ASIN_OFFSET = 1_234_567_891
_UNIFORMS = 96  # uniform draws per product; each field below uses fixed slots, so fields are independent


@dataclass(frozen=True)
class Product:
    """One product, with the fields WebShop's pages and reward read."""

    index: int
    asin: str
    title: str
    brand: str
    category: str
    product_category: tuple[str, ...]
    query: str
    """The product type ("hiking jacket"): WebShop's ``query`` field, used by the type reward."""
    audience: str
    price: float
    rating: str
    description: str
    bullets: tuple[str, ...]
    attributes: tuple[str, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    """(option group, its values): e.g. ("size", ("small", "medium")), ("color", ("navy", "black"))."""

    @property
    def option_dict(self) -> dict[str, tuple[str, ...]]:
        """The product's options as ``{group: values}``."""
        return dict(self.options)

    def search_text(self) -> str:
        """What the search index sees: title, type, attributes, features, description and option values."""
        option_words = " ".join(value for _, values in self.options for value in values)
        return " ".join(
            (self.title, self.query, " ".join(self.attributes), " ".join(self.bullets), self.description, option_words)
        )


def check_tier(tier: str) -> int:
    """The number of products of ``tier``; a ``ValueError`` naming the allowed tiers otherwise."""
    if tier not in TIERS:
        import difflib

        close = difflib.get_close_matches(str(tier), TIERS, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"tier must be one of {tuple(TIERS)}, got {tier!r}.{hint}")
    return TIERS[tier]


def asin_for(index: int) -> str:
    """A WebShop-looking ASIN ("B0" + 8 characters), unique per index below 36**8."""
    code = (index * _ASIN_MULTIPLIER + _ASIN_OFFSET) % 36**8
    chars = []
    for _ in range(8):
        code, digit = divmod(code, 36)
        chars.append(_ASIN_ALPHABET[digit])
    return "B0" + "".join(reversed(chars))


def _pick(seq, u: float):
    return seq[min(int(u * len(seq)), len(seq) - 1)]


def _sample(seq, k: int, keys: list[float]) -> tuple:
    """``k`` distinct items of ``seq`` (those with the smallest ``keys``), in the order they appear in ``seq``."""
    chosen = sorted(sorted(range(len(seq)), key=keys.__getitem__)[:k])
    return tuple(seq[i] for i in chosen)


def _brand(u1: float, u2: float) -> str:
    return (_pick(BRAND_HEADS, u1) + _pick(BRAND_TAILS, u2)).capitalize()


@functools.lru_cache(maxsize=4096)
def _titled(words: str) -> str:
    return " ".join(w if any(c.isdigit() for c in w) else w[:1].upper() + w[1:] for w in words.split())


def _price(spec: CategorySpec, u: float) -> float:
    low, high = spec.price
    dollars = math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
    cents = max(int(dollars) * 100 + (99 if u * 1000 % 3 < 2 else 49), 199)
    return cents / 100


def _title(spec, brand, kind, audience, attrs, material, flourish, model, u) -> str:
    """One of several title shapes, so that words sit in different places from product to product."""
    for_whom = f" for {audience.capitalize()}" if audience else ""
    a0 = _titled(attrs[0])
    a1 = _titled(attrs[1]) if len(attrs) > 1 else _titled(material)
    shape = int(u * 6)
    if shape == 0:
        return f"{brand} {_titled(kind)}{for_whom} - {a0}, {a1}, {_titled(material)}"
    if shape == 1:
        return f"{brand} {_titled(flourish)} {a0} {_titled(kind)}{for_whom}, {a1} ({model})"
    if shape == 2:
        return f"{_titled(kind)}{for_whom} by {brand} | {a0} {_titled(material)} {_titled(kind.split()[-1])} with {a1}"
    if shape == 3:
        return f"{brand} {model} {_titled(material)} {_titled(kind)} - {a0} and {a1}{for_whom}"
    if shape == 4:
        return f"{_titled(flourish)} {_titled(kind)} {brand}{for_whom}: {a0}, {a1}"
    return f"{brand} {_titled(kind)}, {a0} {_titled(flourish)} Edition{for_whom}"


@functools.lru_cache(maxsize=1 << 17)
def make_product(index: int) -> Product:
    """Product number ``index`` of the catalogue (a pure function of ``index``)."""
    rng = np.random.default_rng([CATALOGUE_SEED, index])
    u = rng.random(_UNIFORMS).tolist()
    spec = _pick(CATEGORIES, u[0])
    kind = _pick(spec.types, u[1])
    audience = _pick(spec.audiences, u[2]) if spec.audiences else ""
    brand = _brand(u[3], u[4])
    attrs = _sample(spec.attributes, 2 + int(u[5] * 3), u[32:44])
    # Shuffle the chosen attributes so the title does not always lead with the pool's first entries.
    attrs = tuple(attrs[j] for j in sorted(range(len(attrs)), key=lambda j: u[44 + j]))
    material = _pick(spec.materials, u[6])
    flourish = _pick(FLOURISHES, u[7])
    model = f"{chr(65 + int(u[8] * 26))}{chr(65 + int(u[9] * 26))}-{100 + int(u[10] * 900)}"
    options = []
    for slot, (name, pool) in enumerate(spec.options):
        count = 2 + int(u[11 + slot] * min(5, len(pool) - 1))
        options.append((name, _sample(pool, count, u[52 + 20 * slot : 72 + 20 * slot])))
    use = _pick(spec.uses, u[14])
    second_use = _pick(spec.uses, u[15])
    price = _price(spec, u[16])
    rating = "N.A." if u[17] < 0.08 else f"{2.5 + 2.5 * u[18]:.1f}"
    title = _title(spec, brand, kind, audience, attrs, material, flourish, model, u[19])
    fields = {
        "brand": brand,
        "kind": kind,
        "material": material,
        "use": use,
        "second_use": second_use,
        "flourish": flourish,
        "model": model,
        "who": audience or "people",
        "first": attrs[0],
        "last": attrs[-1],
        "all": ", ".join(attrs),
        "two": " and ".join(attrs[:2]),
        "n_choices": len(options[-1][1]),
        "choice": options[-1][0],
    }
    description = " ".join(
        _pick(templates, u[20 + i]).format_map(fields) for i, templates in enumerate(_DESCRIPTION_TEMPLATES)
    )
    bullets = [f"{attr.upper()}: {_pick(_BULLET_TAILS, u[23 + i])} {use}." for i, attr in enumerate(attrs)]
    bullets.append(f"MATERIAL: {material} chosen for {second_use}.")
    if u[30] < 0.5:
        bullets.append(f"WHAT YOU GET: one {kind} from {brand}, model {model}.")
    return Product(
        index=index,
        asin=asin_for(index),
        title=title,
        brand=brand,
        category=spec.key,
        product_category=spec.path,
        query=kind,
        audience=audience,
        price=price,
        rating=rating,
        description=description,
        bullets=tuple(bullets),
        attributes=attrs,
        options=tuple(options),
    )


_DESCRIPTION_TEMPLATES = (
    (
        "The {brand} {kind} is made from {material} and built for {use}.",
        "Meet the {kind} that {who} reach for first: {material}, {first}, ready for {use}.",
        "Designed by {brand} for {use} and {second_use}, this {kind} pairs {material} with a {first} design.",
        "A {flourish} {kind} in {material}, tested for {use}.",
    ),
    (
        "Features include {all}.",
        "It is {two}, so it keeps up with {second_use}.",
        "Expect {last} performance day after day.",
    ),
    (
        "Available in {n_choices} {choice} choices.",
        "Backed by a 1-year limited warranty.",
        "Model {model}.",
        "Ships in recyclable packaging.",
    ),
)
_BULLET_TAILS = (
    "made to last through",
    "a dependable pick for",
    "thoughtfully designed for",
    "tested and ready for",
    "everything you need for",
    "comfortable and practical for",
)


class Catalogue:
    """The products of one tier, built on demand, with an ASIN lookup."""

    def __init__(self, tier: str) -> None:
        self.tier = tier
        self.size = check_tier(tier)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Product:
        if not 0 <= index < self.size:
            raise IndexError(f"product index {index} outside tier {self.tier} (0..{self.size - 1})")
        return make_product(index)

    def __iter__(self):
        return (make_product(i) for i in range(self.size))

    def by_asin(self, asin: str) -> Product | None:
        """The product with this ASIN (case-insensitive) in this tier, or None."""
        index = index_of_asin(asin)
        return make_product(index) if index is not None and index < self.size else None


def index_of_asin(asin: str) -> int | None:
    """Invert :func:`asin_for`; None for a string that is not one of our ASINs."""
    text = asin.strip().upper()
    if len(text) != 10 or not text.startswith("B0"):
        return None
    code = 0
    for ch in text[2:]:
        digit = _ASIN_ALPHABET.find(ch)
        if digit < 0:
            return None
        code = code * 36 + digit
    index = ((code - _ASIN_OFFSET) * pow(_ASIN_MULTIPLIER, -1, 36**8)) % 36**8
    return index if asin_for(index) == text else None
