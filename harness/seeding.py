"""Per-episode seeds: pure functions of the run seed and names, never ``hash()`` (salted per process)."""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from ``parts`` (ints and strings), identical in every process and on every machine."""
    text = "\x1f".join(f"{type(p).__name__}:{p}" for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little") >> 1


def response_seed(run_seed: int, env_id: str, env_seed: int, sample: int, turn: int) -> int:
    """The sampling seed of one response: run seed + (env, env seed, sample, turn)."""
    return derive_seed("response", run_seed, env_id, env_seed, sample, turn)
