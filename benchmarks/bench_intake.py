"""Verify time and peak memory of one submission archive, for this checkout and another side by side.

    python benchmarks/bench_intake.py runs/official-oracle.ragen.tar.gz --baseline ../other-checkout --rounds 5
    python benchmarks/bench_intake.py ARCHIVE --baseline ../other-checkout --crafted-line-mib 24   # an attack

Each round verifies the archive once per checkout, in a fresh process each (so the peak resident memory is that
verify's, imports included), alternating checkouts so the shared machine's load falls on both alike. Reported:
the median CPU seconds of the ``verify`` call itself and the median peak RSS of the process, with the ratio of
this checkout to the baseline. The archive is made by ``harness run <agent> --suite official`` and
``harness submit``. ``--crafted-line-mib N`` measures instead a copy of it with one more episode line stuffed with
N MiB of empty JSON objects (a few KiB gzip'd; it is rejected, and the figure is what rejecting it costs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, resource, sys, time
from leaderboard.verify import verify
start = time.process_time()
report = verify(sys.argv[1])
cpu = time.process_time() - start
assert report.ok or sys.argv[2] == "attack", report.problems[:3]
print(json.dumps({"cpu_s": cpu, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(checkout: Path, archive: Path, kind: str) -> dict[str, float]:
    """One verify of ``archive`` with ``checkout``'s code, in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": "1"}
    argv = [sys.executable, "-c", CHILD, str(archive), kind]
    done = subprocess.run(argv, cwd=checkout, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def crafted(archive: Path, mib: int) -> Path:
    """A copy of ``archive`` with one more episode line holding ``mib`` MiB of ``{}`` (manifest redone)."""
    from leaderboard.pack import read_archive, write_archive

    members = read_archive(archive)
    first = json.loads(members["episodes.jsonl"].split(b"\n", 1)[0])
    line = json.dumps({**first, "sample": 999, "padding": [{}] * ((mib << 20) // 3)}, separators=(",", ":"))
    members["episodes.jsonl"] += line.encode() + b"\n"
    return write_archive(Path(tempfile.mkdtemp()) / f"crafted-{archive.name}", members)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("archive", type=Path)
    p.add_argument("--baseline", type=Path, required=True, help="another checkout (e.g. a worktree of main)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--crafted-line-mib", type=int, default=0, help="measure the archive plus one crafted line")
    args = p.parse_args()
    kind = "attack" if args.crafted_line_mib else "honest"
    archive = crafted(args.archive, args.crafted_line_mib) if args.crafted_line_mib else args.archive.resolve()
    if args.crafted_line_mib:
        print(f"{archive}: {archive.stat().st_size - args.archive.stat().st_size:,} bytes more than {args.archive}")
    checkouts = {"baseline": args.baseline.resolve(), "this": ROOT}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for _ in range(args.rounds):
        for name, checkout in checkouts.items():
            runs[name].append(measure(checkout, archive, kind))
    med = {name: {k: statistics.median(r[k] for r in rs) for k in ("cpu_s", "peak_mib")} for name, rs in runs.items()}
    print("| checkout | verify CPU s | peak RSS MiB |")
    print("|---|---:|---:|")
    for name in checkouts:
        print(f"| {name} | {med[name]['cpu_s']:.2f} | {med[name]['peak_mib']:.0f} |")
    ratio = {k: med["this"][k] / med["baseline"][k] for k in ("cpu_s", "peak_mib")}
    print(f"| this / baseline | {ratio['cpu_s']:.2f} | {ratio['peak_mib']:.2f} |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
