"""The leaderboard's evaluation suites: which envs (id, kwargs), which seeds, how many samples per seed.

A suite is *data*, versioned as a whole: any change to its entries (an env bumped to ``-v1``, a kwarg, a
seed range) ships as a new ``version``, and a submission names the suite and version it was run on.

Two splits:

- ``official``: public seeds, listed in the suite. Anyone can run them (``harness run … --suite official``).
- ``hidden``: seeds derived from a maintainer's secret: per env, consecutive seeds from a start
  ``HMAC-SHA256(secret, "<season>/<env id>")`` in [2**20, 2**31), so they cannot be guessed or trained
  on. Only ``sha256(secret)`` is published (``HiddenSplit``); a maintainer evaluates a model on the hidden
  seeds of a season (``harness run … --suite official --split hidden --secret-file F``), and
  ``leaderboard verify --secret-file F`` checks such a submission. A new season is a new secret.

A run is matched to a suite by its content: the harness's config.json lists each env's id, kwargs, seed
range and samples, and :func:`identify_run` finds the suite and split those equal.
"""

from __future__ import annotations

import difflib
import hashlib
import hmac
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

SPLITS = ("official", "hidden")
HIDDEN_SEED_LOW = 1 << 20
"""Hidden seeds lie in [2**20, 2**31): disjoint from the small public seed ranges."""

_ENV_ID = re.compile(r"^ragen/[A-Za-z][A-Za-z0-9_.-]*-v(\d+)$")


def env_version(env_id: str) -> int:
    """The ``N`` of ``ragen/Name-vN``; ``ValueError`` for an id that is not of that form."""
    match = _ENV_ID.match(env_id) if isinstance(env_id, str) else None
    if match is None:
        raise ValueError(f"env_id must look like 'ragen/Name-vN', got {env_id!r}")
    return int(match.group(1))


@dataclass(frozen=True)
class SuiteEntry:
    """One env of a suite: the id (which pins the env version), its kwargs, its public eval seeds."""

    env_id: str
    seeds: tuple[int, ...]
    samples_per_seed: int = 4
    """Rollouts per seed (all on the same seed): pass@k and the in-group reward variance need k > 1."""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments of ``gym.make`` (JSON values only: they are recorded and replayed)."""

    def __post_init__(self) -> None:
        env_version(self.env_id)
        object.__setattr__(self, "seeds", tuple(self.seeds))
        object.__setattr__(self, "kwargs", dict(self.kwargs))
        if not self.seeds:
            raise ValueError(f"{self.env_id}: seeds must not be empty")
        for seed in self.seeds:
            if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
                raise ValueError(f"{self.env_id}: every seed must be an integer in [0, 2**31), got {seed!r}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"{self.env_id}: seeds must be distinct")
        if isinstance(self.samples_per_seed, bool) or not isinstance(self.samples_per_seed, int):
            raise ValueError(f"{self.env_id}: samples_per_seed must be an integer, got {self.samples_per_seed!r}")
        if not 1 <= self.samples_per_seed <= 64:
            raise ValueError(f"{self.env_id}: samples_per_seed must be in [1, 64], got {self.samples_per_seed}")
        try:
            json.dumps(self.kwargs, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{self.env_id}: kwargs must be JSON values ({exc})") from None

    def to_dict(self) -> dict[str, Any]:
        """The entry as canonical JSON-ready data (kwargs sorted by key)."""
        return {
            "env_id": self.env_id,
            "kwargs": dict(sorted(self.kwargs.items())),
            "seeds": list(self.seeds),
            "samples_per_seed": self.samples_per_seed,
        }


@dataclass(frozen=True)
class HiddenSplit:
    """A season of hidden seeds: ``seeds_per_env`` seeds per env, derived from a secret of known hash."""

    season: str
    secret_sha256: str
    seeds_per_env: int = 64

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,40}", self.season or ""):
            raise ValueError(f"season must be 1-40 characters of [A-Za-z0-9._-], got {self.season!r}")
        if not re.fullmatch(r"[0-9a-f]{64}", self.secret_sha256 or ""):
            raise ValueError(f"secret_sha256 must be 64 lowercase hex digits, got {self.secret_sha256!r}")
        if isinstance(self.seeds_per_env, bool) or not isinstance(self.seeds_per_env, int):
            raise ValueError(f"seeds_per_env must be an integer, got {self.seeds_per_env!r}")
        if not 1 <= self.seeds_per_env <= 100_000:
            raise ValueError(f"seeds_per_env must be in [1, 100000], got {self.seeds_per_env}")

    def check_secret(self, secret: bytes) -> None:
        """Raise ``ValueError`` unless ``sha256(secret)`` is the published hash."""
        if not isinstance(secret, bytes) or not secret:
            raise ValueError("secret must be non-empty bytes")
        if not hmac.compare_digest(hashlib.sha256(secret).hexdigest(), self.secret_sha256):
            raise ValueError(
                f"the secret does not match season {self.season!r}: its sha256 must be {self.secret_sha256[:16]}…"
            )

    def seeds(self, secret: bytes, env_id: str) -> tuple[int, ...]:
        """The season's hidden seeds of ``env_id`` (checks the secret first)."""
        self.check_secret(secret)
        return hidden_seeds(secret, self.season, env_id, self.seeds_per_env)

    def to_dict(self) -> dict[str, Any]:
        """The hidden split's public description (season, secret hash, seeds per env); never the secret."""
        return {"season": self.season, "secret_sha256": self.secret_sha256, "seeds_per_env": self.seeds_per_env}


def hidden_seeds(secret: bytes, season: str, env_id: str, count: int) -> tuple[int, ...]:
    """``count`` consecutive seeds from a secret start in [2**20, 2**31): HMAC-SHA256(secret, "<season>/<env id>").

    Consecutive, so a hidden split runs through the harness like the public one (an env plan is a seed
    range); the start is one of ~2**31 values that cannot be guessed without the secret.
    """
    digest = hmac.new(secret, f"{season}/{env_id}".encode(), hashlib.sha256).digest()
    start = HIDDEN_SEED_LOW + int.from_bytes(digest[:8], "big") % (2**31 - HIDDEN_SEED_LOW - count)
    return tuple(range(start, start + count))


def new_secret() -> tuple[bytes, str]:
    """A fresh 32-byte secret (hex text, as stored in a secret file) and its sha256 to publish."""
    import secrets

    secret = secrets.token_hex(32).encode()
    return secret, hashlib.sha256(secret).hexdigest()


def read_secret(path: str | Path) -> bytes:
    """Read a secret file (surrounding whitespace stripped)."""
    data = Path(path).read_bytes().strip()
    if not data:
        raise ValueError(f"secret file {path} is empty")
    return data


class Episode(NamedTuple):
    """One expected episode of a split: env id, seed, sample index (a tuple: hashed fast in big splits)."""

    env_id: str
    seed: int
    sample: int

    def __str__(self) -> str:
        return f"{self.env_id} seed {self.seed} sample {self.sample}"


@dataclass(frozen=True)
class Suite:
    """A versioned set of :class:`SuiteEntry`, plus an optional hidden split."""

    name: str
    version: str
    entries: tuple[SuiteEntry, ...]
    hidden: HiddenSplit | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(self.entries))
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,40}", self.name or ""):
            raise ValueError(f"suite name must be 1-40 characters of [A-Za-z0-9._-], got {self.name!r}")
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,40}", self.version or ""):
            raise ValueError(f"suite version must be 1-40 characters of [A-Za-z0-9._-], got {self.version!r}")
        if not self.entries:
            raise ValueError(f"suite {self.name!r} has no entries")
        ids = [entry.env_id for entry in self.entries]
        if len(set(ids)) != len(ids):
            raise ValueError(f"suite {self.name!r} lists an env id twice: {sorted(ids)}")

    @property
    def label(self) -> str:
        """``<name>-<version>``, how the site and error messages name the suite."""
        return f"{self.name}-{self.version}"

    @property
    def env_ids(self) -> tuple[str, ...]:
        """The suite's env ids, in entry order."""
        return tuple(entry.env_id for entry in self.entries)

    def entry(self, env_id: str) -> SuiteEntry:
        """The entry for ``env_id``; raises ``KeyError`` with a did-you-mean when the suite lacks it."""
        for entry in self.entries:
            if entry.env_id == env_id:
                return entry
        raise KeyError(f"{env_id!r} is not in suite {self.label}.{did_you_mean(env_id, self.env_ids)}")

    def seeds(self, env_id: str, split: str = "official", secret: bytes | None = None) -> tuple[int, ...]:
        """The eval seeds of ``env_id`` in ``split`` (the hidden split needs the secret)."""
        check_split(split)
        entry = self.entry(env_id)
        if split == "official":
            return entry.seeds
        if self.hidden is None:
            raise ValueError(f"suite {self.label} has no hidden split")
        if secret is None:
            raise ValueError(f"the hidden split of suite {self.label} needs the maintainer's secret (--secret-file)")
        return self.hidden.seeds(secret, env_id)

    def episodes(self, split: str = "official", secret: bytes | None = None) -> Iterator[Episode]:
        """Every (env id, seed, sample) a complete run of ``split`` holds, in suite order."""
        for entry in self.entries:
            for seed in self.seeds(entry.env_id, split, secret):
                for sample in range(entry.samples_per_seed):
                    yield Episode(entry.env_id, seed, sample)

    def to_dict(self) -> dict[str, Any]:
        """The suite as JSON-ready data, the inverse of :meth:`from_dict`."""
        return {
            "name": self.name,
            "version": self.version,
            "entries": [entry.to_dict() for entry in self.entries],
            "hidden": None if self.hidden is None else self.hidden.to_dict(),
        }

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of the suite: two suites with the same fingerprint are the same split."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Suite:
        """Parse a suite from JSON data; raises ``ValueError`` naming unknown, missing or malformed fields."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a suite must be a JSON object, got {type(data).__name__}")
        unknown = set(data) - {"name", "version", "entries", "hidden"}
        if unknown:
            raise ValueError(f"unknown suite field(s) {sorted(unknown)}; allowed: name, version, entries, hidden")
        try:
            entries = []
            for item in data["entries"]:
                extra = set(item) - {"env_id", "kwargs", "seeds", "samples_per_seed"}
                if extra:
                    raise ValueError(f"unknown suite entry field(s) {sorted(extra)}")
                entries.append(
                    SuiteEntry(
                        env_id=item["env_id"],
                        seeds=_seed_list(item["seeds"]),
                        samples_per_seed=item.get("samples_per_seed", 4),
                        kwargs=item.get("kwargs", {}),
                    )
                )
            hidden = data.get("hidden")
            return cls(
                name=data["name"],
                version=data["version"],
                entries=tuple(entries),
                hidden=None if hidden is None else HiddenSplit(**hidden),
            )
        except KeyError as exc:
            raise ValueError(f"suite is missing the field {exc}") from None
        except TypeError as exc:
            raise ValueError(f"malformed suite: {exc}") from None


def _seed_list(value: Any) -> tuple[int, ...]:
    """Seeds as a list, or ``{"start": a, "count": n}`` for a range."""
    if isinstance(value, Mapping):
        return tuple(range(int(value["start"]), int(value["start"]) + int(value["count"])))
    return tuple(value)


def check_split(split: str) -> None:
    """Raise ``ValueError`` (with a did-you-mean) unless ``split`` is one of :data:`SPLITS`."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}.{did_you_mean(split, SPLITS)}")


def did_you_mean(word: Any, choices: tuple[str, ...] | list[str]) -> str:
    """``" Did you mean 'x'?"`` when a choice is close to ``word``, else ``""``."""
    close = difflib.get_close_matches(str(word), list(choices), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


# ---- the official suite -------------------------------------------------------------------------------------
# Public seeds start at 10_000: away from the small seeds (0, 1, 2, …) that examples and training runs use.
# Any change below ships as a new OFFICIAL version; submissions name the version they ran.
# ragen/CodeExec-v0 is not in version 1: its episodes run programs under time limits in a sandbox, and an
# outcome that depends on the verifier machine's load could reject an honest submission.
_OFFICIAL_SEEDS = tuple(range(10_000, 10_064))

_HIDDEN_2026_S1 = HiddenSplit(
    season="2026-s1",
    # sha256 of the season's secret; the secret itself stays with the maintainers.
    secret_sha256="8fb9070c32730f817478fd3970c419263a1ae3c2558521f12ff27b7af80b9d65",
    seeds_per_env=64,
)

OFFICIAL_V1 = Suite(
    name="official",
    version="1",
    entries=(
        SuiteEntry("ragen/Sokoban-v0", _OFFICIAL_SEEDS, samples_per_seed=4),
        SuiteEntry("ragen/FrozenLake-v0", _OFFICIAL_SEEDS, samples_per_seed=4),
        SuiteEntry("ragen/Bandit-v0", _OFFICIAL_SEEDS, samples_per_seed=4),
        SuiteEntry("ragen/Countdown-v0", _OFFICIAL_SEEDS, samples_per_seed=4),
        SuiteEntry("ragen/MathWord-v0", _OFFICIAL_SEEDS, samples_per_seed=4),
        # page rendering per step: half the seeds keep a full evaluation within minutes on a CPU
        SuiteEntry("ragen/WebShop-v0", _OFFICIAL_SEEDS[:32], samples_per_seed=4),
    ),
    hidden=_HIDDEN_2026_S1,
)

# Version 2 adds ragen/SearchQA-v0 (the paper's search env) with the full public seed range; everything else, and
# the hidden season, is version 1's, so version 1 runs still verify against version 1.
OFFICIAL = Suite(
    name="official",
    version="2",
    entries=(*OFFICIAL_V1.entries, SuiteEntry("ragen/SearchQA-v0", _OFFICIAL_SEEDS, samples_per_seed=4)),
    hidden=_HIDDEN_2026_S1,
)

SUITES: dict[str, Suite] = {OFFICIAL.name: OFFICIAL}
"""The current version of each built-in suite (what ``--suite official`` runs)."""
SUITE_VERSIONS: tuple[Suite, ...] = (OFFICIAL_V1, OFFICIAL)
"""Every built-in suite version, old ones included: a submission is verified against the version it names."""


def load_suite(name_or_path: str | Path) -> Suite:
    """``"official"`` (its current version), ``"official-<version>"`` (any built-in version), or a suite JSON file."""
    text = str(name_or_path)
    if text in SUITES:
        return SUITES[text]
    for suite in SUITE_VERSIONS:
        if text == suite.label:
            return suite
    path = Path(text)
    if path.suffix == ".json" or path.exists():
        if not path.is_file():
            raise ValueError(f"suite file {path} does not exist")
        try:
            return Suite.from_dict(json.loads(path.read_text()))
        except json.JSONDecodeError as exc:
            raise ValueError(f"suite file {path} is not valid JSON: {exc}") from None
    known = sorted(SUITES) + sorted(s.label for s in SUITE_VERSIONS)
    raise ValueError(
        f"unknown suite {text!r}.{did_you_mean(text, known)} Available: {', '.join(known)}, or a .json file"
    )


def find_suite(name: str, version: str) -> Suite | None:
    """The built-in suite with this name and version (current or older), if any."""
    return next((suite for suite in SUITE_VERSIONS if (suite.name, suite.version) == (name, version)), None)
