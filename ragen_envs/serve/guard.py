"""Who may talk to the server, and for how long a connection may stay silent.

Two mechanisms, both in front of every endpoint:

- :class:`Gate` (ASGI): before a request reaches a route, its ``Host`` must name this server (the bound
  address, ``localhost`` or an ``--allow-host``: a DNS-rebinding page carries its own domain there), an
  ``Origin`` header must be an ``--allow-origin`` (browsers send one on every cross-site WebSocket; clients
  that are not browsers send none), and with a token the request must carry ``Authorization: Bearer <token>``.
  The rules are the pure function :func:`refusal`. Plain HTTP answers close their connection, so every
  connection carries one HTTP request or one WebSocket session.
- :class:`ConnectionGuard` (transport level): at most ``max_total`` connections at once and ``max_per_peer``
  from one address, counted at accept (one more is answered 503 and closed before any parsing); a connection
  that has not delivered a complete request ``request_timeout`` seconds after accept is answered 408 and
  closed. After the handshake a session is the server's idle reaper's (``--idle-timeout``).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import re
import resource
from collections import Counter
from dataclasses import dataclass
from typing import Any

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
ORIGIN = re.compile(r"https?://[^/\s?#@]+")
DESCRIPTOR_RESERVE = 64
"""File descriptors kept for the envs, logs and the listening socket, beyond the connections' own."""
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address) is reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def check_origin(value: str) -> str:
    """``value`` normalised (lower case, no trailing slash) when it is an origin like ``https://app.example:8443``;
    ``ValueError`` naming the flag otherwise."""
    origin = value.strip().lower().rstrip("/")
    if not ORIGIN.fullmatch(origin):
        raise ValueError(
            f"--allow-origin takes an origin like http://localhost:3000 (scheme://host[:port]), got {value!r}"
        )
    return origin


def check_token(token: str) -> str:
    """``token`` when it can serve as a bearer token (one line of 16+ visible characters); ``ValueError`` otherwise."""
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or " " in token:
        raise ValueError(
            f"the token must be one line of at least {MIN_TOKEN_CHARS} characters without spaces"
            " (e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))' > token.txt)"
        )
    return token


@dataclass(frozen=True)
class AccessPolicy:
    """What :func:`refusal` accepts: host names, browser origins and the bearer token (None: no token asked)."""

    hosts: frozenset[str]
    any_ip: bool
    """Bound to a wildcard address: any IP literal names this server (a rebinding page cannot send one)."""
    origins: frozenset[str]
    token: str | None = None

    @classmethod
    def of(cls, bind_host: str, allow_hosts=(), allow_origins=(), token: str | None = None) -> AccessPolicy:
        """The policy of a server bound to ``bind_host`` with the ``--allow-host``/``--allow-origin`` values."""
        hosts = LOOPBACK_NAMES | {bind_host.lower().strip("[]")} | {h.lower().rstrip(".") for h in allow_hosts}
        origins = frozenset(check_origin(o) for o in allow_origins)
        return cls(frozenset(hosts), bind_host in WILDCARDS, origins, token)


def _host_name(value: str) -> str:
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8000
        return value[1 : value.find("]")] if "]" in value else value
    return (value.rsplit(":", 1)[0] if value.count(":") == 1 else value).rstrip(".")


def refusal(policy: AccessPolicy, headers: list[tuple[bytes, bytes]]) -> tuple[int, str] | None:
    """``(HTTP status, one-line reason)`` when a request with these headers must be refused, else None."""
    seen: dict[bytes, list[str]] = {}
    for name, value in headers:
        if name in (b"host", b"origin", b"authorization"):
            seen.setdefault(name, []).append(value.decode("latin-1"))
    if any(len(values) > 1 for values in seen.values()):
        return 400, "Repeated Host, Origin or Authorization header"
    host = seen.get(b"host", [""])[0]
    name = _host_name(host)
    if name not in policy.hosts and not (policy.any_ip and _is_ip(name)):
        shown = host[:80] or "(none)"
        return 403, (
            f"Host {shown!r} does not name this server (a DNS-rebinding guard): connect by its address or"
            f" localhost, or start it with --allow-host {name[:80] or 'NAME'}"
        )
    origin = seen.get(b"origin", [None])[0]
    if origin is not None and origin.strip().lower().rstrip("/") not in policy.origins:
        return 403, (
            f"Origin {origin[:80]!r} is not allowed: the server refuses browser pages (cross-site WebSocket)"
            " unless started with --allow-origin for that origin"
        )
    if policy.token is not None:
        scheme, _, given = seen.get(b"authorization", [""])[0].partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), policy.token.encode()):
            return 401, "This server needs its bearer token: Authorization: Bearer <token> (Client(url, token=...))"
    return None


class Gate:
    """ASGI middleware: :func:`refusal` before any route, and ``connection: close`` on plain HTTP answers."""

    def __init__(self, app: Any, policy: AccessPolicy, guard: ConnectionGuard | None = None) -> None:
        self.app, self.policy, self.guard = app, policy, guard

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Serve one ASGI connection: refused, or handed to the app."""
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if self.guard is not None:
            self.guard.request_arrived(scope.get("client"))
        refused = refusal(self.policy, scope.get("headers", []))
        if refused is not None:
            await _deny(kind, scope, receive, send, *refused)
            return
        if kind == "websocket":
            await self.app(scope, receive, send)
            return

        async def send_and_close(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, send_and_close)


async def _deny(kind: str, scope: dict[str, Any], receive: Any, send: Any, status: int, reason: str) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    body = reason.encode()
    if kind == "http":
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return
    await receive()  # websocket.connect
    if "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:  # the server answers a close before accept with a bare 403
        await send({"type": "websocket.close", "code": 1008})


def _answer_and_close(transport: asyncio.BaseTransport, status: str, reason: str) -> None:
    body = reason.encode()
    head = f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    transport.write(f"{head}content-length: {len(body)}\r\n\r\n".encode() + body)  # type: ignore[attr-defined]
    transport.close()


class ConnectionGuard:
    """Counts open connections by transport and peer address, on the event loop (no lock); see the module doc."""

    def __init__(self, max_total: int, max_per_peer: int, request_timeout: float) -> None:
        self.max_total, self.max_per_peer, self.request_timeout = max_total, max_per_peer, request_timeout
        self._open: dict[asyncio.BaseTransport, tuple[str, int]] = {}
        self._per_peer: Counter[str] = Counter()
        self._waiting: dict[tuple[str, int], tuple[asyncio.BaseTransport, asyncio.TimerHandle]] = {}

    def admit(self, transport: asyncio.BaseTransport) -> bool:
        """Count a new connection, or answer 503 and close it when a cap is reached (then False)."""
        # A closed connection is noticed here, whichever protocol (HTTP or WebSocket) saw it close.
        for gone in [t for t in self._open if t.is_closing()]:
            self._forget(gone)
        peer = transport.get_extra_info("peername")
        key = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) and len(peer) >= 2 else ("?", id(transport))
        if len(self._open) >= self.max_total or self._per_peer[key[0]] >= self.max_per_peer:
            cap = "--max-connections" if len(self._open) >= self.max_total else "--max-connections-per-peer"
            _answer_and_close(transport, "503 Service Unavailable", f"Too many connections ({cap}); try again later")
            return False
        self._open[transport] = key
        self._per_peer[key[0]] += 1
        handle = asyncio.get_running_loop().call_later(self.request_timeout, self._expire, key)
        self._waiting[key] = (transport, handle)
        return True

    def request_arrived(self, client: Any) -> None:
        """A complete request came in on the connection from ``client`` ((host, port)): its deadline is met."""
        entry = self._waiting.pop(tuple(client), None) if client else None
        if entry is not None:
            entry[1].cancel()

    def _expire(self, key: tuple[str, int]) -> None:
        transport, _ = self._waiting.pop(key, (None, None))
        if transport is not None and not transport.is_closing():
            why = f"No complete request within {self.request_timeout:g} s of connecting (--request-timeout)"
            _answer_and_close(transport, "408 Request Timeout", why)

    def _forget(self, transport: asyncio.BaseTransport) -> None:
        key = self._open.pop(transport)
        self._per_peer[key[0]] -= 1
        if not self._per_peer[key[0]]:
            del self._per_peer[key[0]]
        entry = self._waiting.get(key)
        if entry is not None and entry[0] is transport:
            entry[1].cancel()
            del self._waiting[key]


def guarded_protocol(guard: ConnectionGuard) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol, admitting each connection through ``guard`` first."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class GuardedHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)  # first, so that uvicorn's connection_lost finds its state
            guard.admit(transport)

    return GuardedHTTPProtocol


def connection_limits(max_sessions: int, max_connections: int | None, max_per_peer: int | None) -> tuple[int, int]:
    """``(max_connections, max_connections_per_peer)``: the given values, or defaults that leave room for every
    session plus HTTP calls, within the descriptors this process may open (its soft limit is raised toward the
    hard one if needed); ``ValueError`` naming the flag when they do not fit."""
    wanted = max_connections if max_connections is not None else 2 * max_sessions + 32
    room = _descriptor_room(wanted + DESCRIPTOR_RESERVE) - DESCRIPTOR_RESERVE
    if max_connections is not None and max_connections > room:
        raise ValueError(
            f"--max-connections {max_connections} needs {max_connections + DESCRIPTOR_RESERVE} file descriptors, but"
            f" this process may open {room + DESCRIPTOR_RESERVE} (ulimit -n): lower it or raise the limit"
        )
    if max_connections is not None and max_connections <= max_sessions:
        raise ValueError(f"--max-connections {max_connections} must be more than --max-sessions {max_sessions}")
    total = min(wanted, room)
    if total < max_sessions + 1:
        raise ValueError(
            f"--max-sessions {max_sessions} needs room for {max_sessions + 1} connections, but {total} fit in the"
            f" {room + DESCRIPTOR_RESERVE} file descriptors this process may open (ulimit -n): lower it or raise the limit"
        )
    per_peer = max_per_peer if max_per_peer is not None else min(total, max_sessions + 8)
    if per_peer > total:
        raise ValueError(f"--max-connections-per-peer {per_peer} is more than --max-connections {total}")
    return total, per_peer


def _descriptor_room(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    return wanted if soft == resource.RLIM_INFINITY else soft
