"""Loading question/answer datasets for MathQA: local JSONL/JSON/CSV/Parquet files or Hugging Face datasets.

Field names are detected from the first record: the question is the first of ``QUESTION_FIELDS`` present
(``question`` for GSM8K, ``query`` for MetaMathQA, ``problem`` for MATH, …), the answer the first of
``ANSWER_FIELDS`` (``answer``, ``response``, ``solution``, …); ``question_field`` / ``answer_field``
override the detection. The final answer is read out of the answer field by its convention (GSM8K
``#### 42``, MetaMathQA ``The answer is: 42``, MATH ``\\boxed{42}``, or the whole field when it is short).

Every problem with the data raises :class:`DatasetError` (a ``ValueError``) naming the file, the line (or
row) and the field: a missing or empty file, invalid JSON, a record that is not an object, a missing or
empty field, a field name that is not a column ("Did you mean …?"), an answer with no final answer in it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ragen_envs.core import MAX_OBSERVATION_CHARS
from ragen_envs.datafiles import DatasetError, did_you_mean, rows_csv, rows_json, rows_jsonl, rows_parquet
from ragen_envs.math.answers import final_answer_text

QUESTION_FIELDS = ("question", "query", "problem", "prompt", "instruction", "input")
ANSWER_FIELDS = ("answer", "response", "solution", "output", "target", "final_answer")
FILE_FORMATS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".tsv": "tsv",
    ".parquet": "parquet",
}
SAMPLE_PATH = Path(__file__).resolve().parent.parent / "data" / "math_qa_sample.jsonl"


@dataclass(frozen=True)
class QARecord:
    """One question of a math QA dataset: the question, final answer, whole solution and where it came from."""

    question: str
    answer: str
    """The final answer (e.g. ``"42"`` out of ``"… #### 42"``)."""
    solution: str
    """The whole answer field (a worked solution in GSM8K, MetaMathQA and MATH)."""
    where: str
    """``"file:line"`` (or ``"file, row N"``): where the record came from."""


def _rows_hub(name: str, split: str, subset: str | None) -> Iterator[tuple[str, object]]:
    try:
        import datasets
    except ImportError:
        raise DatasetError(
            f"{name!r} is not a local file. To load it as a Hugging Face dataset install the datasets library "
            "(pip install datasets) and make sure a network connection or a local cache is available; or export "
            "the data to a .jsonl/.csv/.parquet file and pass its path."
        ) from None
    try:
        rows = datasets.load_dataset(name, subset, split=split)
    except Exception as error:  # network, auth, unknown dataset or split: all end here
        raise DatasetError(
            f"could not load the Hugging Face dataset {name!r} (subset {subset!r}, split {split!r}): {error}"
        ) from None
    for number, record in enumerate(rows, 1):
        yield f"{name}[{split}], row {number}", record


def _pick_field(kind: str, wanted: str | None, candidates: tuple[str, ...], columns: list[str], where: str) -> str:
    if wanted is not None:
        if wanted not in columns:
            raise DatasetError(
                f"{where}: {kind}_field {wanted!r} is not a column.{did_you_mean(wanted, columns)} Columns: {columns}"
            )
        return wanted
    for name in candidates:
        if name in columns:
            return name
    raise DatasetError(
        f"{where}: no {kind} column found (looked for {', '.join(candidates)}); columns: {columns}. "
        f"Pass {kind}_field= to name it."
    )


def _text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def records_from_rows(
    rows: Iterator[tuple[str, object]], source: str, question_field: str | None, answer_field: str | None
) -> tuple[QARecord, ...]:
    """Validate raw rows (``(where, record)`` pairs) into question/answer records."""
    out: list[QARecord] = []
    fields: tuple[str, str] | None = None
    for where, record in rows:
        if not isinstance(record, dict):
            raise DatasetError(f"{where}: a record must be an object with named fields, got {type(record).__name__}")
        if fields is None:
            columns = list(record)
            fields = (
                _pick_field("question", question_field, QUESTION_FIELDS, columns, where),
                _pick_field("answer", answer_field, ANSWER_FIELDS, columns, where),
            )
        values = []
        for field in fields:
            if field not in record:
                raise DatasetError(f"{where}: field {field!r} is missing.{did_you_mean(field, record)}")
            value = _text(record[field])
            if value is None or not value.strip():
                raise DatasetError(f"{where}: field {field!r} must be non-empty text, got {record[field]!r:.60}")
            values.append(value)
        question, solution = values
        if len(question) > MAX_OBSERVATION_CHARS:
            raise DatasetError(f"{where}: field {fields[0]!r} is longer than {MAX_OBSERVATION_CHARS} characters")
        answer = final_answer_text(solution)
        if not answer:
            raise DatasetError(f"{where}: field {fields[1]!r} states no final answer")
        out.append(QARecord(question.strip(), answer, solution, where))
    if not out:
        raise DatasetError(f"{source}: no records (the file is empty)")
    return tuple(out)


@lru_cache(maxsize=16)
def _load_file(
    path: str, shown: str, _stamp: tuple, question_field: str | None, answer_field: str | None
) -> tuple[QARecord, ...]:
    file = Path(path)
    kind = FILE_FORMATS[file.suffix.lower()]
    if kind == "jsonl":
        rows = rows_jsonl(file, shown)
    elif kind == "json":
        rows = rows_json(file, shown)
    elif kind == "parquet":
        rows = rows_parquet(file, shown)
    else:
        rows = rows_csv(file, shown, "," if kind == "csv" else "\t")
    try:
        return records_from_rows(rows, shown, question_field, answer_field)
    except UnicodeDecodeError as error:
        raise DatasetError(f"{shown}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def load_records(
    path: str | os.PathLike | None = None,
    *,
    question_field: str | None = None,
    answer_field: str | None = None,
    split: str = "train",
    subset: str | None = None,
) -> tuple[QARecord, ...]:
    """Records of a local dataset file (``None``: the shipped sample) or of a Hugging Face dataset name."""
    file = SAMPLE_PATH if path is None else Path(path).expanduser()
    if file.is_file():
        suffix = file.suffix.lower()
        if suffix not in FILE_FORMATS:
            raise DatasetError(f"{file}: unknown file type {suffix!r}; supported: {', '.join(FILE_FORMATS)}")
        stat = file.stat()
        if stat.st_size == 0:
            raise DatasetError(f"{file}: no records (the file is empty)")
        # Messages and info name the file as the user wrote it (the sample by its place in the package).
        shown = "ragen_envs/data/math_qa_sample.jsonl" if path is None else str(path)
        stamp = (stat.st_mtime_ns, stat.st_size)
        return _load_file(str(file.resolve()), shown, stamp, question_field, answer_field)
    text = str(path)
    looks_like_hub = not file.suffix and text.count("/") == 1 and not text.startswith((".", "/", "~"))
    if looks_like_hub:
        return records_from_rows(_rows_hub(text, split, subset), text, question_field, answer_field)
    siblings = [p.name for p in file.parent.iterdir()] if file.parent.is_dir() else []
    raise FileNotFoundError(f"dataset file not found: {file}.{did_you_mean(file.name, siblings)}")
