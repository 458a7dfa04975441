"""The submission format: archive members, the manifest of content hashes, and the submitter's metadata.

A submission is one ``.ragen.tar.gz`` holding, at its top level and nothing else::

    manifest.json    {"format": "ragen-leaderboard-submission", "format_version": 1,
                      "files": {"<name>": {"sha256": "<hex>", "bytes": <int>}, …}}   every other member, hashed
    metadata.json    who and what was evaluated (SubmissionMetadata below)
    config.json      the harness run's config.json, as written
    episodes.jsonl   the harness run's episodes, one JSON object per line, as written
    summary.json     the harness run's summary, as written
    summary.csv      optional, as written
    report.md        optional, as written (linked from the site)
    *.png            optional plots of the run (top level or under plots/)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import re
import unicodedata
from dataclasses import asdict, dataclass, fields
from typing import Any

FORMAT = "ragen-leaderboard-submission"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
METADATA = "metadata.json"
RUN_FILES_REQUIRED = ("config.json", "episodes.jsonl", "summary.json")
RUN_FILES_OPTIONAL = ("summary.csv", "report.md")
_PLOT = re.compile(r"^(plots/)?[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}\.png$")


SELF_REPORTED_BOUNDS = {
    "mi_estimate": (-100.0, 100.0),
    "retrieval_accuracy": (0.0, 1.0),
    "retrieval_chance": (0.0, 1.0),
    "mi_zscore": (-1e6, 1e6),
    "token_entropy": (0.0, 100.0),
}
"""The range a self-reported collapse metric may take (site name -> inclusive bounds). An MI estimate is at
most log(#inputs) nats and a token entropy at most log(vocabulary) nats, both far below 100; accuracies are
fractions. A value outside (or NaN, infinite, not a number) is refused at verify time."""


def self_reported_problem(site_name: str, value: Any) -> str | None:
    """Why ``value`` cannot be a self-reported ``site_name``, or None (None itself means "not available")."""
    if value is None:
        return None
    if type(value) not in (int, float):
        return f"must be a number or null, got {type(value).__name__}"
    try:
        finite = math.isfinite(value)
    except OverflowError:  # an int beyond the float range
        finite = False
    if not finite:
        return f"must be finite, got {str(value)[:30]}"
    low, high = SELF_REPORTED_BOUNDS[site_name]
    if not low <= value <= high:
        return f"must lie in [{low:g}, {high:g}], got {value!r}"
    return None


def bounded_number(site_name: str, value: Any) -> float | None:
    """``value`` as a float when it is a valid self-reported ``site_name``, else None (what the site shows)."""
    return None if value is None or self_reported_problem(site_name, value) else float(value)


_BIDI_AND_INVISIBLE = {"Cf", "Cc", "Zl", "Zp"}


def text_problem(value: str, *, multiline: bool = False) -> str | None:
    """Why submitter text may not be shown as is: control characters (CR included; LF only in multi-line text),
    bidi overrides and other invisible format characters (Unicode Cf), which would reorder or hide what the
    leaderboard shows. None when the text is fine."""
    for ch in value:
        if ch == "\n" and multiline:
            continue
        if unicodedata.category(ch) in _BIDI_AND_INVISIBLE:
            return f"contains the control or invisible format character U+{ord(ch):04X} ({unicodedata.name(ch, 'unnamed')})"
    return None


def allowed_member(name: str) -> bool:
    """True for the member names a submission may contain (see the module docstring)."""
    return name in (MANIFEST, METADATA, *RUN_FILES_REQUIRED, *RUN_FILES_OPTIONAL) or bool(_PLOT.match(name))


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 lowercase hex digits."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class SubmissionMetadata:
    """What the site shows about a submission, and what a reviewer needs to reproduce it."""

    model_name: str
    """Display name, e.g. "Qwen2.5-3B-Instruct + StarPO"."""
    org: str
    """Organisation (or "independent")."""
    parameters: str
    """Parameter count as text, e.g. "3B", "0.5B", or "unknown"."""
    weights: str
    """An https:// link to the open weights, or "closed"."""
    contact: str
    """An e-mail address or a URL where the submitter can be reached."""
    date: str
    """ISO date (YYYY-MM-DD) of the evaluation."""
    package_version: str
    """ragen-envs version the run used (from the run's config.json)."""
    git_commit: str
    """git commit of the code that ran (from config.json; "unknown" outside a checkout)."""
    agent: str
    """The harness agent spec that produced the responses, e.g. "hf:/models/my-3b"."""
    suite: str
    suite_version: str
    split: str
    """ "official" or "hidden"."""
    suite_fingerprint: str
    """sha256 of the suite definition the run used (``Suite.fingerprint()``)."""
    notes: str = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, str):
                raise ValueError(f"metadata field {f.name!r} must be a string, got {value!r}")
            if len(value) > 2000:
                raise ValueError(f"metadata field {f.name!r} is longer than 2000 characters")
            if f.name != "notes" and not value.strip():
                raise ValueError(f"metadata field {f.name!r} must not be empty")
            problem = text_problem(value, multiline=f.name == "notes")
            if problem:
                raise ValueError(f"metadata field {f.name!r} {problem}")
        if self.weights != "closed" and not re.match(r"^https?://[^\s]+$", self.weights):
            raise ValueError(f"metadata field 'weights' must be an http(s) link or 'closed', got {self.weights!r}")
        try:
            _dt.date.fromisoformat(self.date)
        except ValueError:
            raise ValueError(f"metadata field 'date' must be an ISO date YYYY-MM-DD, got {self.date!r}") from None
        if "@" not in self.contact and not re.match(r"^https?://", self.contact):
            raise ValueError(f"metadata field 'contact' must be an e-mail address or a URL, got {self.contact!r}")
        if self.split not in ("official", "hidden"):
            raise ValueError(f"metadata field 'split' must be 'official' or 'hidden', got {self.split!r}")
        if not re.fullmatch(r"[0-9a-f]{64}", self.suite_fingerprint):
            raise ValueError("metadata field 'suite_fingerprint' must be 64 lowercase hex digits")

    def to_dict(self) -> dict[str, Any]:
        """The metadata as a JSON-ready dict of its fields."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> SubmissionMetadata:
        """Parse metadata.json's object; raises ``ValueError`` naming unknown, missing or mistyped fields."""
        if not isinstance(data, dict):
            raise ValueError(f"metadata must be a JSON object, got {type(data).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown metadata field(s) {unknown}; allowed: {sorted(names)}")
        missing = sorted(f.name for f in fields(cls) if f.name not in data and f.name != "notes")
        if missing:
            raise ValueError(f"metadata is missing the field(s) {missing}")
        return cls(**data)


def build_manifest(files: dict[str, bytes]) -> bytes:
    """The manifest for ``files`` (every member but the manifest itself), as canonical JSON bytes."""
    entries = {name: {"sha256": sha256_hex(data), "bytes": len(data)} for name, data in sorted(files.items())}
    document = {"format": FORMAT, "format_version": FORMAT_VERSION, "files": entries}
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()


def check_manifest(members: dict[str, bytes]) -> list[str]:
    """Problems with the manifest of an unpacked archive: format, hash or size mismatches, unlisted files."""
    if MANIFEST not in members:
        return [f"archive has no {MANIFEST}"]
    try:
        document = json.loads(members[MANIFEST])
    except (ValueError, RecursionError) as exc:
        return [f"{MANIFEST} is malformed JSON: {exc}"]
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return [f"{MANIFEST} is not a {FORMAT} manifest"]
    if document.get("format_version") != FORMAT_VERSION:
        return [f"{MANIFEST}: format_version {document.get('format_version')!r} is not supported ({FORMAT_VERSION})"]
    listed = document.get("files")
    if not isinstance(listed, dict):
        return [f"{MANIFEST}: 'files' must be an object"]
    problems = []
    for name in sorted(set(listed) | set(members) - {MANIFEST}):
        entry = listed.get(name)
        if name not in members:
            problems.append(f"{MANIFEST} lists {name}, which the archive does not contain")
        elif entry is None:
            problems.append(f"{name} is in the archive but not in {MANIFEST}")
        elif not isinstance(entry, dict) or entry.get("sha256") != sha256_hex(members[name]):
            problems.append(f"{name}: sha256 does not match {MANIFEST} (the file was changed after packing)")
        elif entry.get("bytes") != len(members[name]):
            problems.append(f"{name}: size does not match {MANIFEST}")
    for name in RUN_FILES_REQUIRED + (METADATA,):
        if name not in members:
            problems.append(f"archive has no {name}")
    return problems
