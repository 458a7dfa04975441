"""Distinct unprivileged uids for concurrent sandboxes.

RLIMIT_NPROC is not enforced for root and counts processes per uid, so every sandbox that runs at the same
time gets its own uid from a range nobody else uses. Slots are claimed with ``flock`` on files in a
root-only folder, so they are exclusive across processes too (e.g. the workers of an AsyncVectorEnv) and
are released automatically if the holder dies.
"""

from __future__ import annotations

import fcntl
import os
import threading

UID_BASE = 61000
SLOTS = 2000
# One fixed machine-wide folder (not $TMPDIR, which may differ between processes), so every process sees every
# claimed uid: in /run where the system has it (cleared at boot), else in /var/lock, the FHS's folder for locks.
LOCK_DIR = os.path.join("/run" if os.path.isdir("/run") else "/var/lock", "ragen-sandbox-uids")

_lock = threading.Lock()
_next = 0


class UidSlot:
    """A claimed uid; release it with :meth:`release` (or use as a context manager)."""

    def __init__(self) -> None:
        global _next
        os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
        with _lock:
            start = _next
            _next = (_next + 1) % SLOTS
        for i in range(SLOTS):
            slot = (start + i) % SLOTS
            fd = os.open(os.path.join(LOCK_DIR, str(slot)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.fd, self.uid = fd, UID_BASE + slot
            return
        raise RuntimeError(f"all {SLOTS} sandbox uids are in use")

    def release(self) -> None:
        """Give the uid back (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> UidSlot:
        return self

    def __exit__(self, *exc) -> None:
        self.release()
