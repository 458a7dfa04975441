"""Packing a harness run into a submission archive, and reading one back without trusting it.

``pack_run`` writes a deterministic ``.ragen.tar.gz`` (sorted members, mtime 0, uid/gid 0, mode 0644).

``read_submission`` reads the file once: a regular file (not a FIFO, device or directory), reached without
following a symbolic link, at most ``max_archive_bytes``; what is verified and stored are those bytes.
``read_archive`` never extracts to disk: it streams the gzip'd tar once, keeps the members in memory, and
stops at the first thing a submission may not contain: absolute paths, ``..``, backslashes or NULs in a
name, links (symbolic or hard), devices, FIFOs, directories or any non-regular member, duplicate or
unexpected names, more than ``max_members`` members, a member over ``max_member_bytes`` (a JSON, CSV or Markdown
member over ``max_small_member_bytes``: they are parsed or rendered whole), or more than
``max_total_bytes`` decompressed (counted on the decompressed stream itself, so a decompression bomb is
cut off after at most that many bytes, whatever its headers claim). A truncated or corrupt archive is
reported as such.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from leaderboard.schema import (
    MANIFEST,
    METADATA,
    RUN_FILES_OPTIONAL,
    RUN_FILES_REQUIRED,
    SubmissionMetadata,
    allowed_member,
    build_manifest,
)
from leaderboard.suite import Suite

SUFFIX = ".ragen.tar.gz"


class ArchiveError(ValueError):
    """The archive is unsafe or malformed; the message says why."""


@dataclass(frozen=True)
class Limits:
    """Caps applied while reading an archive (defaults fit the official suite with a wide margin)."""

    max_archive_bytes: int = 256 << 20
    """Compressed size of the file on disk."""
    max_total_bytes: int = 512 << 20
    """Decompressed bytes read from the stream, tar headers included."""
    max_member_bytes: int = 384 << 20
    max_small_member_bytes: int = 1 << 20
    """Every member but episodes.jsonl and the plots (an honest one is under 64 KiB): checked before it is parsed."""
    max_members: int = 64


def _member_cap(name: str, limits: Limits) -> int:
    big = name == "episodes.jsonl" or name.endswith(".png")
    return limits.max_member_bytes if big else min(limits.max_member_bytes, limits.max_small_member_bytes)


def _check_name(name: str) -> None:
    if not name or "\x00" in name or "\\" in name:
        raise ArchiveError(f"archive member {name!r} has an invalid name")
    if name.startswith("/") or PurePosixPath(name).is_absolute():
        raise ArchiveError(f"archive member {name!r} has an absolute path")
    if ".." in PurePosixPath(name).parts:
        raise ArchiveError(f"archive member {name!r} contains '..'")
    if not allowed_member(name):
        raise ArchiveError(f"archive member {name!r} is not part of the submission format")


def _check_kind(member: tarfile.TarInfo) -> None:
    if member.issym():
        raise ArchiveError(f"archive member {member.name!r} is a symbolic link (to {member.linkname!r})")
    if member.islnk():
        raise ArchiveError(f"archive member {member.name!r} is a hard link (to {member.linkname!r})")
    if member.isdev() or member.ischr() or member.isblk() or member.isfifo():
        raise ArchiveError(f"archive member {member.name!r} is a device or FIFO")
    if not member.isfile():
        raise ArchiveError(f"archive member {member.name!r} is not a regular file")


def read_submission(path: str | Path, limits: Limits | None = None) -> bytes:
    """The bytes of the archive file at ``path``, read once; :class:`ArchiveError` when it is not a regular file,
    is reached through a symbolic link, or holds more than ``max_archive_bytes``."""
    limits = limits or Limits()
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)  # a FIFO opens without a writer
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise ArchiveError(f"{path} is a symbolic link; give the archive file itself") from None
        raise ArchiveError(f"cannot read {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb", buffering=0) as raw:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ArchiveError(f"{path} is not a regular file (a FIFO, device or directory); give the archive file")
        if info.st_size > limits.max_archive_bytes:
            raise ArchiveError(f"archive is {info.st_size:,} bytes, over the {limits.max_archive_bytes:,}-byte limit")
        os.set_blocking(fd, True)
        parts, size = [], 0
        while chunk := raw.read(min(1 << 20, limits.max_archive_bytes + 1 - size) or 1):
            parts.append(chunk)
            size += len(chunk)
            if size > limits.max_archive_bytes:  # it grew while being read
                raise ArchiveError(f"archive is over the {limits.max_archive_bytes:,}-byte limit")
    return b"".join(parts)


def read_archive(source: str | Path | bytes, limits: Limits | None = None) -> dict[str, bytes]:
    """Every member of a submission (its file's path, or the bytes :func:`read_submission` read) as
    ``{name: bytes}``; :class:`ArchiveError` if unsafe or broken."""
    limits = limits or Limits()
    data = source if isinstance(source, bytes) else read_submission(source, limits)
    if len(data) > limits.max_archive_bytes:
        raise ArchiveError(f"archive is {len(data):,} bytes, over the {limits.max_archive_bytes:,}-byte limit")
    stream = _gunzip_one_member(data, limits.max_total_bytes)
    members: dict[str, bytes] = {}
    total_declared = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(stream), mode="r:") as tar:
            for member in tar:
                if len(members) >= limits.max_members:
                    raise ArchiveError(f"archive has more than {limits.max_members} members (limit)")
                _check_name(member.name)
                _check_kind(member)
                if member.name in members:
                    raise ArchiveError(f"archive member {member.name!r} appears twice")
                cap = _member_cap(member.name, limits)
                if member.size > cap:
                    raise ArchiveError(
                        f"archive member {member.name!r} is {member.size:,} bytes, over the {cap:,}-byte limit"
                    )
                total_declared += member.size
                if total_declared > limits.max_total_bytes:
                    raise ArchiveError(
                        f"archive decompresses to more than {limits.max_total_bytes:,} bytes (limit); refusing it"
                    )
                handle = tar.extractfile(member)
                data = handle.read() if handle is not None else b""
                if len(data) != member.size:
                    raise ArchiveError(f"archive is truncated inside member {member.name!r}")
                members[member.name] = data
            end = tar.offset
    except ArchiveError:
        raise
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise ArchiveError(f"archive is truncated or corrupt ({type(exc).__name__}: {exc})") from None
    _check_tar_end(stream, end)
    if not members:
        raise ArchiveError("archive is empty")
    return members


def _gunzip_one_member(data: bytes, cap: int) -> bytes:
    """The decompressed ``data``, which must be exactly one gzip member and nothing after it.

    ``gzip``/``tar -xzf`` read concatenated members as one stream and ignore trailing bytes; an archive that
    carried a second member or trailing data could show ``tar`` other files than the ones verified here.
    """
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip framing, one member
    parts, total = [], 0
    view = memoryview(data)
    try:
        for start in range(0, len(view), 1 << 20):
            if inflater.eof:
                raise ArchiveError("archive has data after the end of its gzip stream (a second member or "
                                   "trailing bytes); refusing it")  # fmt: skip
            pending = view[start : start + (1 << 20)]
            while pending and not inflater.eof:
                out = inflater.decompress(pending, cap + 1 - total)
                total += len(out)
                if total > cap:
                    raise ArchiveError(f"archive decompresses to more than {cap:,} bytes (limit); refusing it")
                parts.append(out)
                pending = inflater.unconsumed_tail
            if inflater.eof and (inflater.unused_data or pending):
                raise ArchiveError("archive has data after the end of its gzip stream (a second member or "
                                   "trailing bytes); refusing it")  # fmt: skip
    except zlib.error as exc:
        raise ArchiveError(f"archive is truncated or corrupt (not a valid gzip stream: {exc})") from None
    if not inflater.eof:
        raise ArchiveError("archive is truncated or corrupt (the gzip stream does not end)")
    return b"".join(parts)


def _check_tar_end(stream: bytes, end: int) -> None:
    """After the last member: the end-of-archive marker (two zero blocks) and only zero padding, to the end."""
    tail = memoryview(stream)[end:]
    if len(tail) < 2 * tarfile.BLOCKSIZE or len(tail) % tarfile.BLOCKSIZE:
        raise ArchiveError("archive's tar stream does not end with an end-of-archive marker where the file ends")
    if tail.tobytes().strip(b"\0"):
        raise ArchiveError(
            "archive has data after its tar end-of-archive marker (another tar stream or hidden members); refusing it"
        )


def _tar_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode, info.uid, info.gid = len(data), 0, 0o644, 0, 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def write_archive(out: str | Path, files: dict[str, bytes]) -> Path:
    """Write ``files`` plus their manifest as a deterministic tar.gz at ``out``."""
    out = Path(out)
    members = {name: data for name, data in files.items() if name != MANIFEST}
    members[MANIFEST] = build_manifest(members)
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        for name in [MANIFEST, *sorted(n for n in members if n != MANIFEST)]:
            _tar_member(tar, name, members[name])
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(out)
    return out


def run_files(run_dir: str | Path) -> dict[str, bytes]:
    """The files of a harness run folder that go into a submission (required ones must exist)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ValueError(f"run folder {run_dir} does not exist")
    files: dict[str, bytes] = {}
    for name in RUN_FILES_REQUIRED:
        if not (run_dir / name).is_file():
            raise ValueError(f"run folder {run_dir} has no {name}: is it a finished harness run?")
        files[name] = (run_dir / name).read_bytes()
    for name in RUN_FILES_OPTIONAL:
        if (run_dir / name).is_file():
            files[name] = (run_dir / name).read_bytes()
    for png in sorted(run_dir.glob("*.png")) + sorted(run_dir.glob("plots/*.png")):
        name = png.relative_to(run_dir).as_posix()
        if allowed_member(name):
            files[name] = png.read_bytes()
    return files


def pack_run(
    run_dir: str | Path,
    out: str | Path,
    *,
    model_name: str,
    org: str,
    parameters: str = "unknown",
    weights: str = "closed",
    contact: str,
    date: str | None = None,
    notes: str = "",
    suite: Suite | None = None,
    secret: bytes | None = None,
) -> Path:
    """Pack the finished suite run at ``run_dir`` into the submission ``out``; return its path.

    Package version, git commit, agent and suite are taken from the run's ``config.json``; the run must
    be one agent on a suite split (``harness run <agent> --suite official``). ``suite`` restricts the match
    to that suite (default: any built-in one); ``secret`` lets a hidden-split run match.
    """
    import datetime as dt

    from leaderboard.records import run_identity

    files = run_files(run_dir)
    try:
        config = json.loads(files["config.json"])
    except json.JSONDecodeError as exc:
        raise ValueError(f"{run_dir}/config.json is not valid JSON: {exc}") from None
    identity = run_identity(config, suite, secret)
    metadata = SubmissionMetadata(
        model_name=model_name,
        org=org,
        parameters=parameters,
        weights=weights,
        contact=contact,
        date=date or dt.date.today().isoformat(),
        notes=notes,
        **identity,
    )
    files[METADATA] = (json.dumps(metadata.to_dict(), indent=2, sort_keys=True) + "\n").encode()
    out = Path(out)
    if not out.name.endswith(SUFFIX):
        raise ValueError(f"the submission file name must end with {SUFFIX}, got {out.name!r}")
    return write_archive(out, files)
