"""The server: one env per WebSocket session, every wait bounded, every bad request answered.

Endpoints: ``/ws`` (OpenEnv's session protocol, see :mod:`ragen_envs.serve.protocol`), ``/mcp`` (the env as MCP
tools, see :mod:`ragen_envs.serve.mcp`), ``/health``, ``/metadata`` and ``/schema`` (OpenEnv's shapes). OpenEnv's
stateless HTTP ``/reset`` and ``/step`` are not served: they build a fresh env per request, which cannot play the
second turn of a multi-turn env (``openenv validate`` calls this "production mode").

Why not OpenEnv's own ``create_app``: its ``/ws`` loop ends the session on a JSON message that is not an object
(still so in openenv 0.10), and in openenv-core 0.3 it also answered oversized frames only by closing, put no
bound on a reset or step, and its idle reaper freed the env while the socket loop went on using it. The wire
format and the models here are OpenEnv's, so its clients cannot tell the difference (tested with
``GenericEnvClient``).

Bounds, all set on :class:`ServeConfig`: at most ``max_sessions`` sessions at once (one more is told
``CAPACITY_REACHED`` and closed); a session that sends nothing for ``idle_timeout`` seconds is closed and its
env freed (the idle reaper); making an env longer than ``make_timeout``, or a reset or step running longer
than ``step_timeout``, ends the session with ``TIMEOUT`` (the env is then in an unknown state); a call that
waits longer than ``step_timeout`` for its turn on the env thread is not run and is answered ``BUSY`` (the
session goes on); a reply the client does not read within ``send_timeout`` ends the session; messages over
``max_message_bytes`` are answered ``MESSAGE_TOO_LARGE`` and dropped, and frames over 16 times that are
refused by the WebSocket layer itself (close code 1009).

Who may connect, and connections that never speak: :mod:`ragen_envs.serve.guard` (Host, Origin and token
checks before any route; connection caps and a deadline from accept to a complete request).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import socket
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TextIO

from gymnasium.error import ResetNeeded

from ragen_envs.core import check_range
from ragen_envs.serve import protocol
from ragen_envs.serve.guard import (
    AccessPolicy,
    ConnectionGuard,
    Gate,
    check_origin,
    check_token,
    connection_limits,
    guarded_protocol,
    is_loopback,
)
from ragen_envs.serve.protocol import BadRequest

log = logging.getLogger("ragen_envs.serve")


@dataclass(frozen=True)
class ServeConfig:
    """How ``python -m ragen_envs.serve`` serves an env: the env, the address, the session limit, timeouts (seconds) and
    the message size cap; checked on construction (``ValueError``)."""

    env_id: str
    """A registered ``ragen/*`` id."""
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    """Passed to ``gym.make(env_id, **env_kwargs)`` for every session."""
    host: str = "127.0.0.1"
    """Loopback by default; any other address needs a ``token``."""
    port: int = 8000
    """0 lets the OS pick a free port (printed at start)."""
    max_sessions: int = 64
    idle_timeout: float = 300.0
    """Seconds a session may stay silent before the server closes it and frees its env."""
    make_timeout: float = 120.0
    """Seconds making a session's env may take (a sandbox or a catalogue may load)."""
    step_timeout: float = 120.0
    """Seconds one reset or step may take."""
    send_timeout: float = 30.0
    """Seconds a reply may wait for a client that does not read."""
    max_message_bytes: int = 1 << 20
    request_timeout: float = 10.0
    """Seconds from accepting a connection to a complete request (an HTTP request or a WebSocket handshake)."""
    max_connections: int | None = None
    """Connections held at once, sessions included; None: ``2 * max_sessions + 32`` within the descriptor limit."""
    max_connections_per_peer: int | None = None
    """Connections held at once from one address; None: ``max_sessions + 8``."""
    allow_origins: tuple[str, ...] = ()
    """Browser origins (``scheme://host[:port]``) whose pages may connect; any other ``Origin`` is refused."""
    allow_hosts: tuple[str, ...] = ()
    """Names besides the bound address and ``localhost`` that a request's ``Host`` may carry."""
    token: str | None = field(default=None, repr=False)
    """A bearer token every request must carry (``Authorization: Bearer <token>``); required beyond loopback."""

    def __post_init__(self) -> None:
        check_range("port", self.port, 0, 65535, integer=True)
        check_range("max_sessions", self.max_sessions, 1, integer=True)
        for name in ("idle_timeout", "make_timeout", "step_timeout", "send_timeout", "request_timeout"):
            check_range(name, getattr(self, name), 0.001, 86400.0)
        check_range("max_message_bytes", self.max_message_bytes, 1024, 1 << 28, integer=True)
        for name in ("max_connections", "max_connections_per_peer"):
            if getattr(self, name) is not None:
                check_range(name, getattr(self, name), 1, 1 << 20, integer=True)
        if not isinstance(self.env_kwargs, dict):
            raise ValueError(f"env_kwargs must be a JSON object, got {type(self.env_kwargs).__name__}")
        for origin in self.allow_origins:
            check_origin(origin)
        if self.token is not None:
            check_token(self.token)
        elif not is_loopback(self.host):
            raise ValueError(
                f"--host {self.host} serves other machines: give a bearer token with --token-file F or --token-env VAR"
                " (clients send Authorization: Bearer <token>), or keep --host 127.0.0.1 behind your own proxy"
            )


def check_env(config: ServeConfig) -> str:
    """The resolved env id, after making (and closing) one env; ``ValueError`` with one line if it cannot be."""
    import gymnasium as gym

    from ragen_envs import resolve_env_id  # the one "unknown env, did you mean" in the project

    env_id = resolve_env_id(config.env_id)
    try:
        env = gym.make(env_id, **config.env_kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(f"Bad --env-kwargs for {env_id}: {e}") from None
    env.close()
    return env_id


class _Sessions:
    """Counts open sessions (touched only from the event loop, so no lock)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0

    def try_open(self) -> bool:
        if self.open >= self.limit:
            return False
        self.open += 1
        return True

    def close(self) -> None:
        self.open -= 1


def make_app(config: ServeConfig, guard: ConnectionGuard | None = None):
    """The ASGI app serving ``config.env_id`` (already resolved: see :func:`check_env`), behind the Host, Origin and
    token checks of :class:`~ragen_envs.serve.guard.Gate` (which tells ``guard`` when a request is complete)."""
    from fastapi import FastAPI
    from openenv.core.env_server.types import EnvironmentMetadata, SchemaResponse
    from starlette.routing import Route, WebSocketRoute

    from ragen_envs import __version__
    from ragen_envs.serve.environment import RagenAction, RagenEnvironment, RagenObservation, RagenState
    from ragen_envs.serve.mcp import McpEndpoint, env_action_tools

    app = FastAPI(title=f"ragen-envs {config.env_id}", version=__version__, docs_url=None, redoc_url=None)
    sessions = _Sessions(config.max_sessions)
    # Every env call of every session runs on this one thread, one at a time (sessions take turns in arrival
    # order). The envs are pure Python, so under the GIL more threads would not step faster; and two things
    # envs use are not safe across threads: the code sandbox's worker pool (threaded steps failed with
    # ConnectionResetError reading a pool member's channel) and CPython 3.11's AST constructor (threaded steps
    # raised "SystemError: AST constructor recursion depth mismatch"), both seen with 8 threaded CodeExec
    # sessions. More throughput: one server process per core.
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragen-envs")

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "healthy", "env_id": config.env_id, "sessions": sessions.open, "max_sessions": sessions.limit}

    @app.get("/metadata")
    def metadata() -> dict[str, Any]:
        return EnvironmentMetadata(
            name=config.env_id, description=f"{config.env_id} from ragen-envs", version=__version__
        ).model_dump()

    @app.get("/schema")
    def schema() -> dict[str, Any]:
        return SchemaResponse(
            action=RagenAction.model_json_schema(),
            observation=RagenObservation.model_json_schema(),
            state=RagenState.model_json_schema(),
        ).model_dump()

    async def session(websocket) -> None:  # a plain Starlette route: no dependency injection per message
        await websocket.accept()
        if not sessions.try_open():
            await _send(
                websocket,
                protocol.error_message(
                    protocol.CAPACITY_REACHED,
                    f"The server holds {sessions.limit} sessions, its limit (--max-sessions); try again when one closes",
                ),
                config.send_timeout,
            )
            await _close(websocket, 1013)
            return
        env: RagenEnvironment | None = None
        try:
            try:
                make = lambda: RagenEnvironment(config.env_id, config.env_kwargs)  # noqa: E731
                env = await _run(executor, make, config.make_timeout, "--make-timeout")
            except Exception as e:  # noqa: BLE001  (reported to the client, then the session ends)
                code = protocol.TIMEOUT if isinstance(e, (TimeoutError, Busy)) else protocol.FACTORY_ERROR
                await _send(
                    websocket, protocol.error_message(code, f"Could not make {config.env_id}: {e}"), config.send_timeout
                )
                await _close(websocket, 1011)
                return
            await _serve_session(websocket, env, executor, config)
        finally:
            if env is not None:
                try:  # on the env thread, after any step of this session still running there
                    await _run(executor, env.close, config.make_timeout, "--make-timeout")
                except Exception as e:  # noqa: BLE001
                    log.warning("closing a %s session's env failed: %s", config.env_id, e)
            sessions.close()

    app.router.routes.append(WebSocketRoute("/ws", session))
    mcp = McpEndpoint(
        config,
        env_action_tools(config.env_id),
        run=functools.partial(_run, executor),
        open_slot=sessions.try_open,
        close_slot=sessions.close,
    )
    app.router.routes.append(Route("/mcp", mcp.handle, methods=["POST", "DELETE"]))
    policy = AccessPolicy.of(config.host, config.allow_hosts, config.allow_origins, config.token)
    return Gate(app, policy, guard)


class Busy(Exception):
    """The env thread did not get to a call in time; the call never ran, so the session is as it was."""


async def _run(
    executor: ThreadPoolExecutor, fn: Callable[[], Any], timeout: float, flag: str = "--step-timeout"
) -> Any:
    """``fn()`` on the env thread: up to ``timeout`` s waiting for its turn (:class:`Busy`), then up to ``timeout``
    s running (``TimeoutError``; the call goes on in the thread, so its env is in an unknown state)."""
    loop = asyncio.get_running_loop()
    began = asyncio.Event()

    def call() -> Any:
        loop.call_soon_threadsafe(began.set)
        return fn()

    job = executor.submit(call)
    try:
        await asyncio.wait_for(began.wait(), timeout)
    except asyncio.TimeoutError:
        if job.cancel():
            raise Busy(f"the server's env thread was busy for {timeout:g} s ({flag}); nothing was run") from None
    try:
        return await asyncio.wait_for(asyncio.wrap_future(job), timeout)
    except asyncio.TimeoutError:
        raise TimeoutError(f"it took longer than {timeout:g} s (the server's {flag})") from None


async def _send(websocket, text: str, timeout: float) -> bool:
    try:
        await asyncio.wait_for(websocket.send_text(text), timeout)
        return True
    except Exception:  # noqa: BLE001  (a client that is gone or does not read)
        return False


async def _close(websocket, code: int, reason: str = "") -> None:
    try:
        await asyncio.wait_for(websocket.close(code=code, reason=reason[:120]), 5.0)
    except Exception:  # noqa: BLE001  (already closed)
        pass


class _SessionOver(Exception):
    """The session must end after this answer (a timed-out call left the env in an unknown state)."""

    def __init__(self, answer: str, close_code: int, reason: str) -> None:
        super().__init__(reason)
        self.answer, self.close_code, self.reason = answer, close_code, reason


def _read(event: dict[str, Any], limit: int) -> protocol.Request:
    """The request in one received frame; :class:`BadRequest` naming what is wrong otherwise."""
    text = event.get("text")
    if text is None:
        raise BadRequest(protocol.VALIDATION_ERROR, "Send JSON messages as text frames, not binary")
    if len(text) > limit // 4:  # UTF-8 takes at most 4 bytes a character: shorter texts cannot be over
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > limit:
            raise BadRequest(
                protocol.MESSAGE_TOO_LARGE,
                f"The message has {size} bytes; the server takes at most {limit} (--max-message-bytes)",
            )
    return protocol.parse_request(text)


async def _answer(request: protocol.Request, env, executor: ThreadPoolExecutor, config: ServeConfig) -> str:
    """The reply to a reset, step or state request (errors included)."""
    from openenv.core.env_server import serialize_observation

    from ragen_envs.serve.environment import RagenAction

    if request.type == "state":
        return protocol.reply("state", env.state.model_dump())
    if request.type == "reset":
        call = functools.partial(env.reset, **request.data)
    elif env.state.needs_reset:
        return protocol.error_message(
            protocol.RESET_NEEDED, 'Step before reset or after the episode ended: send {"type": "reset"} first'
        )
    else:
        call = functools.partial(env.step, RagenAction(**request.data))
    try:
        observation = await _run(executor, call, config.step_timeout)
    except TimeoutError as e:
        answer = protocol.error_message(protocol.TIMEOUT, f"The {request.type} did not finish: {e}; session closed")
        raise _SessionOver(answer, 1011, "timeout") from None
    except Busy as e:
        return protocol.error_message(protocol.BUSY, f"The {request.type} was not run: {e}; try again")
    except ResetNeeded as e:
        return protocol.error_message(protocol.RESET_NEEDED, str(e))
    except Exception as e:  # noqa: BLE001  (an env failure is the client's to see, not a dead server)
        log.exception("%s %s failed", config.env_id, request.type)
        return protocol.error_message(protocol.EXECUTION_ERROR, f"{type(e).__name__}: {e}")
    return protocol.reply("observation", serialize_observation(observation))


async def _serve_session(websocket, env, executor: ThreadPoolExecutor, config: ServeConfig) -> None:
    while True:
        try:
            event = await asyncio.wait_for(websocket.receive(), config.idle_timeout)
        except asyncio.TimeoutError:  # the idle reaper
            idle = f"No message for {config.idle_timeout:g} s (the server's --idle-timeout): session closed"
            await _send(websocket, protocol.error_message(protocol.IDLE_TIMEOUT, idle), config.send_timeout)
            await _close(websocket, 1000, "idle")
            return
        if event["type"] == "websocket.disconnect":
            return
        try:
            request = _read(event, config.max_message_bytes)
        except BadRequest as e:
            answer = protocol.error_message(e.code, e.message)
        else:
            if request.type == "close":
                await _close(websocket, 1000)
                return
            try:
                answer = await _answer(request, env, executor, config)
            except _SessionOver as over:
                await _send(websocket, over.answer, config.send_timeout)
                await _close(websocket, over.close_code, over.reason)
                return
        if not await _send(websocket, answer, config.send_timeout):
            return


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: one the OS picks)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.create_server((host, port), family=family, backlog=256)
    return sock


def serve(config: ServeConfig, out: TextIO = sys.stdout) -> None:
    """Run the server until SIGINT/SIGTERM; the first line on ``out`` gives the bound address."""
    import uvicorn

    total, per_peer = connection_limits(config.max_sessions, config.max_connections, config.max_connections_per_peer)
    guard = ConnectionGuard(total, per_peer, config.request_timeout)
    app = make_app(config, guard)
    sock = bind(config.host, config.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    # Printed once the socket listens: a client connecting now waits in the backlog until uvicorn accepts.
    print(
        f"ragen_envs.serve: {config.env_id} on http://{shown}:{port} (WebSocket /ws, OpenEnv protocol;"
        f" up to {config.max_sessions} sessions)",
        file=out,
        flush=True,
    )
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            http=guarded_protocol(guard),
            # The peer is the TCP one: a forwarded-for header must not rename it (the guard matches a request to
            # its connection by the peer address, and the per-peer cap counts connections).
            proxy_headers=False,
            log_level="warning",
            ws_max_size=16 * config.max_message_bytes,
            ws_ping_interval=20.0,
            ws_ping_timeout=20.0,
            timeout_keep_alive=5,
            timeout_graceful_shutdown=5,
            lifespan="off",
        )
    )
    server.run(sockets=[sock])
