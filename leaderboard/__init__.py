"""Replay-verified leaderboard: submissions are re-simulated against the deterministic envs.

``leaderboard.verify(path) -> Report(ok, problems, summary)``; the ``leaderboard`` command (``cli.py``)
verifies, adds, builds, reruns. See docs/leaderboard.md.
"""

from leaderboard.verify import Report, verify

__all__ = ["Report", "verify"]
