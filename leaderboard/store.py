"""The store of accepted submissions: ``leaderboard/submissions/<id>/`` (archive, entry.json, report.md).

``add`` reads the archive file once, verifies those bytes and stores exactly them (and the ``report.md`` they
hold); nothing is stored unless they verify. ``entry.json`` holds what the site needs (metadata, replayed
numbers, self-reported metrics, status) so ``build`` does not replay again.

A hidden-split archive holds the season's seeds (consecutive: one reveals the split), so it is never stored
where ``git add -A`` would publish it: by default in ``leaderboard/hidden-submissions/`` (git-ignored), and
any store inside a git work tree that does not ignore it is refused (:func:`check_private`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from leaderboard.pack import ArchiveError, Limits, read_archive, read_submission
from leaderboard.suite import Suite
from leaderboard.verify import Report, verify_members

DEFAULT_STORE = Path("leaderboard") / "submissions"
HIDDEN_STORE = Path("leaderboard") / "hidden-submissions"
"""The default store of hidden-split submissions: ignored by the repository's .gitignore."""
ENTRY = "entry.json"
ARCHIVE = "submission.ragen.tar.gz"


def _slug(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:48] or "submission"


def submission_id(metadata: dict[str, Any], archive_sha256: str) -> str:
    """``<date>-<model slug>-<8 hex of the archive hash>``: unique, readable, safe as a file name."""
    date = metadata.get("date", "") if re.fullmatch(r"\d{4}-\d{2}-\d{2}", metadata.get("date", "")) else "undated"
    return f"{date}-{_slug(metadata.get('model_name', ''))}-{archive_sha256[:8]}"


def default_store(split: str) -> Path:
    """Where ``split``'s submissions are stored unless ``--store`` says otherwise."""
    return HIDDEN_STORE if split == "hidden" else DEFAULT_STORE


def publishing_work_tree(path: str | Path) -> Path | None:
    """The git work tree in which ``git add -A`` would pick up ``path``; None when ``path`` is outside every work
    tree or ignored by it (a tree whose ignore rules cannot be read, git not installed, counts as publishing)."""
    path = Path(path).absolute()
    anchor = next(p for p in (path, *path.parents) if p.exists())
    top = next((p for p in (anchor, *anchor.parents) if (p / ".git").exists()), None)
    if top is None:
        return None
    git = shutil.which("git")
    if git is None:
        return top
    try:
        done = subprocess.run(
            [git, "-C", str(anchor if anchor.is_dir() else anchor.parent), "check-ignore", "-q", str(path)],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return top
    return None if done.returncode == 0 else top


def check_private(path: str | Path, what: str) -> None:
    """``ValueError`` naming the fix when ``path`` is where ``git add -A`` would publish ``what``."""
    top = publishing_work_tree(path)
    if top is not None:
        raise ValueError(
            f"{what} would go to {path}, inside the git work tree {top} and not ignored there, where `git add -A`"
            f" would publish the season's seeds; choose a folder outside the tree or add it to {top / '.gitignore'}"
        )


def add(
    path: str | Path,
    store: str | Path | None = None,
    *,
    secret: bytes | None = None,
    suite: Suite | None = None,
    limits: Limits | None = None,
) -> tuple[Report, Path | None]:
    """Verify the archive at ``path`` and, if it verifies, store it; return the report and the entry folder.

    ``store``: default :func:`default_store` of the submission's split. ``ValueError`` (nothing stored) when a
    hidden-split submission would be stored where git would publish it."""
    try:
        data = read_submission(path, limits)  # the only read of the file: what is verified is what is stored
        members = read_archive(data, limits)
    except ArchiveError as exc:
        return Report(ok=False, problems=[str(exc)]), None
    report = verify_members(members, secret=secret, suite=suite)
    if not report.ok:
        return report, None
    digest = hashlib.sha256(data).hexdigest()
    entry_id = submission_id(report.summary["metadata"], digest)
    folder = Path(store if store is not None else default_store(report.summary["split"])) / entry_id
    if report.summary["split"] == "hidden":
        check_private(folder, "a hidden-split submission")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ARCHIVE).write_bytes(data)
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


def find_entry(store: str | Path | None, key: str) -> Path:
    """The folder of the stored submission whose id is ``key`` (or starts with it); ``store`` None: either default
    store (official or hidden)."""
    stores = [Path(store)] if store is not None else [DEFAULT_STORE, HIDDEN_STORE]
    folders = [p for s in stores if s.is_dir() for p in sorted(s.iterdir()) if p.is_dir()]
    matches = [p for p in folders if p.name.startswith(key)]
    if len(matches) != 1:
        what = "no" if not matches else "more than one"
        known = ", ".join(p.name for p in folders) or "none"
        raise ValueError(f"{what} stored submission matches {key!r}; stored: {known}")
    return matches[0]


def remove(store: str | Path | None, key: str) -> Path:
    """Delete a stored submission (by id or unique prefix)."""
    folder = find_entry(store, key)
    shutil.rmtree(folder)
    return folder
