"""``POST /mcp``: the env as MCP tools. OpenEnv's validator passes every check, episodes played through the tools
equal in-process ones, MCP's own client works, and hostile calls get JSON-RPC errors while the session goes on."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest
from conftest import wait_until
from episodes import responses

import ragen_envs
from ragen_envs.serve.mcp import tool_list
from ragen_envs.tools import DEFAULT_TOOLS, tool_schemas

httpx = pytest.importorskip("httpx")

ENV_ID = "ragen/Sokoban-v0"


class Mcp:
    """A bare JSON-RPC client of one server's ``/mcp``: every reply is checked to be JSON-RPC 2.0."""

    def __init__(self, url: str) -> None:
        self.url = url + "/mcp"
        self.session: str | None = None
        self.ids = 0

    def post(self, body: str | bytes | dict, headers: dict | None = None) -> httpx.Response:
        content = json.dumps(body) if isinstance(body, dict) else body
        headers = {"content-type": "application/json", **(headers or {})}
        if self.session is not None:
            headers.setdefault("mcp-session-id", self.session)
        return httpx.post(self.url, content=content, headers=headers, timeout=60)

    def rpc(self, method: str, params: dict | None = None) -> dict:
        self.ids += 1
        reply = self.post({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params or {}})
        answer = reply.json()
        assert answer["jsonrpc"] == "2.0" and answer["id"] == self.ids, answer
        return answer

    def initialize(self) -> Mcp:
        reply = self.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        assert reply.status_code == 200, reply.text
        self.session = reply.headers["mcp-session-id"]
        return self

    def call(self, name: str, **arguments) -> dict:
        """The call's ``structuredContent`` (the gym step's values); AssertionError on an error reply."""
        answer = self.rpc("tools/call", {"name": name, "arguments": arguments})
        assert "result" in answer, answer
        return answer["result"]

    def delete(self) -> httpx.Response:
        return httpx.delete(self.url, headers={"mcp-session-id": self.session}, timeout=60)


def as_gym(result: dict) -> list:
    s = result["structuredContent"]
    return [s["observation"], s["reward"], s["terminated"], s["truncated"], s["info"]]


def test_openenv_validate_passes_every_check(sokoban_server):
    # OpenEnv's own CLI, as a user runs it; --json for the criteria by id.
    run = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "validate", "--url", sokoban_server.url, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(run.stdout)
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert run.returncode == 0 and report["passed"] and not failed, failed or run.stderr[-2000:]
    ids = {c["id"] for c in report["criteria"]}
    assert {"health_endpoint", "metadata_endpoint", "schema_endpoint", "mcp_endpoint"} <= ids and len(ids) >= 6


def test_tools_are_reset_step_and_the_envs_actions():
    for env_id in ragen_envs.registered_ids():
        env = gym.make(env_id).unwrapped
        listed = tool_list(type(env).action_tools)
        assert [t["name"] for t in listed[:2]] == ["reset", "step"]
        # the action tools are the tool format's own definitions, one schema for both
        schemas = tool_schemas(type(env).action_tools)
        assert [t["inputSchema"] for t in listed[2:]] == [s["function"]["parameters"] for s in schemas]
        env.close()
    with pytest.raises(ValueError, match="unique"):
        tool_list((*DEFAULT_TOOLS, *DEFAULT_TOOLS))


def play_both(client: Mcp, env_id: str, seed: int, max_turns: int = 30) -> tuple[str, str]:
    """One episode through the MCP tools and in process: junk and oracle responses through ``step``, random moves
    through the env's action tool."""
    env = gym.make(env_id)
    env.action_space.seed(seed)
    tool = type(env.unwrapped).action_tools[0]
    pick = random.Random(seed)
    reset = client.call("reset", seed=seed)
    text, info = env.reset(seed=seed)
    assert reset["content"][0]["text"] == f"{info['instructions']}\n\n{text}"
    local, served = [[text, info]], [[reset["structuredContent"]["observation"], reset["structuredContent"]["info"]]]
    for turn in range(max_turns):
        if turn % 3 == 1 and tool.choices:
            action = pick.choice(tool.choices)
            served.append(as_gym(client.call(tool.name, **{tool.parameter: action})))
            local.append(list(env.step(env.unwrapped.write_response("", action))))
        else:
            response = responses(env, turn)
            served.append(as_gym(client.call("step", response=response)))
            local.append(list(env.step(response)))
        if local[-1][2] or local[-1][3]:
            break
    return json.dumps(local), json.dumps(served)


def test_episodes_through_the_tools_equal_in_process_ones(sokoban_server):
    client = Mcp(sokoban_server.url).initialize()
    for seed in (0, 1, 7):
        local, served = play_both(client, ENV_ID, seed)
        assert served == local
        assert '"parsed_actions": ["' in served  # the action tool's moves were played as moves
    assert client.delete().status_code == 204


def test_sessions_are_independent(sokoban_server):
    def play(seed: int) -> tuple[str, str]:
        client = Mcp(sokoban_server.url).initialize()
        try:
            return play_both(client, ENV_ID, seed, max_turns=8)
        finally:
            client.delete()

    with ThreadPoolExecutor(8) as pool:
        for local, served in pool.map(play, range(8)):
            assert served == local


BAD_BODIES = [
    # (body, JSON-RPC code, words in the message)
    ("{not json", -32700, "Parse error"),
    ("[" * 100_000, -32700, "Parse error"),
    (b"\xff\xfe", -32700, "Parse error"),
    ("[]", -32600, "Batches"),
    ("3", -32600, "JSON object"),
    ("{}", -32600, "jsonrpc"),
    ('{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600, "jsonrpc"),
    ('{"jsonrpc": "2.0", "id": 1}', -32600, "'method'"),
    ('{"jsonrpc": "2.0", "id": [1], "method": "ping"}', -32600, "'id'"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "ping", "extra": 1}', -32600, "'extra'"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "tools/lsit"}', -32601, "Did you mean 'tools/list'"),
    ('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}', -32602, "'params'"),
]


def call(name, arguments) -> str:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    )


BAD_CALLS = [
    ('{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {}}', -32602, "params.name"),
    (call("mvoe", {"direction": "Up"}), -32602, "Did you mean 'move'"),
    (call(["move"], {}), -32602, "params.name"),
    (call("move", [1]), -32602, "must be an object"),
    (call("move", {}), -32602, "needs the argument 'direction'"),
    (call("move", {"direction": 3}), -32602, "must be a string"),
    (call("move", {"direction": "Up", "x": 1}), -32602, "takes only 'direction'"),
    (call("move", {"direction": "Up||Left"}), -32602, "one action"),
    (call("step", {}), -32602, "'response'"),
    (call("step", {"response": None}), -32602, "'response'"),
    (call("step", {"responce": "x"}), -32602, "takes only 'response'"),
    (call("reset", {"seed": -1}), -32602, "'seed' must be an integer"),
    (call("reset", {"seed": "3"}), -32602, "'seed' must be an integer"),
    (call("reset", {"sead": 3}), -32602, "Did you mean 'seed'"),
    (
        json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "step", "x": 1}}),
        -32602,
        "'x'",
    ),
]


def test_bad_calls_get_json_rpc_errors_and_the_episode_goes_on(sokoban_server):
    client = Mcp(sokoban_server.url).initialize()
    env = gym.make(ENV_ID)
    answer = client.rpc("tools/call", {"name": "move", "arguments": {"direction": "Up"}})
    assert answer["error"]["data"]["code"] == "RESET_NEEDED"
    client.call("reset", seed=5)
    env.reset(seed=5)
    for turn, (body, code, says) in enumerate(BAD_BODIES + BAD_CALLS):
        reply = client.post(body)
        answer = reply.json()
        assert reply.status_code == 200 and answer["jsonrpc"] == "2.0", body[:80]
        assert answer["error"]["code"] == code and says in answer["error"]["message"], (body[:80], answer)
        if (body, code, says) in BAD_CALLS:
            assert answer["id"] == 9
        if turn % 4 == 0:  # ... and the episode is exactly where it was
            response = env.unwrapped.oracle_response()
            local = list(env.step(response))
            assert as_gym(client.call("step", response=response)) == json.loads(json.dumps(local))
            if local[2] or local[3]:
                client.call("reset", seed=5)
                env.reset(seed=5)
    # a notification is accepted without a reply
    reply = client.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert reply.status_code == 202 and reply.content == b""


def test_calls_need_a_live_session(sokoban_server):
    client = Mcp(sokoban_server.url)
    reply = client.post(call("reset", {"seed": 0}))
    assert reply.status_code == 400 and "initialize" in reply.json()["error"]["message"]
    reply = client.post(call("reset", {"seed": 0}), headers={"mcp-session-id": "guess"})
    assert reply.status_code == 404 and reply.json()["error"]["code"] == -32600
    # OpenEnv's session methods: the id in params instead of the header
    created = client.rpc("openenv/session/create")["result"]["session_id"]
    answer = client.rpc("tools/call", {"name": "reset", "arguments": {"seed": 0}, "session_id": created})
    assert answer["result"]["structuredContent"]["observation"] == gym.make(ENV_ID).reset(seed=0)[0]
    assert client.rpc("openenv/session/close", {"session_id": created})["result"]["closed"] is True
    assert "No session" in client.rpc("openenv/session/close", {"session_id": created})["error"]["message"]
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "x" * 2_000_000}})
    reply = client.post(big)
    assert reply.status_code == 413 and reply.json()["error"]["data"]["code"] == "MESSAGE_TOO_LARGE"


def _open_sessions(url: str) -> int:
    return httpx.get(url + "/health", timeout=30).json()["sessions"]


def test_mcp_sessions_share_the_limit_and_the_idle_reaper(start_server):
    server = start_server(ENV_ID, "--max-sessions", "1", "--idle-timeout", "2")
    first = Mcp(server.url).initialize()
    second = Mcp(server.url)
    answer = second.rpc("initialize")
    assert answer["error"]["data"]["code"] == "CAPACITY_REACHED" and "--max-sessions" in answer["error"]["message"]
    assert first.delete().status_code == 204
    wait_until(lambda: _open_sessions(server.url) == 0, what="the deleted session to be freed")
    second.initialize().call("reset", seed=1)
    time.sleep(3)  # silent past --idle-timeout: closed and its slot freed
    wait_until(lambda: _open_sessions(server.url) == 0, what="the idle session to be reaped")
    reply = second.post(call("step", {"response": "x"}))
    assert reply.status_code == 404 and "initialize" in reply.json()["error"]["message"]


def test_the_mcp_sdk_client_plays_an_episode(sokoban_server):
    mcp = pytest.importorskip("mcp")
    from mcp.client import streamable_http

    # the newer name first (the older one is deprecated)
    connect = getattr(streamable_http, "streamable_http_client", None) or streamable_http.streamablehttp_client

    async def play() -> list:
        async with connect(sokoban_server.url + "/mcp") as (read, write, _):
            async with mcp.ClientSession(read, write) as session:
                await session.initialize()
                names = [tool.name for tool in (await session.list_tools()).tools]
                assert names == ["reset", "step", "move"]
                first = await session.call_tool("reset", {"seed": 3})
                moved = await session.call_tool("move", {"direction": "Up"})
                return [first.structuredContent, moved.structuredContent, moved.content[0].text]

    first, moved, text = asyncio.run(play())
    env = gym.make(ENV_ID)
    assert first["observation"] == env.reset(seed=3)[0]
    observation, reward, _, _, info = env.step("<think></think><answer>Up</answer>")
    assert moved["observation"] == text == observation
    assert (moved["reward"], moved["info"]) == (reward, json.loads(json.dumps(info)))
