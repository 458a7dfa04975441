"""Your own data for SearchQA: HotpotQA-format questions over a passage corpus you have locally.

- ``questions=``: a JSONL (or JSON list, as HotpotQA ships) of records with ``question``, ``answer`` (or a list
  in ``answers`` / ``golden_answers``), and optionally ``supporting_facts`` (HotpotQA's ``[[title, sentence],
  …]`` or a list of titles: the gold passages), ``context`` (HotpotQA's ``[[title, [sentences]], …]``), ``type``
  and ``_id``/``id``.
- ``corpus=``: a JSONL or Parquet file of passages with ``title`` and ``text``, or ``contents`` (the
  ``"Title"\\ntext`` layout of the Wikipedia dumps that Search-R1 and FlashRAG use). Without a corpus, the
  questions' own ``context`` paragraphs are the collection (HotpotQA's distractor setting).

Gold passages are the supporting titles found in the collection (the first passage of a title wins); titles that
are not there stay in ``info["gold_titles"]`` but are not searched for. The oracle searches each gold title and
answers the first gold answer. Every problem with the data raises :class:`DatasetError` naming the file, the line
and the field. Loaded data is cached per process by path, modification time and size; the BM25 index is cached on
disk by content.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from ragen_envs.core import TEXT_CHARSET
from ragen_envs.datafiles import DatasetError, did_you_mean, rows_json, rows_jsonl, rows_parquet
from ragen_envs.searchqa.kb import content_hash
from ragen_envs.searchqa.questions import Hop, Question

MAX_EXTRA_CHARS = 4096
"""Characters beyond :data:`~ragen_envs.core.TEXT_CHARSET` added to the spaces' charset; rarer ones show as ``?``."""
_READERS = {".jsonl": rows_jsonl, ".ndjson": rows_jsonl, ".json": rows_json, ".parquet": rows_parquet}
ANSWER_FIELDS = ("answer", "answers", "golden_answers")


class UserCorpus:
    """A user's passages (``titles``, ``texts``), searchable by the retrievers like the generated world."""

    def __init__(self, titles: list[str], texts: list[str], source: tuple[str | None, str]) -> None:
        self.titles, self.texts, self.source = titles, texts, source
        self.by_title: dict[str, int] = {}
        for i, title in enumerate(titles):
            self.by_title.setdefault(title, i)
        digest = content_hash(titles, texts)
        self.index_key = f"searchqa-user-{digest[:16]}"
        self.index_meta = {"content_sha256": digest}

    def __reduce__(self):
        return (_corpus_of, self.source)


def _rows(path: Path, allowed: tuple[str, ...]):
    if not path.is_file():
        siblings = [p.name for p in path.parent.iterdir()] if path.parent.is_dir() else []
        raise FileNotFoundError(f"file not found: {path}.{did_you_mean(path.name, siblings)}")
    suffix = path.suffix.lower()
    if suffix not in allowed:
        raise DatasetError(f"{path}: unknown file type {suffix!r}; supported: {', '.join(allowed)}")
    try:
        yield from _READERS[suffix](path, str(path))
    except UnicodeDecodeError as error:
        raise DatasetError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def _text(where: str, record: dict, field: str) -> str:
    if field not in record:
        raise DatasetError(
            f"{where}: field {field!r} is missing.{did_you_mean(field, record)} Fields: {sorted(record)}"
        )
    value = record[field]
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: field {field!r} must be non-empty text, got {value!r:.60}")
    return value.strip()


def _object(where: str, record: Any) -> dict:
    if not isinstance(record, dict):
        raise DatasetError(f"{where}: a record must be an object with named fields, got {type(record).__name__}")
    return record


def read_corpus(path: Path) -> tuple[list[str], list[str]]:
    """Titles and texts of a JSONL or Parquet passage file (``title`` + ``text``, or ``contents``)."""
    titles, texts = [], []
    for where, raw in _rows(path, (".jsonl", ".ndjson", ".parquet")):
        record = _object(where, raw)
        if "contents" in record and "text" not in record:
            contents = _text(where, record, "contents")
            head, _, body = contents.partition("\n")
            title, text = (head.strip().strip('"'), body.strip()) if body.strip() else ("", contents)
        else:
            title, text = _text(where, record, "title"), _text(where, record, "text")
        titles.append(title)
        texts.append(text)
    if not titles:
        raise DatasetError(f"{path}: no passages (the file is empty)")
    return titles, texts


def _answers(where: str, record: dict) -> tuple[str, ...]:
    for field in ANSWER_FIELDS:
        if field in record:
            value = record[field]
            values = [value] if isinstance(value, (str, int, float)) and not isinstance(value, bool) else value
            if isinstance(values, list) and values and all(isinstance(v, (str, int, float)) for v in values):
                answers = tuple(str(v).strip() for v in values if str(v).strip())
                if answers:
                    return answers
            raise DatasetError(
                f"{where}: field {field!r} must be a non-empty answer or list of answers, got {value!r:.60}"
            )
    raise DatasetError(f"{where}: no answer field (looked for {', '.join(ANSWER_FIELDS)}); fields: {sorted(record)}")


def _supporting_titles(where: str, record: dict) -> tuple[str, ...]:
    facts = record.get("supporting_facts") or []
    titles: dict[str, None] = {}
    for fact in facts if isinstance(facts, list) else [None]:
        title = fact[0] if isinstance(fact, list) and fact else fact
        if not isinstance(title, str):
            raise DatasetError(
                f"{where}: supporting_facts must be [[title, sentence], ...] or [title, ...], got {facts!r:.80}"
            )
        titles.setdefault(title)
    return tuple(titles)


def _context(where: str, record: dict) -> list[tuple[str, str]]:
    paragraphs = []
    for item in record.get("context") or []:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], list)):
            raise DatasetError(f"{where}: context must be [[title, [sentences]], ...], got an item {item!r:.80}")
        paragraphs.append((item[0], "".join(str(s) for s in item[1]).strip()))
    return paragraphs


def read_questions(path: Path) -> list[tuple[str, dict]]:
    """The question records of a HotpotQA-format JSONL or JSON file, each with where it came from."""
    rows = [(where, _object(where, raw)) for where, raw in _rows(path, (".jsonl", ".ndjson", ".json"))]
    if not rows:
        raise DatasetError(f"{path}: no questions (the file is empty)")
    return rows


def build_questions(rows: list[tuple[str, dict]], corpus: UserCorpus) -> tuple[Question, ...]:
    """Questions with their gold path through ``corpus`` (one search per supporting title it holds)."""
    out = []
    for where, record in rows:
        answers = _answers(where, record)
        gold_titles = _supporting_titles(where, record)
        path = tuple(Hop(corpus.by_title[t], t, "") for t in gold_titles if t in corpus.by_title)
        kind = record.get("type") if isinstance(record.get("type"), str) else "user"
        question = _text(where, record, "question")
        out.append(Question(question, answers[0], kind, len(gold_titles), path, answers[1:], gold_titles))
    return tuple(out)


def _stamp(path: str | None) -> tuple:
    if path is None:
        return ()
    stat = Path(path).expanduser().stat() if Path(path).expanduser().exists() else None
    return () if stat is None else (stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _load(corpus: str | None, questions: str, _stamps: tuple) -> tuple[UserCorpus, tuple[Question, ...], str]:
    rows = read_questions(Path(questions).expanduser())
    if corpus is not None:
        titles, texts = read_corpus(Path(corpus).expanduser())
    else:
        seen: dict[str, str] = {}
        for where, record in rows:
            for title, text in _context(where, record):
                seen.setdefault(title, text)
        if not seen:
            raise DatasetError(
                f"{questions}: without corpus= the questions' context paragraphs are the passages, but none has any"
            )
        titles, texts = list(seen), list(seen.values())
    passages = UserCorpus(titles, texts, (corpus, questions))
    built = build_questions(rows, passages)
    counts: dict[str, int] = {}
    for text in (*titles, *texts, *(q.text for q in built), *(a for q in built for a in q.answers)):
        for char in set(text) - TEXT_CHARSET:
            counts[char] = counts.get(char, 0) + 1
    extra = sorted(sorted(counts, key=lambda c: (-counts[c], c))[:MAX_EXTRA_CHARS])
    return passages, built, "".join(extra)


def load_user_data(corpus: str | None, questions: str) -> tuple[UserCorpus, tuple[Question, ...], str]:
    """``(passages, questions, extra charset)`` of a user's questions file and optional corpus file."""
    corpus = None if corpus is None else os.fspath(corpus)
    return _load(corpus, os.fspath(questions), (_stamp(corpus), _stamp(questions)))


def _corpus_of(corpus: str | None, questions: str) -> UserCorpus:
    return load_user_data(corpus, questions)[0]
