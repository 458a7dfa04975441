"""Servers for the serve tests: real ``python -m ragen_envs.serve`` subprocesses on loopback, port 0."""

from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from tests.helpers.paths import ROOT

for module in ("openenv", "fastapi", "uvicorn", "websockets"):
    pytest.importorskip(module, reason="the serve extra is not installed: pip install 'ragen-envs[serve]'")

ADDRESS = re.compile(r" on (http://\S+) ")
START_TIMEOUT_S = 300.0  # importing openenv (gradio, fastmcp) takes ~5 s of CPU; far more on a loaded box


class Server:
    """A running server subprocess; :meth:`stop` ends it (SIGTERM, then SIGKILL)."""

    def __init__(self, env_id: str, *args: str, descriptors: int | None = None) -> None:
        """``descriptors``: the server's RLIMIT_NOFILE (soft and hard), e.g. to show what exhausting it does."""
        self.env_id = env_id
        self._stderr = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: a chatty server never blocks on it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ragen_envs.serve", "--env", env_id, "--port", "0", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            preexec_fn=None if descriptors is None else lambda: _limit_descriptors(descriptors),
        )
        self.url: str | None = None
        self._line = threading.Event()
        threading.Thread(target=self._read_address, daemon=True).start()

    def _read_address(self) -> None:
        line = self.proc.stdout.readline()
        match = ADDRESS.search(line)
        self.url = match.group(1) if match else None
        self._line.set()

    def wait(self) -> str:
        """The server's base URL, once it listens."""
        if not self._line.wait(START_TIMEOUT_S) or self.url is None:
            self.stop()
            raise RuntimeError(f"server for {self.env_id} did not start: {self.stderr()[-2000:]}")
        return self.url

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc.stdout.close()

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read()


def _limit_descriptors(count: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


@pytest.fixture
def start_server():
    """``start_server(env_id, *cli_args, descriptors=None) -> Server`` (already listening); every server is stopped
    afterwards."""
    started: list[Server] = []

    def start(env_id: str, *args: str, descriptors: int | None = None) -> Server:
        server = Server(env_id, *args, descriptors=descriptors)
        started.append(server)
        server.wait()
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def sokoban_server():
    """One default-flags Sokoban server shared by the tests that neither stop it nor need other flags."""
    server = Server("ragen/Sokoban-v0")
    try:
        server.wait()
        yield server
    finally:
        server.stop()


def wait_until(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
