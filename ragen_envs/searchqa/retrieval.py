"""Retrieval over a passage collection: BM25 (default) or dense over embeddings a user supplies, one interface.

A :class:`Passages` is anything with ``titles`` and ``texts`` (the generated knowledge base, a user's corpus)
plus ``index_key``/``index_meta`` naming its BM25 index in the cache (:mod:`ragen_envs.bm25`): the index is
built once per collection and reused by every env and process. A retriever's :meth:`~Retriever.search` returns
passage indexes, best first, ties broken by index, so a search is deterministic.

Queries are hostile input: cut to :data:`MAX_QUERY_CHARS`, reduced to at most :data:`MAX_TERMS` known words.
Results are shown as RAGEN's search env shows them: at most :data:`TOP_K` passages, each cut to
:data:`MAX_PASSAGE_CHARS`, all together to :data:`MAX_RESULT_CHARS`.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ragen_envs import bm25

SEARCH_VERSION = 1
"""Bump when tokenization changes: it keys the cached indexes."""
TOP_K = 5
MAX_PASSAGE_CHARS = 800
MAX_RESULT_CHARS = 4000
MAX_QUERY_CHARS = 300
MAX_TERMS = 32
INSTALL_HINT = "the SearchQA env needs bm25s: pip install 'ragen-envs[search]' (or pip install 'bm25s~=0.3.16')"
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be been but by did do does for from had has have he her his how i in into is it its "
    "of on or she so than that the their them then there these they this to was were what when where which "
    "who whom whose why will with".split()
)
"""Left out of documents and queries: question words and articles would otherwise match every passage."""


class Passages(Protocol):
    """A passage collection: ``titles[i]`` and ``texts[i]`` are passage ``i``; the index key names its BM25 cache."""

    titles: Sequence[str]
    texts: Sequence[str]
    index_key: str
    index_meta: dict


class Retriever(Protocol):
    """What the env searches with."""

    def search(self, query: str, k: int = TOP_K) -> list[int]:
        """Passage indexes of the best ``k`` matches for ``query``, best first."""
        ...


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric words without stopwords, plural-stemmed."""
    return [bm25.stem(word) for word in _WORD.findall(text.lower()) if word not in STOPWORDS]


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query (at most :data:`MAX_TERMS`, from its first :data:`MAX_QUERY_CHARS` chars)."""
    terms: dict[str, None] = {}
    for word in _WORD.findall(query[:MAX_QUERY_CHARS].lower()):
        if len(word) <= 40 and word not in STOPWORDS:
            terms.setdefault(bm25.stem(word))
            if len(terms) == MAX_TERMS:
                break
    return list(terms)


def passage_text(passages: Passages, i: int) -> str:
    """What the index holds of passage ``i``: its title (so a search for a name finds its own page) and its text."""
    return f"{passages.titles[i]} {passages.texts[i]}"


class BM25Retriever:
    """BM25 (Lucene variant, k1 1.5, b 0.75, bm25s) over a passage collection. Read-only, shareable."""

    def __init__(self, passages: Passages) -> None:
        self.passages = passages
        meta = {**passages.index_meta, "search_version": SEARCH_VERSION, "count": len(passages.titles)}
        path = bm25.cache_dir() / f"{passages.index_key}-s{SEARCH_VERSION}"
        corpus = lambda: [tokenize(passage_text(passages, i)) for i in range(len(passages.titles))]  # noqa: E731
        self._retriever = bm25.open_index(path, meta, corpus, INSTALL_HINT)
        self._vocab: dict[str, int] = self._retriever.vocab_dict

    def search(self, query: str, k: int = TOP_K) -> list[int]:
        """Passage indexes of the best ``k`` BM25 matches for ``query``, best first, ties by index."""
        ids = [self._vocab[term] for term in query_terms(query) if term in self._vocab]
        if not ids:
            return []
        return bm25.top_indices(self._retriever.get_scores_from_ids(ids), k)

    def __reduce__(self):
        return (bm25_retriever, (self.passages,))


_RETRIEVERS: dict[str, BM25Retriever] = {}
_LOCK = threading.Lock()


def bm25_retriever(passages: Passages) -> BM25Retriever:
    """The process-wide BM25 retriever of a collection (built or loaded from the cache on first use)."""
    with _LOCK:
        found = _RETRIEVERS.get(passages.index_key)
        if found is None:
            found = _RETRIEVERS[passages.index_key] = BM25Retriever(passages)
        return found


Encoder = Callable[[list[str]], Any]
"""Texts -> an (n, d) array of embeddings."""


def resolve_encoder(spec: str | Encoder) -> Encoder:
    """A query encoder from a callable or a ``"module:function"`` string (JSON-able, so runs can record it)."""
    if callable(spec):
        return spec
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise ValueError(f"query_encoder must be a callable or 'module:function', got {spec!r}")
    module, name = spec.split(":")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"query_encoder {spec!r} cannot be imported: {err}") from None
    if not callable(found):
        raise ValueError(f"query_encoder {spec!r} is not callable")
    return found


def load_embeddings(source: str | Path | np.ndarray, count: int) -> np.ndarray:
    """Passage embeddings as a C-contiguous float32 (count, d) matrix, from an array or a ``.npy`` file."""
    if isinstance(source, np.ndarray):
        matrix = source
    else:
        path = Path(source).expanduser()
        if path.suffix != ".npy" or not path.is_file():
            raise ValueError(f"embeddings must be an array or an existing .npy file, got {str(source)!r}")
        matrix = np.load(path, allow_pickle=False)
    if matrix.ndim != 2 or matrix.shape[0] != count:
        raise ValueError(f"embeddings must have shape ({count}, d), one row per passage, got {matrix.shape}")
    return np.ascontiguousarray(matrix, dtype=np.float32)


class DenseRetriever:
    """Inner-product search over passage embeddings the user supplies, with their query encoder.

    With FAISS installed, an exact ``IndexFlatIP`` proposes candidates; either way the final order is numpy's
    exact scores, best first, ties by index, so results do not depend on whether FAISS is there. Normalise the
    embeddings (and the encoder's output) for cosine similarity.
    """

    def __init__(self, passages: Passages, embeddings: str | Path | np.ndarray, encoder: str | Encoder) -> None:
        self.passages = passages
        self.matrix = load_embeddings(embeddings, len(passages.titles))
        self.encoder = resolve_encoder(encoder)
        self.backend = "numpy"
        self._faiss_index = None
        try:
            import faiss
        except ImportError:
            return
        self._faiss_index = faiss.IndexFlatIP(self.matrix.shape[1])
        self._faiss_index.add(self.matrix)
        self.backend = "faiss"

    def embed_query(self, query: str) -> np.ndarray | None:
        """The query's embedding as a (d,) float32 vector; None when the encoder's output is unusable."""
        try:
            vector = np.asarray(self.encoder([query[:MAX_QUERY_CHARS]]), dtype=np.float32).reshape(-1)
        except (TypeError, ValueError):
            return None
        if vector.shape != (self.matrix.shape[1],) or not np.isfinite(vector).all():
            return None
        return vector

    def search(self, query: str, k: int = TOP_K) -> list[int]:
        """Passage indexes of the ``k`` largest inner products with the query's embedding, best first."""
        vector = self.embed_query(query)
        if vector is None or not query.strip():
            return []
        if self._faiss_index is None:
            return _top_by_score(self.matrix @ vector, np.arange(len(self.matrix)), k)
        # over-fetch, then order the candidates by numpy's exact scores: ties come out as without FAISS
        _, found = self._faiss_index.search(vector[None, :], min(len(self.matrix), 4 * k))
        candidates = np.unique(found[0][found[0] >= 0])
        scores = self.matrix[candidates] @ vector
        cut = np.sort(scores)[::-1][min(k, len(scores)) - 1] if len(scores) else None
        if len(candidates) < len(self.matrix) and (cut is None or cut <= scores.min()):
            # ties reach the edge of what FAISS returned: passages it left out may tie too, so score them all
            return _top_by_score(self.matrix @ vector, np.arange(len(self.matrix)), k)
        return _top_by_score(scores, candidates, k)


def _top_by_score(scores: np.ndarray, ids: np.ndarray, k: int) -> list[int]:
    order = np.lexsort((ids, -scores))
    return ids[order][:k].tolist()


def format_results(passages: Passages, ids: list[int]) -> str:
    """Search results as the agent reads them: ``[n] title`` then the text, cut as RAGEN cuts them."""
    blocks = []
    for rank, i in enumerate(ids, 1):
        text = passages.texts[i]
        if len(text) > MAX_PASSAGE_CHARS:
            text = text[:MAX_PASSAGE_CHARS] + "..."
        blocks.append(f"[{rank}] {passages.titles[i]}\n{text}")
    out = "\n\n".join(blocks)
    return out[:MAX_RESULT_CHARS] + "..." if len(out) > MAX_RESULT_CHARS else out
