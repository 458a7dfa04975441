"""Replay-verified leaderboard: submissions are re-simulated against the deterministic envs."""
