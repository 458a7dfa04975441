"""Names for the generated world: invented words, and English words for film titles, shared on purpose.

Sharing is what makes searches return look-alikes: with ``distractors`` = d, each first name, surname and company
stem is drawn from a pool sized so that about 1 + d entities use it; film titles are built from a few dozen English
words (and city names); some universities are named after cities. Full names are distinct (pairs are drawn without
replacement). Everything is drawn from the generator passed in, vectorised, in a fixed order.
"""

from __future__ import annotations

import math

import numpy as np

COMPANY_SUFFIXES = (
    "Systems", "Pictures", "Holdings", "Works", "Labs", "Foods", "Motors", "Records", "Textiles", "Mining",
    "Press", "Lines", "Energy", "Brewing", "Studios", "Industries",
)  # fmt: skip
FILM_ADJECTIVES = (
    "Silent", "Red", "Last", "Golden", "Broken", "Hidden", "Northern", "Winter", "Paper", "Iron", "Lonely",
    "Crimson", "Distant", "Burning", "Quiet", "Wild", "Glass", "Hollow", "Bright", "Dark", "Lost", "Endless",
    "Secret", "Frozen", "Falling", "Velvet", "Silver", "Bitter", "Sacred", "Restless",
)  # fmt: skip
FILM_NOUNS = (
    "Harbor", "River", "Garden", "Empire", "Letter", "Mountain", "Station", "Orchard", "Lantern", "Voyage",
    "Witness", "Kingdom", "Shadow", "Bridge", "Tide", "Forest", "Promise", "Island", "Horizon", "Crown",
    "Mirror", "Storm", "Valley", "Signal", "Harvest", "Frontier", "Carnival", "Lighthouse", "Desert", "Echo",
    "Season", "Circus", "Summit", "Engine", "Compass", "Meadow", "Citadel", "Canyon", "Prophet", "Ballad",
)  # fmt: skip
_ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "r", "s", "st", "t",
           "tr", "v", "w", "z", "th", "sh", "j")  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "i", "o", "ai", "ou", "y")
_CODAS = ("", "", "", "n", "r", "l", "s", "th", "m", "nd", "rk", "x")


def pseudowords(rng: np.random.Generator, n: int, taken: set[str]) -> list[str]:
    """``n`` distinct capitalised invented words of 2-3 syllables, none in ``taken`` (which they join)."""
    out: list[str] = []
    while len(out) < n:
        m = 2 * (n - len(out)) + 16
        syllables = 2 + (rng.random(m) < 0.25)
        onsets = rng.integers(len(_ONSETS), size=(m, 3))
        vowels = rng.integers(len(_VOWELS), size=(m, 3))
        codas = rng.integers(len(_CODAS), size=(m, 3))
        for k in range(m):
            word = "".join(
                _ONSETS[onsets[k, j]] + _VOWELS[vowels[k, j]] + (_CODAS[codas[k, j]] if j == syllables[k] - 1 else "")
                for j in range(syllables[k])
            ).capitalize()
            if len(word) >= 4 and word not in taken:
                taken.add(word)
                out.append(word)
                if len(out) == n:
                    break
    return out


def _pool(n: int, distractors: float) -> int:
    """How many distinct words ``n`` entities share so that each word is used ~``1 + distractors`` times."""
    return max(2, math.ceil(n / (1.0 + distractors)))


def _distinct_pairs(rng: np.random.Generator, n: int, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` distinct (row, col) cells of a ``rows`` x ``cols`` grid (which must hold at least ``n``)."""
    cells = rng.choice(rows * cols, size=n, replace=False)
    return cells // cols, cells % cols


def draw_names(rng: np.random.Generator, counts: dict[str, int], d: float) -> dict[str, list[str]]:
    """The names of ``counts[kind]`` entities of each kind, each name word shared by about ``1 + d`` of them."""
    taken: set[str] = set()
    names: dict[str, list[str]] = {}
    # countries: invented words with a country-like ending
    stems = pseudowords(rng, counts["country"], taken)
    endings = ("ia", "land", "ora", "stan", "mark")
    names["country"] = [
        s + endings[int(e)] for s, e in zip(stems, rng.integers(len(endings), size=len(stems)), strict=True)
    ]
    names["city"] = pseudowords(rng, counts["city"], taken)
    # people: a first name and a surname, each from a pool shared by ~1 + d people; full names distinct
    n = counts["person"]
    pool = max(_pool(n, d), math.isqrt(2 * n) + 1)
    first, last = pseudowords(rng, pool, taken), pseudowords(rng, pool, taken)
    rows, cols = _distinct_pairs(rng, n, pool, pool)
    names["person"] = [f"{first[r]} {last[c]}" for r, c in zip(rows, cols, strict=True)]
    # companies: a stem shared by ~1 + d companies and a suffix
    n = counts["company"]
    stems = pseudowords(rng, max(_pool(n, d), n // len(COMPANY_SUFFIXES) + 1), taken)
    rows, cols = _distinct_pairs(rng, n, len(stems), len(COMPANY_SUFFIXES))
    names["company"] = [f"{stems[r]} {COMPANY_SUFFIXES[c]}" for r, c in zip(rows, cols, strict=True)]
    # universities: named after a city (a distractor for the city) or an invented founder's name
    n = counts["university"]
    cities, shapes = names["city"], ("University of {}", "{} University", "{} Institute of Technology", "{} College")
    stems = cities[: _pool(n, d)] + pseudowords(rng, n, taken)
    rows, cols = _distinct_pairs(rng, n, len(stems), len(shapes))
    names["university"] = [shapes[c].format(stems[r]) for r, c in zip(rows, cols, strict=True)]
    # films: English title words (shared by construction), half "The Silent Harbor", half "The Harbor of
    # Kastrup"; numbered sequels of earlier titles once the shapes run out
    n = counts["film"]
    adjectives, nouns = FILM_ADJECTIVES, FILM_NOUNS
    plain = len(adjectives) * len(nouns) * 2
    placed = len(nouns) * len(cities) * 2
    titles = []
    for cell in rng.choice(plain, size=min(n // 2, plain), replace=False):
        a, rest = divmod(int(cell), len(nouns) * 2)
        noun, shape = divmod(rest, 2)
        titles.append(("The {} {}", "{} {}")[shape].format(adjectives[a], nouns[noun]))
    for cell in rng.choice(placed, size=min(n - len(titles), placed), replace=False):
        noun, rest = divmod(int(cell), len(cities) * 2)
        city, shape = divmod(rest, 2)
        titles.append(("The {} of {}", "{} in {}")[shape].format(nouns[noun], cities[city]))
    base = len(titles)
    for k in range(n - base):
        titles.append(f"{titles[k % base]} {k // base + 2}")
    names["film"] = titles
    return names
