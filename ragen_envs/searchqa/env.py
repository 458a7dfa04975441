"""Multi-hop question answering by searching a passage collection (RAGEN's SearchQA, self-contained).

## Description
Each episode is a question that takes 1-4 passages to answer (HotpotQA's bridge and comparison kinds):
"In what year was the director of The Silent Harbor born?" needs the film's passage (its director) and then
the director's (the year). The passages come from a generated knowledge base: ``kb_size`` entities (people,
cities, countries, companies, universities, films) with typed attributes and relations, one encyclopedia-style
passage each, and names and values shared between entities so that searches return look-alikes
(:mod:`ragen_envs.searchqa.kb`). Questions are built by walking relations and answered by the knowledge base;
one is kept only if a reader of the question and the passages' text alone finds the same answer through the same
passages, and each gold passage can be found by searching for its title (:mod:`ragen_envs.searchqa.questions`).
Search is BM25 (``bm25s``; the index is built once per collection and cached on disk). The seed picks the
question; the same seed gives the same episode.

With ``questions=`` the env serves your own questions (HotpotQA format: ``question``, ``answer``,
``supporting_facts``) over ``corpus=`` (JSONL or Parquet passages with ``title`` and ``text``, or
``contents``), or over the questions' own ``context`` paragraphs without a corpus (HotpotQA's distractor
setting); ``retriever="dense"`` searches ``embeddings`` (one row per passage, a ``.npy`` file) with your
``query_encoder`` (FAISS when installed, ``pip install 'ragen-envs[dense]'``; numpy otherwise, with the same
results) (:mod:`ragen_envs.searchqa.corpus`).

## Action Space
One action per response: ``search[query]`` (returns the top 5 passages) or ``finish[answer]`` (ends the
episode). Case-insensitive; anything else costs ``format_penalty`` and changes nothing.

## Observation Space
``Question: …``; after a search, ``Search results for '<query>':`` and the passages as ``[n] title`` then the
text (each cut to 800 characters, all of them to 4,000, as RAGEN's search env); then ``Available actions:
search[<query>], finish[<answer>]``.

## Rewards
At ``finish``, RAGEN's (and HotpotQA's) scoring of the answer against the gold answer after SQuAD
normalisation: 1 for an exact match, the token F1 when it is at least ``f1_threshold`` (0.3), else 0. Searches
earn 0; invalid responses cost ``format_penalty`` (−0.1). Partial credit can be gamed by long answers that
contain the gold words; ``f1_threshold=1.0`` keeps exact (bag-of-words) matches only.

## Episode End
Terminated at ``finish``; ``success`` when the answer is an exact match or its F1 reaches the threshold.
Truncated after ``max_turns`` (5, as RAGEN) without an answer.

## Info
``reset``: ``question``, ``answer``, ``hops``, ``question_type``, ``gold_passages`` (passage indexes, in the
order the oracle reads them) and ``gold_titles``. Every ``step``: ``action`` (``search``, ``finish`` or
``none``), ``retrieved`` (this search's passages), ``gold_retrieved`` (the gold ones among them),
``gold_recall`` (share of gold passages retrieved so far); at ``finish`` also ``exact_match`` and ``f1``.

## Version History
- v0: initial release.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ragen_envs.arguments import EnvConfig, argument
from ragen_envs.core import ActionResult, TextEnv
from ragen_envs.parsing import normalize_action
from ragen_envs.searchqa.answers import F1_THRESHOLD, score_answer
from ragen_envs.searchqa.kb import DISTRACTORS_RANGE, SEED_RANGE, SIZE_RANGE, KBConfig, knowledge_base
from ragen_envs.searchqa.questions import MAX_HOPS, MIN_HOPS, Question, generate_question
from ragen_envs.searchqa.retrieval import (
    MAX_QUERY_CHARS,
    TOP_K,
    DenseRetriever,
    bm25_retriever,
    format_results,
)
from ragen_envs.tools import ActionTool

RETRIEVERS = ("bm25", "dense")
VERBS = ("search", "finish")
MAX_ANSWER_CHARS = 500
AVAILABLE = "Available actions: search[<query>], finish[<answer>]"


def parse_action(text: str) -> tuple[str, str] | None:
    """``("search", query)`` or ``("finish", answer)`` for ``search[…]``/``finish[…]``, else None; never raises.

    The verb is case-insensitive, the argument is everything between the first ``[`` and the last ``]`` with
    whitespace collapsed (so an answer may hold brackets), cut to a bounded length; an empty one is no action.
    """
    open_at = text.find("[")
    body = text[open_at + 1 :].rstrip()
    if open_at < 0 or not body.endswith("]"):
        return None
    verb = normalize_action(text[:open_at], "`*\"'")
    if verb not in VERBS:
        return None
    limit = MAX_QUERY_CHARS if verb == "search" else MAX_ANSWER_CHARS
    argument = " ".join(body[:-1][: 4 * limit].split())[:limit].strip()
    return (verb, argument) if argument else None


@dataclass(frozen=True)
class SearchQAConfig(EnvConfig):
    """The questions and the collection an env serves."""

    hops: int | None = argument(
        None,
        "Passages a generated question needs (``None``: drawn per episode).",
        low=MIN_HOPS,
        high=MAX_HOPS,
        integer=True,
    )
    kb_size: int = argument(
        5000,
        "Entities (= passages) of the generated knowledge base.",
        low=SIZE_RANGE[0],
        high=SIZE_RANGE[1],
        integer=True,
    )
    distractors: float = argument(
        1.0,
        "How densely names are shared: each name word belongs to about 1 + d entities.",
        low=DISTRACTORS_RANGE[0],
        high=DISTRACTORS_RANGE[1],
    )
    kb_seed: int = argument(
        0, "The generated knowledge base's seed (the world).", low=SEED_RANGE[0], high=SEED_RANGE[1], integer=True
    )
    corpus: str | None = argument(
        None,
        "Your passages: JSONL or Parquet with ``title`` and ``text`` (or ``contents``); needs ``questions``.",
        allowed="a path",
    )
    questions: str | None = argument(
        None,
        "Your questions in HotpotQA's format (``question``, ``answer``, ``supporting_facts``), over ``corpus`` or their "
        "own ``context`` paragraphs.",
        allowed="a path",
    )
    retriever: str = argument(
        "bm25", "BM25, or ``dense`` over ``embeddings`` with ``query_encoder``.", choices=RETRIEVERS
    )
    embeddings: Any = argument(
        None,
        "For ``dense``: one row per passage (a ``.npy`` path or an array).",
        allowed="a path or an array",
        compare=False,
    )
    query_encoder: Any = argument(
        None,
        "For ``dense``: turns a query into a vector.",
        allowed='a callable or ``"module:function"``',
        compare=False,
    )
    f1_threshold: float = argument(
        F1_THRESHOLD, "Least token F1 that earns partial credit (1.0: exact matches only).", low=0.0, high=1.0
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("corpus", "questions"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, os.fspath(getattr(self, name)))
        if self.retriever == "dense" and (self.embeddings is None or self.query_encoder is None):
            raise ValueError('retriever="dense" needs embeddings= (.npy, one row per passage) and query_encoder=')
        if self.retriever != "dense" and (self.embeddings is not None or self.query_encoder is not None):
            raise ValueError('embeddings= and query_encoder= are for retriever="dense"')
        if self.corpus is not None and self.questions is None:
            raise ValueError("corpus= needs questions= (a HotpotQA-format JSONL of question, answer, supporting_facts)")
        if self.questions is not None and self.hops is not None:
            raise ValueError("hops= applies to generated questions only; your questions= keep their own")


class SearchQAEnv(TextEnv):  # noqa: D101 (its docstring is the module's, through __doc__ = __doc__)
    __doc__ = __doc__
    action_separator = None
    example_answer = "search[The Silent Harbor]"
    action_tools = (
        ActionTool("search", "Search the passages; returns the top 5.", "query", "The search words.", template="search[{}]"),
        ActionTool("finish", "Give the final answer; ends the episode.", "answer", "The answer only.", template="finish[{}]", accepts_numbers=True),
    )  # fmt: skip

    config_cls = SearchQAConfig
    base_defaults = {"max_turns": 5}

    def _setup(self) -> None:
        c = self.config
        self.user_questions: tuple[Question, ...] = ()
        if c.questions is not None:
            from ragen_envs.searchqa.corpus import load_user_data

            self.passages, self.user_questions, self.extra_charset = load_user_data(c.corpus, c.questions)
        else:
            self.passages = knowledge_base(KBConfig(c.kb_seed, c.kb_size, c.distractors))
        if c.retriever == "dense":
            self.retriever = DenseRetriever(self.passages, c.embeddings, c.query_encoder)
        else:
            self.retriever = bm25_retriever(self.passages)
        self.question: Question | None = None
        self.seen: set[int] = set()
        """Passages any search of this episode returned."""
        self.shown: list[int] = []
        """The last search's passages."""
        self.queries: list[str] = []
        self._results = ""
        self._last_info: dict[str, Any] = {}

    # ---- hooks --------------------------------------------------------------------------------------
    def _generate(self) -> None:
        if self.user_questions:
            self.question = self.user_questions[int(self.np_random.integers(len(self.user_questions)))]
        else:
            search = lambda query: self.retriever.search(query, TOP_K)  # noqa: E731
            self.question = generate_question(self.passages, self.np_random, self.config.hops, search)
        self.seen, self.shown, self.queries, self._results, self._last_info = set(), [], [], "", {}

    def _instructions(self) -> str:
        return (
            "You answer a question by searching a collection of encyclopedia passages. Actions:\n"
            "- search[query]: returns the 5 passages that best match the query (each starts with its title);\n"
            "- finish[answer]: gives your final answer and ends the episode.\n"
            "Questions may need several searches: find the first passage, read the name it gives, then search "
            f"for that name. You have {self.max_turns} turns. The answer is scored against the gold answer: "
            "reward 1 for an exact match, partial credit for a close one. Answer with exactly one action."
        )

    def _observe(self) -> str:
        parts = [f"Question: {self.question.text}"]
        if self._results:
            parts.append(self._results)
        parts.append(AVAILABLE)
        return "\n".join(parts)

    def _parse_action(self, text: str) -> tuple[str, str] | None:
        return parse_action(text)

    def _rejection_message(self, unknown: list[str]) -> str:
        return f"Unknown action {unknown[0][:40]!r}: answer with search[query] or finish[answer]."

    def _apply(self, action: tuple[str, str]) -> ActionResult:
        verb, argument = action
        gold = self.question.gold
        if verb == "search":
            found = self.retriever.search(argument, TOP_K)
            new = set(found) - self.seen
            self.seen |= new
            self.shown = found
            self.queries.append(argument)
            shown = format_results(self.passages, found) if found else "No passage matches the query."
            self._results = f"Search results for '{argument}':\n{shown}"
            self._last_info = {
                "action": "search",
                "retrieved": found,
                "gold_retrieved": [i for i in found if i in gold],
            }
            return ActionResult(reward=0.0, effective=bool(new))
        score = score_answer(argument, self.question.answers, self.config.f1_threshold)
        self._results, self.shown = "", []
        self._last_info = {"action": "finish", "exact_match": score.exact_match, "f1": round(score.f1, 6)}
        verdict = "correct" if score.success else "incorrect"
        return ActionResult(
            reward=score.reward,
            effective=True,
            terminated=True,
            success=score.success,
            message=f"Your answer: {argument}. It is {verdict} (reward {score.reward:.2f}).",
        )

    def _step_info(self) -> dict[str, Any]:
        info = {"action": "none", "retrieved": [], "gold_retrieved": [], **self._last_info}
        self._last_info = {}
        gold = self.question.gold
        info["gold_recall"] = sum(i in self.seen for i in gold) / len(gold) if gold else 0.0
        return info

    def _reset_info(self) -> dict[str, Any]:
        q = self.question
        return {
            "question": q.text,
            "answer": q.answer,
            "hops": q.hops,
            "question_type": q.kind,
            "gold_passages": list(q.gold),
            "gold_titles": [self.passages.titles[i] for i in q.gold] if not q.gold_titles else list(q.gold_titles),
        }

    # ---- oracle and candidates ----------------------------------------------------------------------
    def oracle(self) -> tuple[str, str]:
        """The gold search path: search for the next gold passage not yet retrieved (and not yet searched
        for), with what the retrieved ones said as reasoning; then ``finish`` with the gold answer."""
        q = self.question
        notes = [hop.learned for hop in q.path if hop.passage in self.seen and hop.learned]
        pending = [hop for hop in q.path if hop.passage not in self.seen and hop.query not in self.queries]
        if pending and self.max_turns - self.turn > 1:
            hop = pending[0]
            title = self.passages.titles[hop.passage]
            return " ".join([*notes, f"I need the passage on {title}."]), f"search[{hop.query}]"
        return " ".join([*notes, f"So the answer is {q.answer}."]), f"finish[{q.answer}]"

    def candidate_actions(self) -> tuple[str, ...]:
        """A search for the question, and a search for and an answer of each title in the last results."""
        if self.question is None or self._done:
            return ()
        titles = [self.passages.titles[i] for i in self.shown]
        found = [f"search[{self.question.text}]"]
        found += [f"search[{title}]" for title in titles] + [f"finish[{title}]" for title in titles]
        return tuple(dict.fromkeys(found))
