"""The env as MCP tools: ``POST /mcp``, JSON-RPC 2.0 per the Model Context Protocol (streamable HTTP, JSON replies).

Methods: ``initialize`` opens a session (one env; the reply's ``Mcp-Session-Id`` header names it, and every later
request carries that header), ``ping``, ``tools/list`` (no session needed) and ``tools/call``. OpenEnv's own
session methods work too: ``openenv/session/create`` answers ``{"session_id": ...}`` and later requests may give
it as ``params.session_id`` instead of the header; ``openenv/session/close`` (or ``DELETE /mcp`` with the header)
ends a session. Sessions share the server's ``--max-sessions`` and ``--idle-timeout`` with the WebSocket ones.

Tools, per env: ``reset`` (``seed``), ``step`` (``response``: a whole model response, judged exactly as over the
WebSocket) and the env's actions (its ``action_tools``, the definitions ``response_format="tool"`` uses, e.g.
Sokoban's ``move`` with ``direction``): a call plays that one action as a turn, written in the env's response
format by the env itself, so rules, rewards and feedback are the env's one set. A call's result holds the
observation text (``reset``: the instructions, a blank line, then the observation) and, as
``structuredContent``, what ``gym.make(env_id).step`` returns: ``observation``, ``reward``, ``terminated``,
``truncated``, ``info``.

Everything a client sends is untrusted (the caller may be a model): a bad request gets a JSON-RPC error naming
what is wrong (``data.code`` carries the WebSocket protocol's code where one fits), and the session goes on.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from gymnasium.error import ResetNeeded

from ragen_envs.serve import protocol
from ragen_envs.serve.protocol import BadRequest
from ragen_envs.tools import DEFAULT_TOOLS, ActionTool

PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
"""MCP revisions this endpoint speaks, newest first (what it answers a client asking for another)."""
SESSION_HEADER = "mcp-session-id"
METHODS = ("initialize", "ping", "tools/list", "tools/call", "openenv/session/create", "openenv/session/close")
CONTROL_TOOLS = ("reset", "step")

# JSON-RPC 2.0 error codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000
"""The env or the server could not do it now (no reset yet, busy, full, timed out): ``data.code`` says which."""


class RpcError(Exception):
    """A request answered with a JSON-RPC error (HTTP ``status``: 200 unless the MCP transport asks for another)."""

    def __init__(self, code: int, message: str, kind: str | None = None, status: int = 200) -> None:
        super().__init__(message)
        self.code, self.message, self.kind, self.status = code, message, kind, status
        self.request_id: str | int | None = None
        """The request's id, where the request was readable that far (else the reply's id is null)."""

    def body(self, request_id: Any) -> dict[str, Any]:
        """The JSON-RPC error reply to the request with ``request_id``."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.kind is not None:
            error["data"] = {"code": self.kind}
        return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _hint(name: str, allowed: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(name[:40], allowed, n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


def env_action_tools(env_id: str) -> tuple[ActionTool, ...]:
    """The action tools of a registered env id's class (a class attribute: no env is made)."""
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    entry = gym.spec(env_id).entry_point
    creator = load_env_creator(entry) if isinstance(entry, str) else entry
    return tuple(getattr(creator, "action_tools", DEFAULT_TOOLS))


def tool_list(action_tools: tuple[ActionTool, ...]) -> list[dict[str, Any]]:
    """The ``tools/list`` entries: ``reset``, ``step``, then the env's action tools (their schemas as
    :mod:`ragen_envs.tools` writes them)."""
    names = [tool.name for tool in action_tools]
    clash = sorted(set(names) & set(CONTROL_TOOLS))
    if clash or len(set(names)) != len(names):
        raise ValueError(f"action tool names must be unique and not {list(CONTROL_TOOLS)}, got {names}")
    seed = {
        "type": ["integer", "null"],
        "minimum": 0,
        "maximum": protocol.MAX_SEED,
        "description": "Same seed, same episode; null or absent: a fresh random one",
    }
    episode_id = {"type": ["string", "null"], "maxLength": protocol.MAX_EPISODE_ID_CHARS}
    tools = [
        {
            "name": "reset",
            "description": "Start a new episode; returns the instructions and the first observation.",
            "inputSchema": {
                "type": "object",
                "properties": {"seed": seed, "episode_id": episode_id},
                "additionalProperties": False,
            },
        },
        {
            "name": "step",
            "description": "Play one turn: a whole response, written in the format the instructions ask for.",
            "inputSchema": {
                "type": "object",
                "properties": {"response": {"type": "string", "description": "The response text"}},
                "required": ["response"],
                "additionalProperties": False,
            },
        },
    ]
    for tool in action_tools:
        function = tool.schema["function"]
        description = f"{function['description']} Plays one turn."
        tools.append({"name": tool.name, "description": description, "inputSchema": function["parameters"]})
    return tools


@dataclass
class Session:
    """One MCP session: its env, a lock that lets its calls run one at a time, and when it was last used."""

    env: Any
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)


class McpEndpoint:
    """``POST``/``DELETE /mcp`` for one env id; env calls go through ``run(fn, timeout, flag)`` (the server's env
    thread), sessions through ``open_slot``/``close_slot`` (the server's session count)."""

    def __init__(
        self,
        config: Any,
        action_tools: tuple[ActionTool, ...],
        run: Callable[..., Awaitable[Any]],
        open_slot: Callable[[], bool],
        close_slot: Callable[[], None],
    ) -> None:
        from ragen_envs import __version__

        self.config = config
        self.version = __version__
        self.tools = tool_list(action_tools)
        self.action_tools = {tool.name: tool for tool in action_tools}
        self.tool_names = [tool["name"] for tool in self.tools]
        self.run, self.open_slot, self.close_slot = run, open_slot, close_slot
        self.sessions: dict[str, Session] = {}
        self._reaper: asyncio.Task | None = None
        self._closing: set[asyncio.Task] = set()  # env closes under way (held so they are not collected)

    # ---- HTTP ----------------------------------------------------------------------------------------------------
    async def handle(self, request):
        """The Starlette endpoint: ``POST`` (a JSON-RPC message) or ``DELETE`` (end a session)."""
        return await (self.delete(request) if request.method == "DELETE" else self.post(request))

    async def post(self, request):
        """One JSON-RPC message in, one JSON reply out (202 and no body for a notification)."""
        from starlette.responses import Response

        request_id, headers = None, {}
        try:
            message = self._parse(await self._read(request))
            request_id = message.get("id")
            if "id" not in message:  # a notification: nothing to answer, nothing this server acts on
                return Response(status_code=202)
            result, headers = await self._dispatch(message, request.headers.get(SESSION_HEADER))
            body, status = {"jsonrpc": "2.0", "id": request_id, "result": result}, 200
        except RpcError as e:
            body, status = e.body(e.request_id if request_id is None else request_id), e.status
        return Response(json.dumps(body), status_code=status, media_type="application/json", headers=headers)

    async def delete(self, request):
        """``DELETE /mcp``: end the session the ``Mcp-Session-Id`` header names."""
        from starlette.responses import Response

        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None:
            return Response("DELETE /mcp needs the Mcp-Session-Id header\n", status_code=400)
        if not await self._close(session_id):
            return Response(f"No session {session_id[:40]!r} (closed or expired)\n", status_code=404)
        return Response(status_code=204)

    async def _read(self, request) -> bytes:
        limit = self.config.max_message_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise self._too_large(int(declared))
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise self._too_large(len(body))
        return bytes(body)

    def _too_large(self, size: int) -> RpcError:
        return RpcError(
            INVALID_REQUEST,
            f"The request has {size}+ bytes; the server takes at most {self.config.max_message_bytes}"
            " (--max-message-bytes)",
            protocol.MESSAGE_TOO_LARGE,
            status=413,
        )

    @staticmethod
    def _parse(body: bytes) -> dict[str, Any]:
        try:
            message = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            where = f" at line {e.lineno} column {e.colno}" if isinstance(e, json.JSONDecodeError) else ""
            raise RpcError(PARSE_ERROR, f"Parse error: not JSON{where}") from None
        except (ValueError, RecursionError) as e:  # a 5,000-digit number, 100,000 nested arrays
            raise RpcError(PARSE_ERROR, f"Parse error: {str(e)[:200]}") from None
        if isinstance(message, list):
            raise RpcError(INVALID_REQUEST, "Batches are not supported: send one JSON-RPC request per POST")
        if not isinstance(message, dict):
            raise RpcError(
                INVALID_REQUEST, 'A request is a JSON object like {"jsonrpc": "2.0", "id": 1, "method": ...}'
            )
        request_id = message.get("id")
        if "id" in message and (isinstance(request_id, bool) or not isinstance(request_id, (str, int))):
            raise RpcError(INVALID_REQUEST, "'id' must be a string or an integer")  # answered with id null
        try:
            if message.get("jsonrpc") != "2.0":
                raise RpcError(INVALID_REQUEST, 'A request needs "jsonrpc": "2.0"')
            method = message.get("method")
            if not isinstance(method, str):
                raise RpcError(INVALID_REQUEST, f"A request needs a string 'method', one of {list(METHODS)}")
            extra = sorted(set(message) - {"jsonrpc", "id", "method", "params"})
            if extra:
                raise RpcError(INVALID_REQUEST, f"Unknown key {extra[0][:40]!r}; allowed: jsonrpc, id, method, params")
            if not isinstance(message.get("params", {}), dict):
                raise RpcError(INVALID_PARAMS, "'params' must be an object")
        except RpcError as e:
            e.request_id = request_id
            raise
        return message

    # ---- methods -------------------------------------------------------------------------------------------------
    async def _dispatch(self, message: dict[str, Any], header_session: str | None) -> tuple[Any, dict[str, str]]:
        method, params = message["method"], message.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            session_id = await self._open()
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": "ragen-envs", "title": self.config.env_id, "version": self.version},
                "instructions": f"{self.config.env_id}: call reset, then step or an action tool until done.",
            }
            return result, {"Mcp-Session-Id": session_id}
        if method == "ping":
            return {}, {}
        if method == "tools/list":
            return {"tools": self.tools}, {}
        if method == "openenv/session/create":
            return {"session_id": await self._open()}, {}
        if method == "openenv/session/close":
            session_id = params.get("session_id")
            if not isinstance(session_id, str):
                raise RpcError(INVALID_PARAMS, "openenv/session/close needs params.session_id, a string")
            if not await self._close(session_id):
                raise RpcError(INVALID_PARAMS, f"No session {session_id[:40]!r} (closed or expired)")
            return {"session_id": session_id, "closed": True}, {}
        if method == "tools/call":
            return await self._call(params, header_session), {}
        raise RpcError(METHOD_NOT_FOUND, f"Unknown method {method[:40]!r}.{_hint(method, METHODS)} Allowed: {', '.join(METHODS)}")  # fmt: skip

    async def _call(self, params: dict[str, Any], header_session: str | None) -> dict[str, Any]:
        extra = sorted(set(params) - {"name", "arguments", "session_id", "_meta"})
        if extra:
            raise RpcError(INVALID_PARAMS, f"Unknown tools/call param {extra[0][:40]!r}; allowed: name, arguments")
        name, arguments = params.get("name"), params.get("arguments", {})
        if not isinstance(name, str):
            raise RpcError(INVALID_PARAMS, f"tools/call needs params.name, one of {self.tool_names}")
        if name not in self.tool_names:
            hint = _hint(name, self.tool_names)
            raise RpcError(INVALID_PARAMS, f"Unknown tool {name[:40]!r}.{hint} Available: {', '.join(self.tool_names)}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise RpcError(INVALID_PARAMS, f"params.arguments of tool {name!r} must be an object")
        session_id = params.get("session_id", header_session)
        session = self._session(session_id)
        async with session.lock:
            if self.sessions.get(session_id) is not session:  # closed while this call waited its turn
                raise RpcError(INVALID_REQUEST, "The session was closed: send initialize again", status=404)
            session.last_used = time.monotonic()
            try:
                call = self._env_call(session.env, name, arguments)
                return await self._play(session, name, call)
            finally:
                session.last_used = time.monotonic()

    def _env_call(self, env: Any, name: str, arguments: dict[str, Any]) -> Callable[[], Any]:
        """The env call a tool call stands for; ``RpcError`` (invalid params) when its arguments are wrong."""
        from ragen_envs.serve.environment import RagenAction

        if name == "reset":
            try:
                protocol._check_reset(arguments)
            except BadRequest as e:
                raise RpcError(INVALID_PARAMS, f"tool 'reset': {e.message}") from None
            return lambda: env.reset(**arguments)
        if name == "step":
            unknown = sorted(set(arguments) - {"response"})
            if unknown:
                raise RpcError(INVALID_PARAMS, f"tool 'step' takes only 'response', not {unknown[0][:40]!r}")
            if not isinstance(arguments.get("response"), str):
                raise RpcError(INVALID_PARAMS, "tool 'step' needs the argument 'response', a string")
            action = RagenAction(response=arguments["response"])
        else:
            tool = self.action_tools[name]
            text, error = tool.action(arguments)
            if error:
                raise RpcError(INVALID_PARAMS, error)
            separator = getattr(env.env.unwrapped, "action_separator", None)
            if separator and separator in text:  # one call is one action; the separator would make it several
                raise RpcError(
                    INVALID_PARAMS, f"tool {name!r} plays one action: its argument may not hold {separator!r}"
                )
            action = None
        if env.state.needs_reset:
            raise RpcError(SERVER_ERROR, "Call the tool 'reset' first (no episode is running)", protocol.RESET_NEEDED)
        if action is None:
            action = RagenAction(response=env.env.unwrapped.write_response("", text))
        return lambda: env.step(action)

    async def _play(self, session: Session, name: str, call: Callable[[], Any]) -> dict[str, Any]:
        from ragen_envs.serve.server import Busy

        try:
            observation = await self.run(call, self.config.step_timeout)
        except TimeoutError as e:
            self._drop(session)  # the env is in an unknown state
            raise RpcError(SERVER_ERROR, f"The {name} did not finish: {e}; session closed", protocol.TIMEOUT) from None
        except Busy as e:
            raise RpcError(SERVER_ERROR, f"The {name} was not run: {e}; try again", protocol.BUSY) from None
        except ResetNeeded as e:
            raise RpcError(SERVER_ERROR, f"{e}: call the tool 'reset'", protocol.RESET_NEEDED) from None
        except Exception as e:  # noqa: BLE001  (an env failure is the client's to see, not a dead server)
            raise RpcError(INTERNAL_ERROR, f"{type(e).__name__}: {e}", protocol.EXECUTION_ERROR) from None
        info = observation.info
        text = f"{info['instructions']}\n\n{observation.text}" if name == "reset" else observation.text
        reward = observation.reward
        structured = {
            "observation": observation.text,
            "reward": None if reward is None or not math.isfinite(reward) else reward,
            "terminated": observation.terminated,
            "truncated": observation.truncated,
            "info": info,
        }
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured, "isError": False}

    # ---- sessions ------------------------------------------------------------------------------------------------
    def _session(self, session_id: Any) -> Session:
        if session_id is None:
            raise RpcError(
                INVALID_REQUEST,
                "tools/call needs a session: send initialize first and pass its Mcp-Session-Id header"
                " (or params.session_id from openenv/session/create)",
                status=400,
            )
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            shown = session_id[:40] if isinstance(session_id, str) else type(session_id).__name__
            raise RpcError(
                INVALID_REQUEST, f"No session {shown!r} (closed or expired): send initialize again", status=404
            )
        return session

    async def _open(self) -> str:
        from ragen_envs.serve.environment import RagenEnvironment

        if not self.open_slot():
            raise RpcError(
                SERVER_ERROR,
                f"The server holds {self.config.max_sessions} sessions, its limit (--max-sessions); try again"
                " when one closes",
                protocol.CAPACITY_REACHED,
            )
        try:
            make = lambda: RagenEnvironment(self.config.env_id, self.config.env_kwargs)  # noqa: E731
            env = await self.run(make, self.config.make_timeout, "--make-timeout")
        except Exception as e:  # noqa: BLE001
            self.close_slot()
            raise RpcError(SERVER_ERROR, f"Could not make {self.config.env_id}: {e}", protocol.FACTORY_ERROR) from None
        session_id = secrets.token_urlsafe(24)  # it is the key to the episode: not guessable
        self.sessions[session_id] = Session(env)
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap())
        return session_id

    async def _close(self, session_id: str) -> bool:
        session = self.sessions.get(session_id)
        if session is None:
            return False
        async with session.lock:  # after any call of the session still running
            self._drop(session)
        return True

    def _drop(self, session: Session) -> None:
        """Forget ``session`` now and close its env on the env thread in the background (after a timed-out call the
        thread may stay busy a while: the reply does not wait for it); its slot is freed once the env is closed."""
        session_id = next((k for k, v in self.sessions.items() if v is session), None)
        if session_id is None:
            return
        del self.sessions[session_id]
        task = asyncio.get_running_loop().create_task(self._close_env(session.env))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close_env(self, env: Any) -> None:
        try:
            await self.run(env.close, self.config.make_timeout, "--make-timeout")
        except Exception:  # noqa: BLE001  (the slot is freed either way)
            pass
        finally:
            self.close_slot()

    async def _reap(self) -> None:
        """Close sessions idle longer than ``--idle-timeout``; ends when none is left (the next one restarts it)."""
        period = min(self.config.idle_timeout / 4, 5.0)
        while self.sessions:
            await asyncio.sleep(period)
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if not session.lock.locked() and now - session.last_used > self.config.idle_timeout:
                    self._drop(session)
