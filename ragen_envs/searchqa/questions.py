"""Multi-hop questions over the generated knowledge base, as HotpotQA has them: bridge and comparison.

- **bridge**, 1-4 hops: start at a named entity, follow relations ("the director of The Silent Harbor", "the
  birthplace of the director of …") and ask one fact of the last entity reached ("In what year was the director
  of The Silent Harbor born?"). Every hop is one passage to read: the gold passages are those of the entities on
  the path.
- **comparison**, 2 or 4 hops: which of two entities of one kind has the earlier year or larger population
  ("Who was born earlier, Maren Holt or Tobin Voss?"), each named directly (2 hops) or through one relation
  (4 hops: "…, the director of X or the director of Y?"). The two candidates share no name word and differ in
  the compared value, so neither partial credit nor a tie can answer it.

A question is kept only when (1) a reader that sees only the question and the passages' text
(:mod:`ragen_envs.searchqa.solver`) finds the same answer through the same passages, and (2) each gold passage
is in the top results of a search for its title (or its title and kind): the oracle's search path, so every
question can be answered by searching. Draws are bounded: a config under which no question survives raises
instead of looping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ragen_envs.searchqa.answers import name_tokens
from ragen_envs.searchqa.kb import ATTRIBUTES, RELATIONS, Entity, KnowledgeBase, render_value
from ragen_envs.searchqa.solver import solve
from ragen_envs.searchqa.templates import COMPARISONS, FACT_LABELS, FACT_QUESTIONS, RELATION_PHRASES

MIN_HOPS, MAX_HOPS = 1, 4
COMPARISON_SHARE = 0.3
"""Share of comparison questions among 2- and 4-hop ones (HotpotQA's dev set: about a fifth of all questions)."""
MAX_DRAWS = 200


@dataclass(frozen=True)
class Hop:
    """One step of the oracle's search path: the gold passage, the query that finds it, what reading it tells."""

    passage: int
    query: str
    learned: str


@dataclass(frozen=True)
class Question:
    """A question with its answer, its gold passages and the oracle's search path (one hop per gold passage)."""

    text: str
    answer: str
    kind: str
    """``"bridge"`` or ``"comparison"`` (generated), or the ``type`` field of a user's question."""
    hops: int
    path: tuple[Hop, ...]
    aliases: tuple[str, ...] = ()
    """Other answers that count as the gold one (a user's question may list several)."""
    gold_titles: tuple[str, ...] = ()
    """A user's supporting titles as written, some perhaps missing from the corpus (generated: empty)."""

    @property
    def answers(self) -> tuple[str, ...]:
        """Every accepted answer, the main one first."""
        return (self.answer, *self.aliases)

    @property
    def gold(self) -> tuple[int, ...]:
        """The gold (supporting) passages, in the order the oracle reads them."""
        return tuple(hop.passage for hop in self.path)


Search = Callable[[str], list[int]]
"""A retriever's top results for a query (passage indexes, best first)."""


def learned(kb: KnowledgeBase, entity: Entity, fact: str) -> str:
    """What reading ``entity``'s passage tells about ``fact`` ("The Silent Harbor: director Maren Holt.")."""
    return f"{entity.name}: {FACT_LABELS[fact]} {fact_value(kb, entity, fact)}."


def fact_value(kb: KnowledgeBase, entity: Entity, fact: str) -> str:
    """The value of ``fact`` as its passage writes it: a target's name, a number with separators, a word."""
    value = entity.facts[fact]
    return kb.entities[int(value)].name if fact in RELATIONS[entity.kind] else render_value(fact, value)


def oracle_query(kb: KnowledgeBase, passage: int, search: Search) -> str | None:
    """The first of (title, title and kind) whose results hold ``passage``; None when neither finds it."""
    entity = kb.entities[passage]
    for query in (entity.name, f"{entity.name} {entity.kind}"):
        if passage in search(query):
            return query
    return None


def _path(kb: KnowledgeBase, steps: list[tuple[Entity, str]], search: Search) -> tuple[Hop, ...] | None:
    hops = []
    for entity, fact in steps:
        query = oracle_query(kb, entity.index, search)
        if query is None:
            return None
        hops.append(Hop(entity.index, query, learned(kb, entity, fact)))
    return tuple(hops)


def _walk(
    kb: KnowledgeBase, rng: np.random.Generator, start: Entity, relations: int
) -> list[tuple[Entity, str]] | None:
    """``relations`` relation steps from ``start`` without revisiting an entity: [(entity, relation taken)]."""
    steps, seen, entity = [], {start.index}, start
    for _ in range(relations):
        options = tuple(RELATIONS[entity.kind])
        relation = options[int(rng.integers(len(options)))]
        target = kb.entities[int(entity.facts[relation])]
        if target.index in seen:
            return None
        steps.append((entity, relation))
        seen.add(target.index)
        entity = target
    return steps


def _bridge(kb: KnowledgeBase, rng: np.random.Generator, hops: int, search: Search) -> Question | None:
    start = kb.entities[int(rng.integers(len(kb)))]
    steps = _walk(kb, rng, start, hops - 1)
    if steps is None:
        return None
    last = kb.entities[int(steps[-1][0].facts[steps[-1][1]])] if steps else start
    facts = (*ATTRIBUTES[last.kind], *RELATIONS[last.kind])
    fact = facts[int(rng.integers(len(facts)))]
    on_path = {entity.index for entity, _ in steps} | {last.index}
    if fact in RELATIONS[last.kind] and int(last.facts[fact]) in on_path:
        return None
    phrase = start.name
    for _, relation in steps:
        phrase = RELATION_PHRASES[relation].format(phrase)
    path = _path(kb, [*steps, (last, fact)], search)
    if path is None:
        return None
    return Question(FACT_QUESTIONS[fact].format(phrase), fact_value(kb, last, fact), "bridge", hops, path)


def _comparison(kb: KnowledgeBase, rng: np.random.Generator, hops: int, search: Search) -> Question | None:
    reached = {dst for rels in RELATIONS.values() for dst in rels.values()}
    pairs = [pair for pair in COMPARISONS if hops == 2 or pair[0] in reached]  # 4 hops: a relation leads there
    kind, fact = pairs[int(rng.integers(len(pairs)))]
    template, better = COMPARISONS[(kind, fact)]
    if hops == 2:
        ids = kb.by_kind[kind]
        a, b = (kb.entities[int(ids[i])] for i in rng.choice(len(ids), size=2, replace=False))
        sides = [(a, a.name, []), (b, b.name, [])]
    else:  # through one relation that leads to ``kind``: "the director of X"
        relations = [(src, rel) for src, rels in RELATIONS.items() for rel, dst in rels.items() if dst == kind]
        source, relation = relations[int(rng.integers(len(relations)))]
        ids = kb.by_kind[source]
        sides = []
        for i in rng.choice(len(ids), size=2, replace=False):
            start = kb.entities[int(ids[i])]
            target = kb.entities[int(start.facts[relation])]
            sides.append((target, RELATION_PHRASES[relation].format(start.name), [(start, relation)]))
    (a, _, _), (b, _, _) = sides
    if a.index == b.index or a.facts[fact] == b.facts[fact] or name_tokens(a.name) & name_tokens(b.name):
        return None
    winner = a if better(a.facts[fact], b.facts[fact]) == a.facts[fact] else b
    steps = [step for target, _, before in sides for step in (*before, (target, fact))]
    path = _path(kb, steps, search)
    if path is None:
        return None
    return Question(template.format(sides[0][1], sides[1][1]), winner.name, "comparison", hops, path)


def generate_question(kb: KnowledgeBase, rng: np.random.Generator, hops: int | None, search: Search) -> Question:
    """A question drawn from ``rng`` (``hops`` None: uniform in 1..4) whose gold passages ``search`` can find."""
    for _ in range(MAX_DRAWS):
        n = int(rng.integers(MIN_HOPS, MAX_HOPS + 1)) if hops is None else hops
        comparison = n in (2, 4) and rng.random() < COMPARISON_SHARE
        question = (_comparison if comparison else _bridge)(kb, rng, n, search)
        if question is not None and solve(kb, question.text) == (question.answer, question.gold):
            return question
    raise RuntimeError(
        f"no {hops or 'any'}-hop question whose gold passages can be retrieved in {MAX_DRAWS} draws over the "
        f"knowledge base {kb.config}: lower distractors= or raise kb_size="
    )
