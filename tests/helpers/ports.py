"""A local TCP port for tests that start a server or need one nobody serves."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it; a fixed port collides with a concurrent run)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
