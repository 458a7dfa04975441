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


def response_seeder(run_seed: int, env_id: str, env_seed: int, sample: int):
    """``turn -> response_seed(run_seed, env_id, env_seed, sample, turn)``, hashing the fixed part once (blake2b
    is streamed: the prefix's state is copied per turn), for the rollout's per-step loop."""
    parts = ("response", run_seed, env_id, env_seed, sample)
    base = hashlib.blake2b(("\x1f".join(f"{type(p).__name__}:{p}" for p in parts) + "\x1f").encode("utf-8"), digest_size=8)

    def seed(turn: int) -> int:
        h = base.copy()
        h.update(f"{type(turn).__name__}:{turn}".encode())
        return int.from_bytes(h.digest(), "little") >> 1

    return seed
