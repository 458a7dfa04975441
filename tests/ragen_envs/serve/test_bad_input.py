"""Bad requests get an answer naming what is wrong and cost the session nothing; nothing waits forever."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest
from conftest import wait_until
from episodes import lockstep
from websockets.sync.client import connect

from ragen_envs.serve import Client, ServerError, ServerGone
from tests.helpers.paths import ROOT

ENV_ID = "ragen/Sokoban-v0"


def ws(url: str):
    return connect(url.replace("http://", "ws://") + "/ws", open_timeout=10, close_timeout=2, max_size=None)


def ask(sock, message: str | bytes) -> dict:
    sock.send(message)
    return json.loads(sock.recv(timeout=60))


BAD_REQUESTS = [
    ("{not json", "INVALID_JSON", "Invalid JSON"),
    ("[" * 100_000, "INVALID_JSON", "Invalid JSON"),
    ('{"type": "reset", "data": {"seed": ' + "9" * 5000 + "}}", "INVALID_JSON", "Invalid JSON"),
    ("[1, 2]", "VALIDATION_ERROR", "JSON object"),
    ("{}", "VALIDATION_ERROR", "'type'"),
    ('{"type": 3}', "VALIDATION_ERROR", "'type'"),
    ('{"type": "stpe"}', "UNKNOWN_TYPE", "Did you mean 'step'"),
    ('{"type": "reset", "id": 1}', "VALIDATION_ERROR", "'id'"),
    ('{"type": "reset", "data": [3]}', "VALIDATION_ERROR", "'data'"),
    ('{"type": "reset", "data": {"sead": 3}}', "VALIDATION_ERROR", "Did you mean 'seed'"),
    ('{"type": "reset", "data": {"seed": "3"}}', "VALIDATION_ERROR", "'seed' must be an integer"),
    ('{"type": "reset", "data": {"seed": -1}}', "VALIDATION_ERROR", "'seed' must be an integer"),
    ('{"type": "reset", "data": {"seed": true}}', "VALIDATION_ERROR", "'seed' must be an integer"),
    ('{"type": "reset", "data": {"seed": 1.5}}', "VALIDATION_ERROR", "'seed' must be an integer"),
    ('{"type": "reset", "data": {"episode_id": 7}}', "VALIDATION_ERROR", "'episode_id'"),
    ('{"type": "step"}', "VALIDATION_ERROR", '"response"'),
    ('{"type": "step", "data": {"response": 5}}', "VALIDATION_ERROR", "'response' must be a string"),
    ('{"type": "step", "data": {"response": null}}', "VALIDATION_ERROR", "'response' must be a string"),
    ('{"type": "step", "data": {"responce": "x", "response": "y"}}', "VALIDATION_ERROR", "Did you mean 'response'"),
    ('{"type": "state", "data": {"x": 1}}', "VALIDATION_ERROR", "no data"),
    (b'{"type": "state"}', "VALIDATION_ERROR", "text frames"),
    (json.dumps({"type": "step", "data": {"response": "x" * 2_000_000}}), "MESSAGE_TOO_LARGE", "at most 1048576"),
]


def test_bad_requests_are_answered_and_the_episode_goes_on(sokoban_server):
    server = sokoban_server
    env = gym.make(ENV_ID)
    with ws(server.url) as sock:
        assert ask(sock, '{"type": "step", "data": {"response": "x"}}')["data"]["code"] == "RESET_NEEDED"
        first = ask(sock, json.dumps({"type": "reset", "data": {"seed": 5}}))
        assert first["data"]["observation"]["text"] == env.reset(seed=5)[0]
        for turn, (request, code, says) in enumerate(BAD_REQUESTS):
            answer = ask(sock, request)
            assert answer["type"] == "error" and answer["data"]["code"] == code, request[:80]
            assert says in answer["data"]["message"], answer
            assert "\n" not in answer["data"]["message"]
            # ... and the episode is exactly where it was: the next real step matches the local env's.
            if turn % 5 == 0:
                response = env.unwrapped.oracle_response()
                served = ask(sock, json.dumps({"type": "step", "data": {"response": response}}))["data"]
                text, reward, terminated, truncated, info = env.step(response)
                assert (served["observation"]["text"], served["reward"], served["observation"]["info"]) == (
                    text,
                    reward,
                    info,
                )
                if terminated or truncated:
                    ask(sock, json.dumps({"type": "reset", "data": {"seed": 5}}))
                    env.reset(seed=5)


def test_step_after_the_episode_ended_needs_a_reset(sokoban_server):
    server = sokoban_server
    env = gym.make(ENV_ID)
    with Client(server.url) as remote:
        remote.reset(seed=2)
        env.reset(seed=2)
        done = False
        while not done:
            response = env.unwrapped.oracle_response()
            _, _, terminated, truncated, _ = env.step(response)
            done = remote.step(response)[2] or terminated or truncated
        with pytest.raises(ServerError) as err:
            remote.step("<think>x</think><answer>Up</answer>")
        assert err.value.code == "RESET_NEEDED"
        assert remote.state()["needs_reset"] is True
        local, served = lockstep(ENV_ID, 9, remote)
        assert served == local
        with pytest.raises(TypeError, match="str"):
            remote.step(3)


def test_session_limit_and_idle_reaper(start_server):
    server = start_server(ENV_ID, "--max-sessions", "2", "--idle-timeout", "5")
    first, second = Client(server.url), Client(server.url)
    first.reset(seed=0)
    second.reset(seed=0)
    third = Client(server.url)
    with pytest.raises(ServerGone, match="--max-sessions") as err:
        third.reset(seed=0)
    assert err.value.code == "CAPACITY_REACHED"
    third.close()
    # Closing a session frees its slot.
    second.close()
    wait_until(lambda: _open_sessions(server.url) <= 1, what="the closed session to be freed")
    with Client(server.url) as fourth:
        fourth.reset(seed=1)
        # A session that stays silent past --idle-timeout is closed, with the reason, and its slot freed.
        time.sleep(6.5)
        with pytest.raises(ServerGone, match="--idle-timeout") as err:
            fourth.step("<think>x</think><answer>Up</answer>")
        assert err.value.code == "IDLE_TIMEOUT"
    with pytest.raises(ServerGone, match="--idle-timeout"):
        first.reset(seed=0)
    wait_until(lambda: _open_sessions(server.url) == 0, what="idle sessions to be reaped")
    with Client(server.url) as fifth:
        assert fifth.reset(seed=0)[0] == gym.make(ENV_ID).reset(seed=0)[0]


def test_idle_reaper_tells_the_client_why(start_server):
    server = start_server(ENV_ID, "--idle-timeout", "1")
    with ws(server.url) as sock:
        message = json.loads(sock.recv(timeout=30))
    assert message["data"]["code"] == "IDLE_TIMEOUT" and "--idle-timeout" in message["data"]["message"]


def _open_sessions(url: str) -> int:
    import urllib.request

    with urllib.request.urlopen(url + "/health", timeout=10) as answer:
        return json.load(answer)["sessions"]


def test_a_step_past_the_step_timeout_ends_the_session_and_others_wait_their_turn(start_server):
    env_kwargs = '{"per_test_s": 6.0, "num_hidden_tests": 1}'
    server = start_server("ragen/CodeExec-v0", "--step-timeout", "2", "--env-kwargs", env_kwargs)
    other = Client(server.url)
    with Client(server.url) as remote:
        name = re.search(r"def (\w+)\(", remote.reset(seed=0)[0]).group(1)
        sleeper = (
            f"<think>wait</think><answer>```python\ndef {name}(*a):\n    import time\n    time.sleep(10)\n```</answer>"
        )
        started = time.monotonic()
        with ThreadPoolExecutor(1) as pool:
            stuck = pool.submit(remote.step, sleeper)
            time.sleep(0.5)
            # The env thread is busy with the sleeper: another session's call is not run, and says so.
            with pytest.raises(ServerError) as busy:
                other.reset(seed=4)
            assert busy.value.code == "BUSY" and "nothing was run" in busy.value.message
            with pytest.raises(ServerGone, match="--step-timeout") as err:
                stuck.result(timeout=60)
        assert err.value.code == "TIMEOUT"
        assert time.monotonic() - started < 5.5  # answered at the timeout, not when the step finished
        with pytest.raises(ServerGone, match="open a new Client"):
            remote.step(sleeper)
    # Once the thread is free, the waiting session plays on as if nothing happened.
    deadline = time.monotonic() + 120
    while True:
        try:
            text, _ = other.reset(seed=4)
            break
        except ServerError as e:
            assert e.code == "BUSY" and time.monotonic() < deadline
    assert text == gym.make("ragen/CodeExec-v0", per_test_s=6.0, num_hidden_tests=1).reset(seed=4)[0]
    other.close()


def test_a_server_that_dies_mid_episode_is_a_clear_error_not_a_hang(start_server):
    server = start_server(ENV_ID)
    remote = Client(server.url, timeout=30)
    remote.reset(seed=0)
    remote.step("<think>x</think><answer>Up</answer>")
    server.proc.kill()
    server.proc.wait(10)
    started = time.monotonic()
    with pytest.raises(ServerGone, match="closed the connection during step") as err:
        remote.step("<think>x</think><answer>Up</answer>")
    assert time.monotonic() - started < 10 and err.value.code is None
    with pytest.raises(ServerGone, match="open a new Client"):
        remote.step("<think>x</think><answer>Up</answer>")
    with pytest.raises(ServerGone, match="Is `python -m ragen_envs.serve` running"):
        Client(server.url, connect_timeout=5)


def test_a_server_that_stops_answering_times_out(start_server):
    server = start_server(ENV_ID)
    remote = Client(server.url, timeout=1.0)
    remote.reset(seed=0)
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="within 1 s"):
            remote.step("<think>x</think><answer>Up</answer>")
        assert time.monotonic() - started < 8
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ragen_envs.serve", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )


@pytest.mark.parametrize(
    "args, says",
    [
        (["--env", "ragen/Sokobn-v0"], "Did you mean 'ragen/Sokoban-v0'?"),
        (["--env", "ragen/Sokoban-v0", "--env-kwargs", '{"room_sise": 6}'], "Did you mean 'room_size'?"),
        (["--env", "ragen/Sokoban-v0", "--env-kwargs", '{"max_turns": 0}'], "max_turns must be in"),
        (["--env", "ragen/Sokoban-v0", "--env-kwargs", "{max_turns: 3}"], "--env-kwargs is not JSON"),
        (["--env", "ragen/Sokoban-v0", "--env-kwargs", "[3]"], "env_kwargs must be a JSON object"),
        (["--env", "ragen/Sokoban-v0", "--max-sessions", "0"], "max_sessions must be in"),
    ],
)
def test_bad_start_is_one_line_naming_the_fix(args, says):
    done = run_cli(*args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], done.stderr
    assert "Traceback" not in done.stderr


BLOCK_SERVE_EXTRA = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("openenv", "fastapi", "uvicorn", "websockets", "starlette"):
            raise ModuleNotFoundError(f"No module named {name!r}")
sys.meta_path.insert(0, Block())
"""


def test_the_package_works_without_the_serve_extra(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(BLOCK_SERVE_EXTRA)
    blocked = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    code = (
        "import gymnasium as gym, ragen_envs, ragen_envs.serve\n"
        "env = gym.make('ragen/Sokoban-v0'); env.reset(seed=0)\n"
        "try:\n    ragen_envs.serve.Client\nexcept ImportError as e:\n    print(e)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **blocked},
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'ragen-envs[serve]'" in done.stdout
    cli = run_cli("--env", "ragen/Sokoban-v0", env=blocked)
    assert cli.returncode == 2 and "pip install 'ragen-envs[serve]'" in cli.stderr
    assert len(cli.stderr.strip().splitlines()) == 1
