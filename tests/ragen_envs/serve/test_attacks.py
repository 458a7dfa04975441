"""Attacks from the network side of the server, all on loopback: a browser page of another site (cross-site
WebSocket, DNS rebinding), connections that never send a request, and one address holding every descriptor."""

from __future__ import annotations

import json
import select
import socket
import time
import urllib.parse

import gymnasium as gym
import pytest
from conftest import wait_until
from websockets.sync.client import connect

from ragen_envs.serve import Client, ServeConfig, ServerGone
from ragen_envs.serve.client import ws_url

ENV_ID = "ragen/Sokoban-v0"
TOKEN = "t0k3n-for-the-tests-only-0123456789"


def _address(url: str) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(url)
    return parts.hostname, parts.port


def request(url: str, path: str = "/ws", *, host: str | None = None, **headers: str) -> tuple[int, str]:
    """(status, body) of one raw HTTP/1.1 request; ``/ws`` is a WebSocket handshake. ``host``: the Host header."""
    address = _address(url)
    lines = [f"GET {path} HTTP/1.1", f"Host: {host or f'{address[0]}:{address[1]}'}"]
    if path == "/ws":
        lines += ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]  # fmt: skip
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data or (not data.startswith(b"HTTP/1.1 101") and not _complete(data)):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("utf-8", "replace")


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return False


def _sessions(url: str) -> int:
    status, body = request(url, "/health")
    assert status == 200, body
    return json.loads(body)["sessions"]


def test_pages_of_other_sites_cannot_open_sessions(sokoban_server):
    url = sokoban_server.url
    _, port = _address(url)
    before = _sessions(url)
    # What OpenEnv's and our clients send (no Origin), by address or by localhost: served.
    assert request(url)[0] == 101
    assert request(url, host=f"localhost:{port}")[0] == 101
    # A page of another site (every browser sends its Origin), or a sandboxed frame ("null"): refused.
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{port}.evil.example"):
        status, body = request(url, Origin=origin)
        assert status == 403 and "--allow-origin" in body, (origin, status, body)
    # DNS rebinding: the page's own name resolves to 127.0.0.1, so its Host is that name; refused everywhere.
    for path in ("/ws", "/health", "/metadata"):
        status, body = request(url, path, host=f"rebind.evil.example:{port}")
        assert status == 403 and "--allow-host rebind.evil.example" in body, (path, status, body)
    # No slot was taken by any of them.
    wait_until(lambda: _sessions(url) <= before, what="the accepted probe sessions to close")


def test_allow_origin_admits_that_origin_only(start_server):
    server = start_server(ENV_ID, "--allow-origin", "http://localhost:3000/")
    assert request(server.url, Origin="http://localhost:3000")[0] == 101
    assert request(server.url, Origin="http://localhost:3001")[0] == 403


def test_a_token_is_asked_of_every_request(start_server, tmp_path):
    (tmp_path / "token").write_text(TOKEN + "\n")
    server = start_server(ENV_ID, "--token-file", str(tmp_path / "token"))
    assert request(server.url)[0] == 401
    assert request(server.url, Authorization=f"Bearer {TOKEN[:-1]}x")[0] == 401
    assert request(server.url, "/health", Authorization="Basic " + TOKEN)[0] == 401
    assert request(server.url, Authorization=f"Bearer {TOKEN}")[0] == 101
    with pytest.raises(ServerGone, match="HTTP 401: This server needs its bearer token"):
        Client(server.url)
    with Client(server.url, token=TOKEN) as remote:
        assert remote.reset(seed=4)[0] == gym.make(ENV_ID).reset(seed=4)[0]


def test_beyond_loopback_a_token_is_required():
    with pytest.raises(ValueError, match="--token-file"):
        ServeConfig(env_id=ENV_ID, host="0.0.0.0")
    with pytest.raises(ValueError, match="--token-file"):
        ServeConfig(env_id=ENV_ID, host="gpu-box.example")
    with pytest.raises(ValueError, match="at least 16 characters"):
        ServeConfig(env_id=ENV_ID, host="0.0.0.0", token="short")
    with pytest.raises(ValueError, match="--allow-origin takes an origin"):
        ServeConfig(env_id=ENV_ID, allow_origins=("evil.example",))
    assert ServeConfig(env_id=ENV_ID, host="0.0.0.0", token=TOKEN).token == TOKEN
    assert TOKEN not in repr(ServeConfig(env_id=ENV_ID, host="0.0.0.0", token=TOKEN))


def test_connections_that_never_send_a_request_are_closed(sokoban_server):
    address = _address(sokoban_server.url)
    silent = socket.create_connection(address, timeout=40)
    slow = socket.create_connection(address, timeout=40)
    started = time.monotonic()
    try:
        slow.sendall(b"GET /health HTTP/1.1\r\n")
        slow.settimeout(1.0)
        answer = b""
        while not answer and time.monotonic() - started < 40:  # one header byte a second: slowloris
            try:
                answer = slow.recv(4096)
            except TimeoutError:
                slow.sendall(b"X")
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert silent.recv(4096).startswith(b"HTTP/1.1 408")  # default --request-timeout 10 s
        assert silent.recv(4096) == b""  # and closed
        assert time.monotonic() - started < 30
    finally:
        silent.close()
        slow.close()


def _flood(address: tuple[str, int], source: str, count: int, refusals: int, within: float = 8.0):
    """``count`` connections from ``source`` that send nothing; waits up to ``within`` s for ``refusals`` of them
    to be answered 503. Returns (the unanswered ones, still open; how many got a 503)."""
    socks = []
    for _ in range(count):
        try:
            socks.append(socket.create_connection(address, timeout=5, source_address=(source, 0)))
        except OSError:
            continue
    pending, refused, deadline = list(socks), 0, time.monotonic() + within
    while pending and refused < refusals and time.monotonic() < deadline:
        readable, _, _ = select.select(pending, [], [], 0.2)
        for sock in readable:
            try:
                first = sock.recv(64)
            except OSError:
                first = b""
            refused += first.startswith(b"HTTP/1.1 503")
            pending.remove(sock)
            sock.close()
    return pending, refused


def test_one_address_cannot_take_every_descriptor(start_server):
    # 128 descriptors, as in a container with a low limit; 140 silent connections from 127.0.0.2.
    server = start_server(ENV_ID, "--max-sessions", "8", descriptors=128)
    held, refused = _flood(_address(server.url), "127.0.0.2", 140, refusals=140 - 16)
    try:
        assert len(held) <= 16 and refused >= 140 - 16, (len(held), refused)  # --max-sessions + 8 per peer
        with Client(server.url, connect_timeout=10) as remote:  # from 127.0.0.1: still served
            assert remote.reset(seed=1)[0] == gym.make(ENV_ID).reset(seed=1)[0]
    finally:
        for sock in held:
            sock.close()


def test_the_total_cap_holds_and_frees_as_silent_connections_time_out(start_server):
    server = start_server(ENV_ID, "--max-connections", "12", "--max-connections-per-peer", "6",
                          "--request-timeout", "6", "--max-sessions", "4")  # fmt: skip
    address = _address(server.url)
    floods = [_flood(address, f"127.0.0.{peer}", 8, refusals) for peer, refusals in ((2, 2), (3, 2), (4, 8))]
    try:
        held = sum(len(h) for h, _ in floods)
        assert held == 12 and sum(r for _, r in floods) == 24 - 12, [(len(h), r) for h, r in floods]
        for socks, _ in floods:  # past --request-timeout: the silent ones are answered 408 and closed
            for sock in socks:
                sock.setblocking(True)
                sock.settimeout(15)
                assert sock.recv(64).startswith(b"HTTP/1.1 408")
        with Client(server.url) as remote:
            remote.reset(seed=0)
            # A session is past the request deadline once its handshake is in, whatever its headers claim.
            with connect(ws_url(server.url), additional_headers={"X-Forwarded-For": "203.0.113.9"}) as sock:
                time.sleep(7)
                sock.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
                assert json.loads(sock.recv(timeout=30))["type"] == "observation"
            assert remote.step("<think>x</think><answer>Up</answer>")[0]
    finally:
        for socks, _ in floods:
            for sock in socks:
                sock.close()
