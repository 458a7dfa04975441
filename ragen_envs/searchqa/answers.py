"""Answer scoring as HotpotQA's (and RAGEN's SearchQA's) evaluation does it: exact match or token F1.

Normalisation is SQuAD's: lowercase, punctuation removed, articles (a, an, the) removed, whitespace collapsed.
F1 is over the normalised words; ``yes``, ``no`` and ``noanswer`` only score by exact match (HotpotQA's rule).
RAGEN's reward: 1 for an exact match, the F1 when it reaches the threshold (0.3), else 0; success is either.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import NamedTuple

F1_THRESHOLD = 0.3
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_CLOSED = frozenset({"yes", "no", "noanswer"})


def normalize_answer(text: str) -> str:
    """SQuAD/HotpotQA normalisation: lowercase, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def name_tokens(text: str) -> set[str]:
    """The normalised words of a text (two names that share one give each other partial credit)."""
    return set(normalize_answer(text).split())


def f1_score(prediction: str, gold: str) -> float:
    """Token F1 of the normalised texts (0 for a closed answer that is not an exact match)."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _CLOSED or ref in _CLOSED) and pred != ref:
        return 0.0
    pred_words, ref_words = pred.split(), ref.split()
    same = sum((Counter(pred_words) & Counter(ref_words)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_words), same / len(ref_words)
    return 2 * precision * recall / (precision + recall)


class AnswerScore(NamedTuple):
    """How an answer scores against the gold answers: the best exact match and F1 over them, and the reward."""

    exact_match: bool
    f1: float
    reward: float
    success: bool


def score_answer(prediction: str, golds: tuple[str, ...], threshold: float = F1_THRESHOLD) -> AnswerScore:
    """RAGEN's SearchQA reward: 1 for an exact match, the F1 if it is at least ``threshold``, else 0."""
    exact = any(normalize_answer(prediction) == normalize_answer(gold) for gold in golds)
    f1 = 1.0 if exact else max(f1_score(prediction, gold) for gold in golds)
    success = exact or f1 >= threshold
    return AnswerScore(exact, f1, 1.0 if exact else (f1 if success else 0.0), success)
