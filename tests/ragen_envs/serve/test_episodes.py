"""Episodes over the socket are byte-identical to in-process ``gym.make``, for every registered env, with our
client and with OpenEnv's own."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest
from conftest import Server
from episodes import lockstep, responses

import ragen_envs
from ragen_envs.serve import Client

ENV_IDS = ragen_envs.registered_ids()
SEEDS = (0, 1, 7)


@pytest.fixture(scope="module")
def servers():
    """One server per registered id, started side by side (each start is mostly imports)."""
    started = {env_id: Server(env_id) for env_id in ENV_IDS}
    try:
        for server in started.values():
            server.wait()
        yield started
    finally:
        for server in started.values():
            server.stop()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_served_episodes_equal_in_process_ones(servers, env_id):
    turns = 0
    with Client(servers[env_id].url) as remote:
        for seed in SEEDS:
            local, served = lockstep(env_id, seed, remote)
            assert served == local, f"{env_id} seed {seed}"
            turns += len(json.loads(local)) - 1
    # The script plays past the first turn wherever the env allows more than one.
    assert turns >= min(2, gym.make(env_id).unwrapped.max_turns) * len(SEEDS)


def test_the_tool_format_is_served_like_any_env_kwarg():
    kwargs = {"response_format": "tool"}
    server = Server("ragen/Sokoban-v0", "--env-kwargs", json.dumps(kwargs))
    try:
        server.wait()
        with Client(server.url) as remote:
            _, info = remote.reset(seed=0)
            assert [tool["function"]["name"] for tool in info["tools"]] == ["move"] and "<tools>" in info[
                "instructions"
            ]
            for seed in SEEDS:  # random and oracle turns are tool calls, junk is refused
                local, served = lockstep("ragen/Sokoban-v0", seed, remote, **kwargs)
                assert served == local and '"action_is_valid": true' in local
    finally:
        server.stop()


def test_many_concurrent_sessions_each_get_their_own_episode(sokoban_server):
    sessions = 32  # of the server's default 64
    server = sokoban_server

    def play(i: int) -> tuple[str, str]:
        with Client(server.url) as remote:
            return lockstep("ragen/Sokoban-v0", 100 + i, remote)

    with ThreadPoolExecutor(sessions) as pool:
        results = list(pool.map(play, range(sessions)))
    for local, served in results:
        assert served == local
    assert len({local for local, _ in results}) == sessions


def test_openenv_generic_client_plays_the_same_episodes(sokoban_server):
    from openenv import GenericEnvClient

    env_id = "ragen/Sokoban-v0"
    server = sokoban_server

    async def play(seed: int) -> tuple[list, list]:
        env = gym.make(env_id)
        env.action_space.seed(seed)
        text, info = env.reset(seed=seed)
        local, served = [[text, info, None, False]], []
        async with GenericEnvClient(base_url=server.url) as remote:
            result = await remote.reset(seed=seed)
            served.append([result.observation["text"], result.observation["info"], result.reward, result.done])
            for turn in range(30):
                response = responses(env, turn)
                text, reward, terminated, truncated, info = env.step(response)
                local.append([text, info, reward, terminated or truncated])
                result = await remote.step({"response": response})
                served.append([result.observation["text"], result.observation["info"], result.reward, result.done])
                if terminated or truncated:
                    break
        return local, served

    async def main():
        return await asyncio.gather(*(play(seed) for seed in range(8)))

    for local, served in asyncio.run(main()):
        assert json.dumps(served) == json.dumps(local)


def test_http_endpoints_describe_the_env(sokoban_server):
    import urllib.request

    def get(path: str) -> dict:
        with urllib.request.urlopen(sokoban_server.url + path, timeout=30) as answer:
            return json.load(answer)

    assert get("/health")["status"] == "healthy"
    assert get("/metadata")["name"] == "ragen/Sokoban-v0"
    schema = get("/schema")
    assert schema["action"]["required"] == ["response"]
    assert {"text", "info", "terminated", "truncated", "done", "reward"} <= set(schema["observation"]["properties"])
