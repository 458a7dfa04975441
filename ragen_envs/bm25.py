"""BM25 indexes built once and cached on disk, with ``bm25s`` (numpy only; no Java, no index download).

Shared by WebShop's product search and SearchQA's passage search. An index lives under ``$RAGEN_ENVS_CACHE``
(default ``$XDG_CACHE_HOME/ragen-envs`` or ``~/.cache/ragen-envs``) in a directory whose ``meta.json`` says
what it indexes (the caller's keys plus the bm25s version: another bm25s may save or score differently). A
builder writes a private temporary directory and renames it into place; when another builder won the race,
its complete index is kept and ours discarded, so readers only ever see a complete index. When the cache
directory is not writable the index lives in memory.

Why bm25s: it precomputes per-(term, document) scores, so a query is a sum of a few sparse columns plus a
top-k (SQLite FTS5's ``bm25()`` scores every matching row: docs/benchmarks.md). Ties in score are broken by
document index, so results are deterministic.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

BM25_K1, BM25_B = 1.5, 0.75


def bm25s_module(install_hint: str):
    """``import bm25s``, or an ``ImportError`` carrying ``install_hint`` (the calling env's extra)."""
    try:
        import bm25s
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(install_hint) from err
    return bm25s


def cache_dir() -> Path:
    """Where built indexes live: ``$RAGEN_ENVS_CACHE``, else ``$XDG_CACHE_HOME/ragen-envs``, else ``~/.cache``."""
    if os.environ.get("RAGEN_ENVS_CACHE"):
        return Path(os.environ["RAGEN_ENVS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ragen-envs"


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


def full_meta(meta: dict, install_hint: str) -> dict:
    """``meta`` plus the bm25s version: what a cached index must match to be reused."""
    return {**meta, "bm25s_version": bm25s_module(install_hint).__version__}


def new_retriever(corpus: list[list[str]], install_hint: str):
    """A bm25s retriever (Lucene BM25, k1 1.5, b 0.75) over tokenized documents, in memory."""
    bm25s = bm25s_module(install_hint)
    retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B, method="lucene", backend="numpy", csc_backend="numpy")
    retriever.index(corpus, show_progress=False)
    return retriever


def is_valid(path: Path, meta: dict) -> bool:
    """Does ``path`` hold a complete index whose ``meta.json`` equals ``meta``?"""
    try:
        return json.loads((path / "meta.json").read_text()) == meta
    except (OSError, ValueError):
        return False


def build_index(path: Path, meta: dict, corpus: Callable[[], list[list[str]]], install_hint: str) -> Path:
    """Build the index of ``corpus()`` into ``path`` unless a complete one (same ``meta``) is there."""
    meta = full_meta(meta, install_hint)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        retriever = new_retriever(corpus(), install_hint)
        retriever.save(str(tmp), show_progress=False)
        (tmp / "meta.json").write_text(json.dumps(meta))
        try:
            os.rename(tmp, path)
        except OSError:
            if not is_valid(path, meta):  # not a lost race: a stale or broken index is in the way
                shutil.rmtree(path, ignore_errors=True)
                os.rename(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


def open_index(path: Path, meta: dict, corpus: Callable[[], list[list[str]]], install_hint: str):
    """The bm25s retriever cached at ``path`` for ``meta``: loaded, else built (in memory if the cache is read-only)."""
    if not is_valid(path, full_meta(meta, install_hint)):
        try:
            build_index(path, meta, corpus, install_hint)
        except OSError:
            return new_retriever(corpus(), install_hint)  # unwritable cache: keep the index in memory
    return bm25s_module(install_hint).BM25.load(str(path), mmap=False, show_progress=False)


def top_indices(scores: np.ndarray, limit: int) -> list[int]:
    """Indexes of the ``limit`` best positive ``scores``, best first, ties broken by index (deterministic)."""
    hits = np.flatnonzero(scores > 0)
    if len(hits) > limit:
        hits = hits[np.argpartition(-scores[hits], limit - 1)[:limit]]
        # argpartition cuts ties at the boundary arbitrarily: re-admit everything tied with the last one
        cutoff = scores[hits].min()
        hits = np.flatnonzero(scores >= cutoff)
    order = np.lexsort((hits, -scores[hits]))  # score descending, then index ascending
    return hits[order][:limit].tolist()
