"""BM25 product search over a tier with ``bm25s`` (numpy only; no Java, no index download).

The index of a tier is built once and cached on disk under ``$RAGEN_ENVS_CACHE`` (default
``$XDG_CACHE_HOME/ragen-envs`` or ``~/.cache/ragen-envs``), keyed by tier, catalogue version and search
version. A builder writes a private temporary directory and renames it into place; when another builder
won the race, its complete index is kept and ours discarded, so readers only ever see a complete index.
When the cache directory is not writable the index lives in memory.

Why bm25s and not SQLite FTS5: FTS5's ``ORDER BY bm25()`` scores every matching row, and instruction-like
OR queries match a large share of the catalogue: we measured 60–150 ms per query at 100k products (8–10 ms
just to enumerate matches), against a 5 ms p99 target. bm25s precomputes per-(term, document) scores,
so a query is a sum of a few sparse columns plus a top-k.

Queries are hostile input: they are cut to :data:`MAX_QUERY_CHARS` and reduced to at most
:data:`MAX_TERMS` known words. Ties in score are broken by product index, so results are deterministic.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

import numpy as np

from ragen_envs.webshop.catalogue import CATALOGUE_VERSION, check_tier, make_product

SEARCH_VERSION = 1
"""Bump when tokenization or scoring changes: it keys the on-disk index."""
SEARCH_RETURN_N = 50
"""Results per search, as in WebShop."""
MAX_QUERY_CHARS = 500
MAX_TERMS = 16
BM25_K1, BM25_B = 1.5, 0.75
_WORD = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    "a an and are as at be but by for from i im in into is it its me my need of on or please so that the "
    "their them then there these this to want was we with would you your looking find get buy "
    "dollars lower than price under less".split()
)
INSTALL_HINT = "the WebShop env needs bm25s: pip install 'ragen-envs[webshop]' (or pip install 'bm25s~=0.3.16')"


def _bm25s():
    try:
        import bm25s
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(INSTALL_HINT) from err
    return bm25s


def cache_dir() -> Path:
    """Where built indexes live: ``$RAGEN_ENVS_CACHE``, else ``$XDG_CACHE_HOME/ragen-envs``, else ``~/.cache``."""
    if os.environ.get("RAGEN_ENVS_CACHE"):
        return Path(os.environ["RAGEN_ENVS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragen-envs"


def index_path(tier: str) -> Path:
    """Where the search index of catalogue ``tier`` is cached (versioned by catalogue and search code)."""
    return cache_dir() / f"webshop-{tier}-c{CATALOGUE_VERSION}-s{SEARCH_VERSION}"


_STEMS: dict[str, str] = {}


def stem(word: str) -> str:
    """A light plural stemmer (Harman's S-stemmer): "jackets" → "jacket", "batteries" → "battery"."""
    cached = _STEMS.get(word)
    if cached is not None:
        return cached
    out = word
    if len(word) > 4 and word.endswith("ies") and not word.endswith(("eies", "aies")):
        out = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("es") and not word.endswith(("aes", "ees", "oes", "ses", "xes", "shes")):
        out = word[:-1]
    elif len(word) > 3 and word.endswith("s") and not word.endswith(("us", "ss", "is")):
        out = word[:-1]
    if len(_STEMS) < 1 << 20:
        _STEMS[word] = out
    return out


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
        "bm25s_version": _bm25s().__version__,  # another bm25s may save (or score) differently: rebuild
        "count": check_tier(tier),
    }


def _new_retriever(tier: str):
    bm25s = _bm25s()
    retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B, method="lucene", backend="numpy", csc_backend="numpy")
    corpus = [tokenize(make_product(i).search_text()) for i in range(check_tier(tier))]
    retriever.index(corpus, show_progress=False)
    return retriever


def build_index(tier: str, path: Path | None = None) -> Path:
    """Build the index of ``tier`` into ``path`` (default: the cache) unless a complete one is there."""
    path = index_path(tier) if path is None else path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        retriever = _new_retriever(tier)
        retriever.save(str(tmp), show_progress=False)
        (tmp / "meta.json").write_text(json.dumps(_meta(tier)))
        try:
            os.rename(tmp, path)
        except OSError:
            if not _is_valid(path, tier):  # not a lost race: a stale or broken index is in the way
                shutil.rmtree(path, ignore_errors=True)
                os.rename(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def _is_valid(path: Path, tier: str) -> bool:
    try:
        return json.loads((path / "meta.json").read_text()) == _meta(tier)
    except (OSError, ValueError):
        return False


class SearchIndex:
    """BM25 search over one tier. Read-only after loading, so safe to share between threads."""

    def __init__(self, tier: str) -> None:
        check_tier(tier)
        self.tier = tier
        self.size = check_tier(tier)
        path = index_path(tier)
        retriever = None
        if not _is_valid(path, tier):
            try:
                build_index(tier, path)
            except OSError:
                retriever = _new_retriever(tier)  # unwritable cache: keep the index in memory
        if retriever is None:
            retriever = _bm25s().BM25.load(str(path), mmap=False, show_progress=False)
        self.path = path
        self._vocab: dict[str, int] = retriever.vocab_dict
        self._retriever = retriever

    def search(self, query: str, limit: int = SEARCH_RETURN_N) -> list[int]:
        """Product indexes of the best ``limit`` matches for ``query``, best first (BM25, ties by index)."""
        ids = [self._vocab[term] for term in query_terms(query) if term in self._vocab]
        if not ids:
            return []
        scores = self._retriever.get_scores_from_ids(ids)  # (N,) float32
        hits = np.flatnonzero(scores > 0)
        if len(hits) > limit:
            hits = hits[np.argpartition(-scores[hits], limit - 1)[:limit]]
            # argpartition cuts ties at the boundary arbitrarily: re-admit everything tied with the last one
            cutoff = scores[hits].min()
            hits = np.flatnonzero(scores >= cutoff)
        order = np.lexsort((hits, -scores[hits]))  # score descending, then index ascending
        return hits[order][:limit].tolist()

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
