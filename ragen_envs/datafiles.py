"""Reading user data files (JSONL, JSON, CSV/TSV, Parquet) as ``(where, record)`` rows, with errors that name the place.

Shared by the envs that take a user's dataset (MathQA's questions, SearchQA's corpus and questions). ``where`` is
``"file:line"`` (or ``"file, row N"``) so that a message about a record can point at it; a file that cannot be read
raises :class:`DatasetError` (a ``ValueError``) naming the file and the line.
"""

from __future__ import annotations

import csv
import difflib
import json
from collections.abc import Iterator
from pathlib import Path


class DatasetError(ValueError):
    """A dataset that cannot be used; the message names the file, the line or row, and the field."""


def did_you_mean(name: str, options) -> str:
    """``" Did you mean 'x'?"`` when one of ``options`` is close to ``name``, else ``""``."""
    close = difflib.get_close_matches(name, list(options), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def rows_jsonl(path: Path, shown: str) -> Iterator[tuple[str, object]]:
    """One record per non-empty line of a JSON Lines file."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield f"{shown}:{number}", json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetError(f"{shown}:{number}: not valid JSON ({error.msg} at column {error.colno})") from None


def rows_json(path: Path, shown: str) -> Iterator[tuple[str, object]]:
    """The records of a JSON file holding a list of them (or ``{"data": [...]}``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DatasetError(f"{shown}:{error.lineno}: not valid JSON ({error.msg})") from None
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise DatasetError(
            f"{shown}: a .json dataset must be a list of records (or {{'data': [...]}}); use .jsonl for one record per line"
        )
    for number, record in enumerate(data, 1):
        yield f"{shown}, record {number}", record


def rows_csv(path: Path, shown: str, delimiter: str) -> Iterator[tuple[str, object]]:
    """The rows of a CSV/TSV file with a header line, as dicts."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        for record in reader:
            if None in record:
                raise DatasetError(
                    f"{shown}:{reader.line_num}: more values than the {len(reader.fieldnames or [])} columns of the header"
                )
            yield f"{shown}:{reader.line_num}", record


def rows_parquet(path: Path, shown: str) -> Iterator[tuple[str, object]]:
    """The rows of a Parquet file, as dicts (needs pyarrow)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DatasetError(
            f"{shown}: reading Parquet needs pyarrow: pip install 'ragen-envs[report]' (or pip install pyarrow)"
        ) from None
    try:
        table = pq.read_table(path)
    except Exception as error:  # pyarrow raises several types for corrupt files
        raise DatasetError(f"{shown}: not a readable Parquet file ({error})") from None
    for number, record in enumerate(table.to_pylist(), 1):
        yield f"{shown}, row {number}", record
