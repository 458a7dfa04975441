"""The generated knowledge base of SearchQA: a seeded world of typed entities, rendered as encyclopedia passages.

Six entity kinds with typed attributes and functional relations (every entity has exactly one value of each
of its facts, so a phrase such as "the director of The Silent Harbor" names one entity)::

    person      born (year), occupation; born_in -> city, studied_at -> university, works_for -> company
    city        founded (year), population; in_country -> country
    country     language; capital -> city (one of its own cities)
    company     founded (year), industry, employees; headquartered_in -> city, founded_by -> person
    university  founded (year), students; located_in -> city
    film        released (year), genre, runtime; directed_by -> person, produced_by -> company

Entity ``i`` has passage ``i``: its name is the passage title, and the text states every fact once, in one of
a few phrasings drawn per entity. Distractors come from sharing: with ``distractors`` = d, each first name,
surname, city and company stem and film-title word is shared by about 1 + d entities ("Maren Holt", "Maren
Voss", "Tobin Holt"; "Orvane Systems", "Orvane Pictures"; "University of Kastrup" beside the city Kastrup),
and attribute values repeat (years, occupations), so a search for a name also returns look-alikes. Names
(passage titles) are unique.

The world is a pure function of ``(seed, size, distractors)``; draws are vectorised per kind, so 100k
entities take seconds.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ragen_envs.core import check_range
from ragen_envs.searchqa.names import draw_names

KB_VERSION = 1
"""Bump when generation changes: it keys the cached search index (and changes every question)."""

KINDS = ("country", "city", "university", "company", "person", "film")
RELATIONS: dict[str, dict[str, str]] = {
    "person": {"born_in": "city", "studied_at": "university", "works_for": "company"},
    "city": {"in_country": "country"},
    "country": {"capital": "city"},
    "company": {"headquartered_in": "city", "founded_by": "person"},
    "university": {"located_in": "city"},
    "film": {"directed_by": "person", "produced_by": "company"},
}
"""Each kind's relations: fact name -> the kind of entity it points to."""
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "person": ("born", "occupation"),
    "city": ("founded", "population"),
    "country": ("language",),
    "company": ("founded", "industry", "employees"),
    "university": ("founded", "students"),
    "film": ("released", "genre", "runtime"),
}
COUNTS = frozenset({"population", "employees", "students"})
"""Attributes written with thousands separators (``1,211,000``)."""

OCCUPATIONS = (
    "architect", "painter", "physicist", "novelist", "composer", "surgeon", "engineer", "historian",
    "economist", "photographer", "chemist", "poet", "sculptor", "journalist", "diplomat", "astronomer",
    "botanist", "lawyer", "cartographer", "violinist", "chef", "geologist", "playwright", "mathematician",
)  # fmt: skip
INDUSTRIES = (
    "shipping", "software", "textile", "mining", "publishing", "brewing", "aerospace", "insurance",
    "railway", "pharmaceutical", "furniture", "telecommunications", "steel", "film", "food", "energy",
)  # fmt: skip
GENRES = ("drama", "comedy", "thriller", "western", "musical", "documentary", "horror", "romance", "war", "mystery")
_FILLER = {
    "person": ("{s} is known for a long public career.", "{s} has received several national awards.", ""),
    "city": ("{s} is known for its old market square.", "{s} lies on a wide river delta.", ""),
    "country": ("{s} is divided into several provinces.", "{s} has a long coastline.", ""),
    "company": ("{s} is listed on the national stock exchange.", "{s} has offices in several countries.", ""),
    "university": ("{s} is known for its library.", "{s} offers degrees in the arts and sciences.", ""),
    "film": ("{s} was well received by critics.", "{s} was shot on location.", ""),
}


@dataclass(frozen=True)
class Entity:
    """One entity (and the passage of the same index): its kind, its unique name and its facts."""

    index: int
    kind: str
    name: str
    facts: dict[str, int | str]
    """Fact name -> value: an int or a word for attributes, the target entity's index for relations."""

    @property
    def short_name(self) -> str:
        """How passages refer back to the entity after the first mention (a person's surname)."""
        return self.name.split()[-1] if self.kind == "person" else self.name


SEED_RANGE = (0, 2**31 - 1)
SIZE_RANGE = (200, 2_000_000)
DISTRACTORS_RANGE = (0.0, 10.0)


@dataclass(frozen=True)
class KBConfig:
    """Which world: the seed, about how many entities (= passages), and how densely names are shared."""

    seed: int = 0
    size: int = 5000
    distractors: float = 1.0

    def __post_init__(self) -> None:
        check_range("kb_seed", self.seed, *SEED_RANGE, integer=True)
        check_range("kb_size", self.size, *SIZE_RANGE, integer=True)
        check_range("distractors", self.distractors, *DISTRACTORS_RANGE)
        object.__setattr__(self, "distractors", float(self.distractors))  # 1 and 1.0 are one world, one index


class KnowledgeBase:
    """A generated world: ``entities[i]`` is the subject of passage ``i`` (title ``titles[i]``, text ``texts[i]``)."""

    def __init__(self, config: KBConfig, entities: list[Entity], texts: list[str]) -> None:
        self.config = config
        self.entities = entities
        self.titles = [entity.name for entity in entities]
        self.texts = texts
        self.by_kind: dict[str, np.ndarray] = {
            kind: np.array([e.index for e in entities if e.kind == kind], dtype=np.int64) for kind in KINDS
        }
        self.by_title = {title: i for i, title in enumerate(self.titles)}
        self.index_key = f"searchqa-kb{KB_VERSION}-seed{config.seed}-n{config.size}-d{config.distractors:g}"
        self.index_meta = {"kb": dict(config.__dict__), "content_sha256": content_hash(self.titles, texts)}

    def __len__(self) -> int:
        return len(self.entities)

    def __reduce__(self):
        # The world is a pure function of its config: pickles (an env's, a worker's) carry only the config.
        return (knowledge_base, (self.config,))


def content_hash(titles: list[str], texts: list[str]) -> str:
    """sha256 of a collection's titles and texts: a cached index is reused only for the very same passages."""
    digest = hashlib.sha256()
    for title, text in zip(titles, texts, strict=True):
        digest.update(f"{title}\x00{text}\x00".encode())
    return digest.hexdigest()


@lru_cache(maxsize=8)
def knowledge_base(config: KBConfig) -> KnowledgeBase:
    """The world of ``config``, built once per process."""
    return generate(config)


def _counts(size: int) -> dict[str, int]:
    countries = max(6, size // 300)
    cities = max(4 * countries, size // 12)
    universities = max(8, size // 25)
    companies = max(12, size // 9)
    films = int(size * 0.3)
    return {
        "country": countries,
        "city": cities,
        "university": universities,
        "company": companies,
        "person": size - countries - cities - universities - companies - films,
        "film": films,
    }


def _years(rng: np.random.Generator, n: int, low: int, high: int) -> np.ndarray:
    return rng.integers(low, high + 1, size=n)


def generate(config: KBConfig) -> KnowledgeBase:
    """Draw the world of ``config`` (see the module docstring)."""
    rng = np.random.default_rng([KB_VERSION, config.seed, config.size, int(config.distractors * 1000)])
    counts = _counts(config.size)
    names = draw_names(rng, counts, config.distractors)
    start: dict[str, int] = {}
    at = 0
    for kind in KINDS:
        start[kind] = at
        at += counts[kind]

    def pick(kind: str, n: int) -> np.ndarray:  # n uniform targets among the entities of ``kind``
        return start[kind] + rng.integers(counts[kind], size=n)

    facts: dict[str, list[dict[str, int | str]]] = {}
    n = counts["country"]
    languages = [s[: max(3, len(s) - 2)] + ("ish", "ian", "ese")[i % 3] for i, s in enumerate(names["country"])]
    # every country's capital is one of its own cities: cities are dealt to countries first
    city_country = np.concatenate([np.arange(n), rng.integers(n, size=counts["city"] - n)])
    rng.shuffle(city_country)
    capital = [start["city"] + int(np.flatnonzero(city_country == c)[0]) for c in range(n)]
    facts["country"] = [{"language": languages[i], "capital": capital[i]} for i in range(n)]
    n = counts["city"]
    founded, population = _years(rng, n, 1000, 1900), rng.integers(20, 3000, size=n) * 1000
    facts["city"] = [
        {"founded": int(founded[i]), "population": int(population[i]), "in_country": start["country"] + int(city_country[i])}
        for i in range(n)
    ]  # fmt: skip
    n = counts["university"]
    founded, students, city = _years(rng, n, 1400, 1990), rng.integers(8, 600, size=n) * 100, pick("city", n)
    facts["university"] = [
        {"founded": int(founded[i]), "students": int(students[i]), "located_in": int(city[i])} for i in range(n)
    ]
    n = counts["company"]
    founded, industry, employees = (
        _years(rng, n, 1850, 2015),
        rng.integers(len(INDUSTRIES), size=n),
        rng.integers(5, 900, size=n) * 50,
    )
    city, founder = pick("city", n), pick("person", n)
    facts["company"] = [
        {"founded": int(founded[i]), "industry": INDUSTRIES[industry[i]], "employees": int(employees[i]),
         "headquartered_in": int(city[i]), "founded_by": int(founder[i])}
        for i in range(n)
    ]  # fmt: skip
    n = counts["person"]
    born, occupation = _years(rng, n, 1900, 2000), rng.integers(len(OCCUPATIONS), size=n)
    city, school, employer = pick("city", n), pick("university", n), pick("company", n)
    facts["person"] = [
        {"born": int(born[i]), "occupation": OCCUPATIONS[occupation[i]], "born_in": int(city[i]),
         "studied_at": int(school[i]), "works_for": int(employer[i])}
        for i in range(n)
    ]  # fmt: skip
    n = counts["film"]
    released, genre, runtime = (
        _years(rng, n, 1930, 2023),
        rng.integers(len(GENRES), size=n),
        rng.integers(75, 200, size=n),
    )
    director, studio = pick("person", n), pick("company", n)
    facts["film"] = [
        {"released": int(released[i]), "genre": GENRES[genre[i]], "runtime": int(runtime[i]),
         "directed_by": int(director[i]), "produced_by": int(studio[i])}
        for i in range(n)
    ]  # fmt: skip

    entities, seen = [], set()
    for kind in KINDS:
        for i in range(counts[kind]):
            name = names[kind][i]
            if name in seen:  # titles are unique: a rare cross-kind clash is told apart by its kind
                name = f"{name} ({kind})"
            seen.add(name)
            entities.append(Entity(start[kind] + i, kind, name, facts[kind][i]))
    styles = rng.integers(0, 6, size=(len(entities), 2))
    texts = [render_passage(e, entities, int(styles[e.index, 0]), int(styles[e.index, 1])) for e in entities]
    return KnowledgeBase(config, entities, texts)


def _a(word: str) -> str:
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


def render_value(fact: str, value: int | str) -> str:
    """An attribute as passages write it: counts with thousands separators, years and words as they are."""
    return f"{value:,}" if fact in COUNTS else str(value)


def render_passage(entity: Entity, entities: list[Entity], style: int, filler: int) -> str:
    """The encyclopedia passage of ``entity``: every fact once, in phrasing ``style``, plus an optional filler."""
    f, name, short = entity.facts, entity.name, entity.short_name
    v = {fact: render_value(fact, f[fact]) for fact in ATTRIBUTES[entity.kind]}

    def ref(fact: str) -> str:
        return entities[int(f[fact])].name

    if entity.kind == "person":
        opening = (
            f"{name} (born {f['born']}) is {_a(f['occupation'])}.",
            f"{name} is {_a(f['occupation'])} born in {f['born']}.",
        )[style % 2]
        middle = (
            f" {short} was born in {ref('born_in')}.",
            f" {short}'s birthplace is {ref('born_in')}.",
            f" {short} was born in the city of {ref('born_in')}.",
        )[style % 3]
        end = (
            f" {short} studied at {ref('studied_at')} and works for {ref('works_for')}.",
            f" After studying at {ref('studied_at')}, {short} joined {ref('works_for')}.",
        )[(style // 2) % 2]
        text = opening + middle + end
    elif entity.kind == "city":
        text = (
            f"{name} is a city in {ref('in_country')}. It was founded in {f['founded']} and has a population of "
            f"{v['population']}.",
            f"{name}, founded in {f['founded']}, is a city in {ref('in_country')} with a population of "
            f"{v['population']}.",
        )[style % 2]
    elif entity.kind == "country":
        text = (
            f"{name} is a country whose capital is {ref('capital')}. Its official language is {f['language']}.",
            f"{name} is a country. Its capital is {ref('capital')} and its official language is {f['language']}.",
        )[style % 2]
    elif entity.kind == "company":
        text = (
            f"{name} is {_a(f['industry'])} company founded in {f['founded']} by {ref('founded_by')}. It is "
            f"headquartered in {ref('headquartered_in')} and employs {v['employees']} people.",
            f"{name} is {_a(f['industry'])} company headquartered in {ref('headquartered_in')}. It was founded by "
            f"{ref('founded_by')} in {f['founded']} and employs {v['employees']} people.",
        )[style % 2]
    elif entity.kind == "university":
        text = (
            f"{name} is a university in {ref('located_in')}, founded in {f['founded']}. It has "
            f"{v['students']} students.",
            f"{name} was founded in {f['founded']}. The university is located in {ref('located_in')} and has "
            f"{v['students']} students.",
        )[style % 2]
    else:
        text = (
            f"{name} is a {f['released']} {f['genre']} film directed by {ref('directed_by')} and produced by "
            f"{ref('produced_by')}. It runs for {f['runtime']} minutes.",
            f"{name} is {_a(f['genre'])} film released in {f['released']}. It was directed by {ref('directed_by')}, "
            f"produced by {ref('produced_by')}, and runs for {f['runtime']} minutes.",
        )[style % 2]
    extra = _FILLER[entity.kind][filler % 3]
    return f"{text} {extra.format(s=short)}" if extra else text
