"""The shop as a real website: ``python -m ragen_envs.webshop.serve --tier 1k --port 0`` prints its URL.

One session per episode (``/new?seed=S`` or ``/new?task=N`` → ``/s/<id>/``), pages rendered from the same
state as the in-process env, every action a plain link or the search form (``GET``, carrying the page
version ``v`` so a stale or reloaded link is refused instead of replayed), then a redirect back to the page.

Routes: ``GET /`` start form · ``GET|POST /new`` · ``GET /s/<id>/`` · ``GET /s/<id>/search?q=&v=`` ·
``GET /s/<id>/click?el=&v=`` · ``POST /s/<id>/close`` · ``GET /api/info`` · ``GET /static/style.css``.
Bad input gets a 4xx with a one-line reason: 400 malformed, 404 unknown path or session, 405 method,
409 stale link or finished episode, 414 query too long, 429 session limit reached.

Loopback only by default; ``--allow-remote`` is needed to bind another address. Idle sessions are reaped
after ``--idle-timeout`` seconds; at most ``--max-sessions`` live at once.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import re
import signal
import socket
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

from ragen_envs.webshop.catalogue import CATALOGUE_VERSION, TIERS
from ragen_envs.webshop.pages import STATIC_FILES, render_html
from ragen_envs.webshop.search import MAX_QUERY_CHARS
from ragen_envs.webshop.shop import ShopState, build_page, click, new_state, search, shop_for
from ragen_envs.webshop.tasks import TASK_ID_HIGH, task_id_for_seed

MAX_URL_CHARS = 4096
_SESSION_ID = re.compile(r"[0-9a-f]{32}")


@dataclass
class Session:
    """One live shop session: its state, the lock its requests take, and when it was last used (monotonic seconds)."""

    state: ShopState
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)


class HttpError(Exception):
    """A request the server answers with HTTP ``status`` and a one-line ``message``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ShopServer:
    """A threaded HTTP server for one tier, with a session table, a session limit and an idle reaper."""

    def __init__(
        self,
        tier: str = "1k",
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_sessions: int = 256,
        idle_timeout: float = 600.0,
        allow_remote: bool = False,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        if not idle_timeout > 0:
            raise ValueError(f"idle_timeout must be positive seconds, got {idle_timeout}")
        if not allow_remote and not _is_loopback(host):
            raise ValueError(f"host {host!r} is not a loopback address; pass allow_remote=True (--allow-remote)")
        self.shop = shop_for(tier)
        self.shop.index  # open the index now, not on the first visitor's search  # noqa: B018
        self.tier = tier
        self.max_sessions = max_sessions
        self.idle_timeout = float(idle_timeout)
        self.sessions: dict[str, Session] = {}
        self._lock = threading.RLock()  # create_session reaps while holding it
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer((host, port), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.app = self
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        """The server's base URL, ``http://host:port/``."""
        host, port = self._httpd.server_address[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}/"

    def start(self) -> ShopServer:
        """Serve and reap in background threads; returns self."""
        for target in (self._httpd.serve_forever, self._reap_forever):
            thread = threading.Thread(target=target, daemon=True, name=f"webshop-{target.__name__}")
            thread.start()
            self._threads.append(thread)
        return self

    def close(self) -> None:
        """Stop serving, close the socket and join the background threads."""
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads.clear()

    def __enter__(self) -> ShopServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- sessions -----------------------------------------------------------------------------------
    def reap(self, now: float | None = None) -> int:
        """Drop sessions idle for longer than ``idle_timeout``; return how many were dropped."""
        now = time.monotonic() if now is None else now
        with self._lock:
            stale = [sid for sid, s in self.sessions.items() if now - s.last_used > self.idle_timeout]
            for sid in stale:
                del self.sessions[sid]
        return len(stale)

    def _reap_forever(self) -> None:
        while not self._stop.wait(min(self.idle_timeout / 4, 30.0)):
            self.reap()

    def create_session(self, task_id: int) -> str:
        """Start a session on task ``task_id``; returns its id (32 hex digits). Raises :class:`HttpError` 429 at the
        session limit."""
        state = new_state(self.shop, task_id)
        with self._lock:
            if len(self.sessions) >= self.max_sessions:
                self.reap()
            if len(self.sessions) >= self.max_sessions:
                raise HttpError(
                    429, f"session limit ({self.max_sessions}) reached: close a session or wait for idle ones to expire"
                )
            sid = uuid.uuid4().hex
            self.sessions[sid] = Session(state)
        return sid

    def session(self, sid: str) -> Session:
        """The live session ``sid``; raises :class:`HttpError` 400 for a malformed id, 404 for an unknown one."""
        if not _SESSION_ID.fullmatch(sid):
            raise HttpError(400, f"malformed session id {sid[:40]!r}: expected 32 hex digits")
        with self._lock:
            found = self.sessions.get(sid)
        if found is None:
            raise HttpError(404, f"unknown session {sid!r} (expired, closed or never created); start one at /new")
        found.last_used = time.monotonic()
        return found

    def close_session(self, sid: str) -> None:
        """End session ``sid``; raises :class:`HttpError` like :meth:`session`."""
        self.session(sid)
        with self._lock:
            self.sessions.pop(sid, None)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _int_param(params: dict, name: str, low: int, high: int) -> int:
    values = params.get(name)
    if not values:
        raise HttpError(400, f"missing parameter {name!r}")
    try:
        value = int(values[0])
    except ValueError:
        raise HttpError(400, f"parameter {name!r} must be an integer, got {values[0][:40]!r}") from None
    if not low <= value < high:
        raise HttpError(400, f"parameter {name!r} must be in [{low}, {high}), got {value}")
    return value


_INDEX = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>WebShop</title>
<link rel="stylesheet" href="/static/style.css"></head><body><h1>WebShop ({tier} tier)</h1>
<p>Each session is one episode; the same seed gives the same task as <code>env.reset(seed=...)</code>.</p>
<form action="/new" method="post"><label>seed <input name="seed" type="number" min="0" value="0"></label>
<button type="submit">Start shopping</button></form></body></html>"""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ragen-webshop"
    timeout = 300  # seconds a kept-alive connection may sit idle (or a request dribble in) before it is dropped

    def log_message(self, format, *args):  # noqa: A002 - the stdlib's signature
        pass  # quiet by default: one line per request would swamp RL rollouts

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without NODELAY, Nagle + delayed ACK add ~40 ms each.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def app(self) -> ShopServer:
        return self.server.app

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_HEAD(self):
        self.send_response(405)  # a HEAD answer carries no body
        self.send_header("Allow", "GET, POST, DELETE")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _dispatch(self, method: str) -> None:
        self._form: dict = {}
        try:
            if method == "POST":
                self._drain_body()
            status, ctype, body, location = self._route(method)
        except HttpError as err:
            status, ctype, body, location = err.status, "text/plain; charset=utf-8", f"{err.message}\n".encode(), None
        except Exception as err:  # never let one bad request take the server down
            status, ctype, location = 500, "text/plain; charset=utf-8", None
            body = f"internal error: {type(err).__name__}\n".encode()
        self._send(status, ctype, body, location)

    def _drain_body(self) -> None:
        length = self.headers.get("Content-Length")
        if length:
            try:
                size = int(length)
            except ValueError:
                raise HttpError(400, "malformed Content-Length") from None
            if not 0 <= size <= 1 << 16:
                self.close_connection = True
                raise HttpError(413, "request body too large (limit 65536 bytes)")
            self._form = parse_qs(self.rfile.read(size).decode("utf-8", "replace"), keep_blank_values=True)

    def _send(self, status: int, ctype: str, body: bytes, location: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if location:
            self.send_header("Location", location)
        self.end_headers()
        self.wfile.write(body)

    def _route(self, method: str):
        if len(self.path) > MAX_URL_CHARS:
            raise HttpError(414, f"URL too long ({len(self.path)} characters; limit {MAX_URL_CHARS})")
        parts = urlsplit(self.path)
        path = unquote(parts.path, errors="replace")
        segments = path.split("/")
        if ".." in segments or "\\" in path or "\x00" in path or not path.startswith("/"):
            raise HttpError(400, f"malformed path {path[:80]!r}: path traversal is not allowed")
        params = parse_qs(parts.query, keep_blank_values=True, errors="replace")
        params.update(self._form)
        app = self.app

        if path == "/":
            _only(method, "GET")
            return 200, "text/html; charset=utf-8", _INDEX.format(tier=app.tier).encode(), None
        if path in STATIC_FILES:
            _only(method, "GET")
            ctype, body = STATIC_FILES[path]
            return 200, ctype, body, None
        if path == "/api/info":
            _only(method, "GET")
            with app._lock:
                live = len(app.sessions)
            info = {
                "tier": app.tier,
                "products": TIERS[app.tier],
                "catalogue_version": CATALOGUE_VERSION,
                "sessions": live,
                "max_sessions": app.max_sessions,
                "idle_timeout": app.idle_timeout,
            }
            return 200, "application/json", json.dumps(info).encode(), None
        if path == "/new":
            _only(method, "GET", "POST")
            if "task" in params:
                task_id = _int_param(params, "task", 0, TASK_ID_HIGH)
            else:
                task_id = task_id_for_seed(_int_param(params, "seed", 0, 2**63))
            sid = app.create_session(task_id)
            return 303, "text/plain; charset=utf-8", f"session {sid}\n".encode(), f"/s/{sid}/"
        if len(segments) >= 3 and segments[1] == "s":
            return self._session_route(method, segments, params)
        raise HttpError(404, f"no such page {path[:80]!r}; start at /")

    def _session_route(self, method: str, segments: list[str], params: dict):
        app = self.app
        sid, rest = segments[2], "/".join(segments[3:])
        if rest == "" and method == "DELETE":
            app.close_session(sid)
            return 200, "text/plain; charset=utf-8", b"closed\n", None
        session = app.session(sid)
        base = f"/s/{sid}"
        if rest == "":
            _only(method, "GET")
            with session.lock:
                page = build_page(app.shop, session.state)
            return 200, "text/html; charset=utf-8", render_html(page, base).encode(), None
        if rest == "close":
            _only(method, "POST")
            app.close_session(sid)
            return 200, "text/plain; charset=utf-8", b"closed\n", None
        if rest not in ("search", "click"):
            raise HttpError(404, f"no such session page {rest[:40]!r}; session pages are /, search, click, close")
        _only(method, "GET")
        with session.lock:
            state = session.state
            version = _int_param(params, "v", 0, 1 << 62)
            if state.done:
                raise HttpError(409, "this episode is finished; start a new one at /new")
            if version != state.version:
                raise HttpError(409, f"stale link (page version {version}, current {state.version}); reload {base}/")
            if rest == "search":
                query = (params.get("q") or [""])[0]
                if len(query) > MAX_QUERY_CHARS:
                    raise HttpError(414, f"search query too long ({len(query)} characters; limit {MAX_QUERY_CHARS})")
                if state.page != "search":
                    raise HttpError(400, "this page has no search box; click 'Back to Search' first")
                search(app.shop, state, query)
            else:
                key = (params.get("el") or [""])[0].lower()
                clickables = build_page(app.shop, state).clickables()
                if key not in clickables:
                    shown = ", ".join(sorted(clickables))[:300]
                    raise HttpError(400, f"nothing called {key[:60]!r} to click on this page; clickables: {shown}")
                click(app.shop, state, key)
        return 303, "text/plain; charset=utf-8", b"see the page\n", f"{base}/"


def _only(method: str, *allowed: str) -> None:
    if method not in allowed:
        raise HttpError(405, f"method {method} not allowed here; use {' or '.join(allowed)}")


def main(argv: list[str] | None = None) -> int:
    """``python -m ragen_envs.webshop.serve``: serve the shop until SIGTERM or Ctrl-C; exit code 2 on a bad option."""
    parser = argparse.ArgumentParser(prog="python -m ragen_envs.webshop.serve", description=__doc__.splitlines()[0])
    parser.add_argument("--tier", default="1k", choices=tuple(TIERS), help="catalogue size")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (loopback unless --allow-remote)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind; 0 picks a free one")
    parser.add_argument("--max-sessions", type=int, default=256, help="live sessions at most")
    parser.add_argument("--idle-timeout", type=float, default=600.0, help="seconds before an idle session is dropped")
    parser.add_argument("--allow-remote", action="store_true", help="allow binding a non-loopback address")
    args = parser.parse_args(argv)
    try:
        server = ShopServer(
            args.tier,
            args.host,
            args.port,
            max_sessions=args.max_sessions,
            idle_timeout=args.idle_timeout,
            allow_remote=args.allow_remote,
        )
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    server.start()
    print(f"WebShop ({args.tier} tier) serving at {server.url}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
