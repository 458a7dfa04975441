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


class ResponseSeeds:
    """``turn -> response_seed(run_seed, env_id, env_seed, sample, turn)`` for one episode, for the rollout's
    per-step loop: the fixed parts are hashed once, on first use (an agent that never reads a seed never pays
    for one), and blake2b's streamed state is copied per turn."""

    __slots__ = ("_parts", "_base")

    def __init__(self, run_seed: int, env_id: str, env_seed: int, sample: int) -> None:
        self._parts = ("response", run_seed, env_id, env_seed, sample)
        self._base = None

    def __call__(self, turn: int) -> int:
        """The response seed of ``turn`` in this episode, in [0, 2**63)."""
        base = self._base
        if base is None:
            text = "\x1f".join(f"{type(p).__name__}:{p}" for p in self._parts) + "\x1f"
            base = self._base = hashlib.blake2b(text.encode("utf-8"), digest_size=8)
        h = base.copy()
        h.update(f"{type(turn).__name__}:{turn}".encode())
        return int.from_bytes(h.digest(), "little") >> 1
