"""A reader that answers a generated question from its text and the passages' text alone.

It parses the question back with the templates, looks passages up by exact title, and reads each fact out of
the passage *text* with patterns of its own (not the knowledge base's structured facts, nor the renderer's
templates). The generator keeps a question only when this reader finds the same answer through the same
passages, so every question is answerable from what an agent can read, and a rendering bug (a fact written
wrong, twice, or not at all; an ambiguous phrase) cannot produce a question whose gold answer the text does not
support.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ragen_envs.searchqa.retrieval import Passages
from ragen_envs.searchqa.templates import COMPARISONS, FACT_QUESTIONS, RELATION_PHRASES

_RELATION_CUES = {
    "born_in": (r"born in the city of ", r"birthplace is ", r"was born in (?!\d)"),
    "studied_at": (r"studied at ", r"studying at "),
    "works_for": (r"works for ", r"joined "),
    "in_country": (r"is a city in ",),
    "capital": (r"capital is ",),
    "headquartered_in": (r"headquartered in ",),
    "founded_by": (r"founded (?:in \d{4} )?by ",),
    "located_in": (r"university in ", r"located in "),
    "directed_by": (r"directed by ",),
    "produced_by": (r"produced by ",),
}
_ATTRIBUTE_PATTERNS = {
    "born": r"\(born (\d{4})\)|born in (\d{4})",
    "occupation": r" is an? ([a-z]+)[ .]",
    "founded": r"founded in (\d{4})|founded by .+? in (\d{4})",
    "population": r"population of ([\d,]+\d)",
    "language": r"official language is ([A-Za-z]+)",
    "industry": r" is an? ([a-z]+) company",
    "employees": r"employs ([\d,]+\d) people",
    "students": r"has ([\d,]+\d) students",
    "released": r" is an? (\d{4}) [a-z]+ film|released in (\d{4})",
    "genre": r" is an? (?:\d{4} )?([a-z]+) film",
    "runtime": r"runs for (\d+) minutes",
}
_MAX_TITLE_WORDS = 8


def _pattern(template: str) -> re.Pattern[str]:
    """A template as a regex: each ``{}`` a group (the last greedy, the others not)."""
    parts = [re.escape(part) for part in template.split("{}")]
    groups = ["(.+?)"] * (len(parts) - 2) + ["(.+)"]
    body = "".join(part + group for part, group in zip(parts[:-1], groups, strict=True))
    return re.compile(f"^{body}{parts[-1]}$")


_QUESTIONS = [(fact, _pattern(template)) for fact, template in FACT_QUESTIONS.items()]
_COMPARISONS = [(key, _pattern(template), better) for key, (template, better) in COMPARISONS.items()]
_PHRASES = [(relation, template.split("{}")[0]) for relation, template in RELATION_PHRASES.items()]


class Reader:
    """Reads passages by title; every passage it opens is recorded in :attr:`read`."""

    def __init__(self, titles: Mapping[str, int], texts: Sequence[str]) -> None:
        self.titles = titles
        self.texts = texts
        self.read: list[int] = []

    def open(self, title: str) -> int | None:
        """The passage titled exactly ``title`` (recorded as read), else None."""
        index = self.titles.get(title)
        if index is not None:
            self.read.append(index)
        return index

    def title_at(self, text: str, start: int) -> str | None:
        """The longest passage title that ``text`` spells from ``start`` (a name mentioned in a passage)."""
        words = text[start:].split(" ", _MAX_TITLE_WORDS)
        for n in range(min(len(words), _MAX_TITLE_WORDS), 0, -1):
            candidate = " ".join(words[:n]).rstrip(".,")
            if candidate in self.titles:
                return candidate
        return None

    def fact(self, index: int, fact: str) -> str | None:
        """The value of ``fact`` as passage ``index`` states it (a name for relations), else None."""
        text = self.texts[index]
        if fact in _RELATION_CUES:
            for cue in _RELATION_CUES[fact]:
                match = re.search(cue, text)
                if match:
                    return self.title_at(text, match.end())
            return None
        match = re.search(_ATTRIBUTE_PATTERNS[fact], text)
        return None if match is None else next(group for group in match.groups() if group is not None)

    def resolve(self, phrase: str) -> int | None:
        """The passage a phrase names: a title, or "the <relation> of <phrase>" followed through the passages."""
        if phrase in self.titles:
            return self.open(phrase)
        for relation, prefix in _PHRASES:
            if phrase.startswith(prefix):
                inner = self.resolve(phrase[len(prefix) :])
                target = None if inner is None else self.fact(inner, relation)
                return None if target is None else self.open(target)
        return None


def solve(passages: Passages, question: str) -> tuple[str, tuple[int, ...]] | None:
    """``(answer, passages read)`` for a generated question, from the text alone; None when it cannot answer.

    ``passages`` needs ``titles``, ``texts`` and ``by_title`` (title -> index), as the knowledge base has them.
    """
    reader = Reader(passages.by_title, passages.texts)
    for (_, fact), pattern, better in _COMPARISONS:
        match = pattern.match(question)
        if match is None:
            continue
        found = [reader.resolve(phrase) for phrase in match.groups()]
        if None in found:
            return None
        values = [reader.fact(index, fact) for index in found]
        if None in values:
            return None
        numbers = [int(value.replace(",", "")) for value in values]
        if numbers[0] == numbers[1]:
            return None
        winner = found[numbers.index(better(numbers))]
        return passages.titles[winner], tuple(reader.read)
    for fact, pattern in _QUESTIONS:
        match = pattern.match(question)
        if match is None:
            continue
        index = reader.resolve(match.group(1))
        answer = None if index is None else reader.fact(index, fact)
        return None if answer is None else (answer, tuple(reader.read))
    return None
