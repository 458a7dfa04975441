"""Shared helpers of the leaderboard tests: the mini suite and a forger's toolkit."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
from pathlib import Path

from leaderboard.pack import read_archive, write_archive
from leaderboard.suite import OFFICIAL, Suite, SuiteEntry

AGENTS = ("oracle", "random")
MINI = Suite(
    "mini",
    "1",
    tuple(SuiteEntry(entry.env_id, entry.seeds[:4], 2, entry.kwargs) for entry in OFFICIAL.entries),
)
"""The official envs on 4 seeds x 2 samples: tampering tests edit and repack this, not the full split."""


class Forgery:
    """An unpacked submission to edit; ``save`` repacks it with a fresh manifest (what a forger would do)."""

    def __init__(self, archive: Path, out_dir: Path) -> None:
        self.members = read_archive(archive)
        self.out_dir = out_dir
        self.episodes = [json.loads(line) for line in self.members["episodes.jsonl"].splitlines()]

    def find(self, env_id: str, **where) -> int:
        """Index of the first episode of ``env_id`` matching ``where`` (``min_turns=n``: at least n turns)."""
        for index, ep in enumerate(self.episodes):
            if ep["env_id"] != env_id:
                continue
            if all((len(ep["turns"]) >= v) if k == "min_turns" else ep[k] == v for k, v in where.items()):
                return index
        raise LookupError(f"no {env_id} episode with {where}")

    def name(self, index: int) -> str:
        ep = self.episodes[index]
        return f"episode {ep['env_id']} seed {ep['seed']} sample {ep['sample']}"

    def save(self, name: str = "forged", *, keep_manifest: bool = False) -> Path:
        members = dict(self.members)
        members["episodes.jsonl"] = "".join(
            json.dumps(ep, ensure_ascii=False, separators=(",", ":")) + "\n" for ep in self.episodes
        ).encode()
        path = self.out_dir / f"{name}.ragen.tar.gz"
        if keep_manifest:  # the archive as packed, but for the edit: the old manifest no longer matches
            _write_raw(path, members)
        else:
            write_archive(path, members)
        return path


def _write_raw(path: Path, members: dict[str, bytes]) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(buffer.getvalue()))
