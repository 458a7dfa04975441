"""BM25 product search over a tier, on the shared cached index of :mod:`ragen_envs.bm25`.

The index of a tier is built once and cached on disk (see :mod:`ragen_envs.bm25` for where and how), keyed by
tier, catalogue version and search version.

Why bm25s and not SQLite FTS5: FTS5's ``ORDER BY bm25()`` scores every matching row, and instruction-like
OR queries match a large share of the catalogue: we measured 60–150 ms per query at 100k products (8–10 ms
just to enumerate matches), against a 5 ms p99 target. bm25s precomputes per-(term, document) scores,
so a query is a sum of a few sparse columns plus a top-k.

Queries are hostile input: they are cut to :data:`MAX_QUERY_CHARS` and reduced to at most
:data:`MAX_TERMS` known words. Ties in score are broken by product index, so results are deterministic.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from ragen_envs import bm25
from ragen_envs.bm25 import stem
from ragen_envs.webshop.catalogue import CATALOGUE_VERSION, check_tier, make_product

SEARCH_VERSION = 1
"""Bump when tokenization or scoring changes: it keys the on-disk index."""
SEARCH_RETURN_N = 50
"""Results per search, as in WebShop."""
MAX_QUERY_CHARS = 500
MAX_TERMS = 16
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be but by for from i im in into is it its me my need of on or please so that the "
    "their them then there these this to want was we with would you your looking find get buy "
    "dollars lower than price under less".split()
)
INSTALL_HINT = "the WebShop env needs bm25s: pip install 'ragen-envs[webshop]' (or pip install 'bm25s~=0.3.16')"


def index_path(tier: str) -> Path:
    """Where the search index of catalogue ``tier`` is cached (versioned by catalogue and search code)."""
    return bm25.cache_dir() / f"webshop-{tier}-c{CATALOGUE_VERSION}-s{SEARCH_VERSION}"


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric words, stemmed (stopwords kept: BM25's idf weighs them down)."""
    return [stem(word) for word in _WORD.findall(text.lower())]


def query_terms(query: str) -> list[str]:
    """The words of a query that the index is searched for (no stopwords, deduplicated, at most MAX_TERMS)."""
    terms: list[str] = []
    for word in _WORD.findall(query[:MAX_QUERY_CHARS].lower()):
        if len(word) > 40 or word in STOPWORDS:
            continue
        term = stem(word)
        if term not in terms:
            terms.append(term)
            if len(terms) == MAX_TERMS:
                break
    return terms


def _meta(tier: str) -> dict:
    return {
        "tier": tier,
        "catalogue_version": CATALOGUE_VERSION,
        "search_version": SEARCH_VERSION,
        "count": check_tier(tier),
    }


def _corpus(tier: str) -> list[list[str]]:
    return [tokenize(make_product(i).search_text()) for i in range(check_tier(tier))]


def build_index(tier: str, path: Path | None = None) -> Path:
    """Build the index of ``tier`` into ``path`` (default: the cache) unless a complete one is there."""
    path = index_path(tier) if path is None else path
    return bm25.build_index(path, _meta(tier), lambda: _corpus(tier), INSTALL_HINT)


class SearchIndex:
    """BM25 search over one tier. Read-only after loading, so safe to share between threads."""

    def __init__(self, tier: str) -> None:
        check_tier(tier)
        self.tier = tier
        self.size = check_tier(tier)
        self.path = index_path(tier)
        retriever = bm25.open_index(self.path, _meta(tier), lambda: _corpus(tier), INSTALL_HINT)
        self._vocab: dict[str, int] = retriever.vocab_dict
        self._retriever = retriever

    def search(self, query: str, limit: int = SEARCH_RETURN_N) -> list[int]:
        """Product indexes of the best ``limit`` matches for ``query``, best first (BM25, ties by index)."""
        ids = [self._vocab[term] for term in query_terms(query) if term in self._vocab]
        if not ids:
            return []
        scores = self._retriever.get_scores_from_ids(ids)  # (N,) float32
        return bm25.top_indices(scores, limit)

    def __reduce__(self):
        return (search_index, (self.tier,))


_INDEXES: dict[str, SearchIndex] = {}
_INDEXES_LOCK = threading.Lock()


def search_index(tier: str) -> SearchIndex:
    """The process-wide :class:`SearchIndex` of ``tier`` (built or opened on first use)."""
    with _INDEXES_LOCK:
        if tier not in _INDEXES:
            _INDEXES[tier] = SearchIndex(tier)
        return _INDEXES[tier]
