"""The store of accepted submissions: ``leaderboard/submissions/<id>/`` (archive, entry.json, report.md).

``add`` verifies first and stores nothing unless the submission verifies. ``entry.json`` holds what the
site needs (metadata, replayed numbers, self-reported metrics, status) so ``build`` does not replay again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

from leaderboard.pack import Limits, read_archive
from leaderboard.suite import Suite
from leaderboard.verify import Report, verify

DEFAULT_STORE = Path("leaderboard") / "submissions"
ENTRY = "entry.json"
ARCHIVE = "submission.ragen.tar.gz"


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:48] or "submission"


def submission_id(metadata: dict[str, Any], archive_sha256: str) -> str:
    """``<date>-<model slug>-<8 hex of the archive hash>``: unique, readable, safe as a file name."""
    date = metadata.get("date", "") if re.fullmatch(r"\d{4}-\d{2}-\d{2}", metadata.get("date", "")) else "undated"
    return f"{date}-{_slug(metadata.get('model_name', ''))}-{archive_sha256[:8]}"


def add(
    path: str | Path,
    store: str | Path = DEFAULT_STORE,
    *,
    secret: bytes | None = None,
    suite: Suite | None = None,
    limits: Limits | None = None,
) -> tuple[Report, Path | None]:
    """Verify the archive at ``path`` and, if it verifies, store it; return the report and the entry folder."""
    report = verify(path, secret=secret, suite=suite, limits=limits)
    if not report.ok:
        return report, None
    data = Path(path).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    entry_id = submission_id(report.summary["metadata"], digest)
    folder = Path(store) / entry_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ARCHIVE).write_bytes(data)
    members = read_archive(folder / ARCHIVE, limits)
    if "report.md" in members:
        (folder / "report.md").write_bytes(members["report.md"])
    entry = {
        "id": entry_id,
        "archive_sha256": digest,
        "added": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "status": {"verified": True, "reproduced": False},
        **report.summary,
        "reproduction": None,
    }
    write_entry(folder, entry)
    return report, folder


def write_entry(folder: Path, entry: dict[str, Any]) -> None:
    """Write ``entry`` as the folder's entry JSON atomically (temp file, then rename); NaN/inf become null."""
    tmp = folder / (ENTRY + ".part")
    tmp.write_text(json.dumps(clean_nans(entry), indent=2, sort_keys=True, allow_nan=False) + "\n")
    tmp.replace(folder / ENTRY)


def clean_nans(value: Any) -> Any:
    """Replace NaN/inf floats by None, recursively (JSON has no NaN)."""
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {k: clean_nans(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_nans(v) for v in value]
    return value


def load_entries(store: str | Path = DEFAULT_STORE) -> list[dict[str, Any]]:
    """Every stored entry (skipping folders without an entry.json), in id order."""
    store = Path(store)
    if not store.is_dir():
        return []
    entries = []
    for folder in sorted(p for p in store.iterdir() if p.is_dir()):
        entry_file = folder / ENTRY
        if entry_file.is_file():
            entry = json.loads(entry_file.read_text())
            entry["_folder"] = str(folder)
            entries.append(entry)
    return entries


def find_entry(store: str | Path, key: str) -> Path:
    """The folder of the stored submission whose id is ``key`` (or starts with it)."""
    store = Path(store)
    matches = [p for p in sorted(store.iterdir()) if p.is_dir() and p.name.startswith(key)] if store.is_dir() else []
    if len(matches) != 1:
        known = [p.name for p in sorted(store.iterdir())] if store.is_dir() else []
        what = "no" if not matches else "more than one"
        raise ValueError(f"{what} stored submission matches {key!r}; stored: {', '.join(known) or 'none'}")
    return matches[0]


def remove(store: str | Path, key: str) -> Path:
    """Delete a stored submission (by id or unique prefix)."""
    folder = find_entry(store, key)
    shutil.rmtree(folder)
    return folder
