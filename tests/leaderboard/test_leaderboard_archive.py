"""Archive safety: nothing a hostile submission packs can escape, link, or exhaust memory or disk."""

from __future__ import annotations

import gzip
import io
import json
import tarfile
import zlib

import pytest

from leaderboard.pack import ArchiveError, Limits, read_archive, write_archive
from leaderboard.schema import build_manifest, check_manifest

GOOD = {"metadata.json": b"{}", "config.json": b"{}", "episodes.jsonl": b"{}\n", "summary.json": b"{}"}


def tar_gz(path, members, *, compress=True):
    """Write a tar(.gz) whose members are (TarInfo, bytes | None) pairs, exactly as given."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    path.write_bytes(gzip.compress(raw.getvalue()) if compress else raw.getvalue())
    return path


def regular(name, data=b"x"):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def test_round_trip_and_manifest(tmp_path):
    path = write_archive(tmp_path / "ok.ragen.tar.gz", GOOD)
    members = read_archive(path)
    assert {k: v for k, v in members.items() if k != "manifest.json"} == GOOD
    assert check_manifest(members) == []
    assert path.read_bytes() == write_archive(tmp_path / "again.ragen.tar.gz", GOOD).read_bytes()  # deterministic


def test_manifest_catches_edits_and_unlisted_files():
    members = {**GOOD, "manifest.json": build_manifest(GOOD)}
    edited = {**members, "episodes.jsonl": b"{}\n{}\n"}
    assert any("episodes.jsonl: sha256 does not match" in p for p in check_manifest(edited))
    extra = {**members, "report.md": b"# hi"}
    assert any("report.md is in the archive but not in manifest.json" in p for p in check_manifest(extra))
    missing = {k: v for k, v in members.items() if k != "summary.json"}
    assert any("lists summary.json, which the archive does not contain" in p for p in check_manifest(missing))
    assert "malformed JSON" in check_manifest({**members, "manifest.json": b"{"})[0]


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        (regular("/etc/passwd"), "absolute path"),
        (regular("../config.json"), "contains '..'"),
        (regular("plots/../../x.png"), "contains '..'"),
        (regular("a\\b.png"), "invalid name"),
        (regular("evil.sh"), "not part of the submission format"),
    ],
)
def test_bad_names_are_rejected(tmp_path, member, reason):
    path = tar_gz(tmp_path / "bad.ragen.tar.gz", [regular("config.json"), member])
    with pytest.raises(ArchiveError, match=reason):
        read_archive(path)


def _special(name, kind, linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        (_special("report.md", tarfile.SYMTYPE, "/etc/passwd"), "symbolic link"),
        (_special("report.md", tarfile.LNKTYPE, "config.json"), "hard link"),
        (_special("report.md", tarfile.CHRTYPE), "device or FIFO"),
        (_special("report.md", tarfile.BLKTYPE), "device or FIFO"),
        (_special("report.md", tarfile.FIFOTYPE), "device or FIFO"),
        (_special("plots/a.png", tarfile.DIRTYPE), "not a regular file"),
    ],
)
def test_links_devices_and_directories_are_rejected(tmp_path, member, reason):
    path = tar_gz(tmp_path / "bad.ragen.tar.gz", [regular("config.json"), member])
    with pytest.raises(ArchiveError, match=reason):
        read_archive(path)


def test_duplicate_member_is_rejected(tmp_path):
    path = tar_gz(tmp_path / "dup.ragen.tar.gz", [regular("config.json"), regular("config.json", b"y")])
    with pytest.raises(ArchiveError, match="appears twice"):
        read_archive(path)


def test_too_many_members(tmp_path):
    path = tar_gz(tmp_path / "many.ragen.tar.gz", [regular(f"p{i}.png") for i in range(10)])
    with pytest.raises(ArchiveError, match="more than 5 members"):
        read_archive(path, Limits(max_members=5))


def _bomb(path, gib: int) -> None:
    """A gzip stream that inflates to ``gib`` GiB of zeros behind one tar header, in ~1 MB on disk.

    gzip allows concatenated members, so one compressed MiB of zeros is repeated instead of compressed
    ``gib`` GiB of times.
    """
    header = tarfile.TarInfo("episodes.jsonl")
    header.size = gib << 30
    one_mib = gzip.compress(b"\0" * (1 << 20), compresslevel=9)
    with path.open("wb") as out:
        out.write(gzip.compress(header.tobuf(format=tarfile.GNU_FORMAT)))
        for _ in range(gib << 10):
            out.write(one_mib)


def test_decompression_bomb_is_cut_off_by_the_declared_size(tmp_path):
    path = tmp_path / "bomb.ragen.tar.gz"
    _bomb(path, 4)
    assert path.stat().st_size < 8 << 20
    # refused at the second gzip member already (a single-member bomb is cut off by the stream cap, below)
    with pytest.raises(ArchiveError, match="over the .*-byte limit|after the end of its gzip stream"):
        read_archive(path)


def test_decompression_bomb_is_cut_off_on_the_stream(tmp_path):
    # Many members each under the per-member cap: the stream counter stops it after max_total_bytes.
    path = tmp_path / "bomb2.ragen.tar.gz"
    members = [regular(f"p{i}.png", b"\0" * (1 << 20)) for i in range(40)]
    tar_gz(path, members)
    with pytest.raises(ArchiveError, match="decompresses to more than"):
        read_archive(path, Limits(max_total_bytes=8 << 20, max_member_bytes=2 << 20))


def test_stream_counter_also_catches_a_lying_header(tmp_path):
    # Headers alone (no data) also count: a flood of zero-size members is stopped by the stream cap.
    path = tar_gz(tmp_path / "headers.ragen.tar.gz", [regular(f"p{i}.png", b"") for i in range(50)])
    with pytest.raises(ArchiveError, match="decompresses to more than|more than 20 members"):
        read_archive(path, Limits(max_total_bytes=10_000, max_members=20))


@pytest.mark.parametrize("cut", [10, 200, -30])
def test_truncated_archive(tmp_path, cut):
    good = write_archive(tmp_path / "ok.ragen.tar.gz", {**GOOD, "report.md": bytes(range(256)) * 400})
    data = good.read_bytes()
    bad = tmp_path / "cut.ragen.tar.gz"
    bad.write_bytes(data[:cut] if cut > 0 else data[:cut])
    with pytest.raises(ArchiveError, match="truncated or corrupt|truncated inside"):
        read_archive(bad)


def test_not_gzip_or_empty(tmp_path):
    plain = tar_gz(tmp_path / "plain.ragen.tar.gz", [regular("config.json")], compress=False)
    with pytest.raises(ArchiveError, match="truncated or corrupt"):
        read_archive(plain)
    (tmp_path / "empty.ragen.tar.gz").write_bytes(gzip.compress(b"\0" * 1024))
    with pytest.raises(ArchiveError, match="empty"):
        read_archive(tmp_path / "empty.ragen.tar.gz")
    garbage = tmp_path / "garbage.ragen.tar.gz"
    garbage.write_bytes(zlib.compress(json.dumps(GOOD, default=str).encode()))
    with pytest.raises(ArchiveError):
        read_archive(garbage)


def test_oversized_archive_file_is_not_even_opened(tmp_path):
    path = write_archive(tmp_path / "ok.ragen.tar.gz", GOOD)
    with pytest.raises(ArchiveError, match="over the 100-byte limit"):
        read_archive(path, Limits(max_archive_bytes=100))


def test_verify_reports_unsafe_archives_instead_of_raising(tmp_path):
    from leaderboard.verify import verify

    bomb = tmp_path / "bomb.ragen.tar.gz"
    _bomb(bomb, 2)
    link = tar_gz(tmp_path / "link.ragen.tar.gz", [regular("config.json"), _special("report.md", tarfile.SYMTYPE, "/")])
    escape = tar_gz(tmp_path / "escape.ragen.tar.gz", [regular("../../etc/cron.d/x.png")])
    for path, reason in ((bomb, "gzip stream"), (link, "symbolic link"), (escape, "contains '..'")):
        report = verify(path)
        assert not report.ok and len(report.problems) == 1 and reason in report.problems[0]
