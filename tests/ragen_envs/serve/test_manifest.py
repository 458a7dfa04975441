"""The OpenEnv packages under deploy/openenv: what the registry generates, what ``openenv push`` and ``AutoEnv``
accept, and an entry point and health check that serve the env behind its token."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from conftest import ADDRESS, START_TIMEOUT_S
from episodes import responses

import ragen_envs
from ragen_envs.serve.manifest import differences, generate, main, package_name
from tests.helpers.paths import ROOT

DEPLOY = ROOT / "deploy" / "openenv"
TOKEN = "t" * 24


def test_committed_packages_equal_what_the_registry_generates():
    stale = differences(DEPLOY, generate())
    assert not stale, f"regenerate with: python -m ragen_envs.serve.manifest ({stale[:5]})"
    own = [i for i in ragen_envs.registered_ids() if gym.spec(i).entry_point.startswith("ragen_envs.")]
    assert sorted(p.name for p in DEPLOY.iterdir()) == sorted(package_name(i) for i in own)


def test_check_names_stale_files_and_writing_fixes_them(tmp_path, capsys):
    assert main(["--out", str(tmp_path)]) == 0
    (tmp_path / "ragen_bandit_v0" / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "ragen_bandit_v0" / "stray.txt").write_text("x")
    assert main(["--out", str(tmp_path), "--check"]) == 1
    err = capsys.readouterr().err
    assert "ragen_bandit_v0/Dockerfile" in err and "ragen_bandit_v0/stray.txt" in err
    assert main(["--out", str(tmp_path)]) == 0
    assert main(["--out", str(tmp_path), "--check"]) == 0 and not (tmp_path / "ragen_bandit_v0" / "stray.txt").exists()


def test_openenv_push_and_autoenv_accept_every_package(monkeypatch):
    yaml = pytest.importorskip("yaml")
    from openenv.auto._discovery import _create_env_info_from_package
    from openenv.cli._cli_utils import validate_env_structure

    monkeypatch.syspath_prepend(str(DEPLOY))
    for directory in sorted(DEPLOY.iterdir()):
        validate_env_structure(directory)  # what `openenv push` checks first; raises on a missing file
        manifest = yaml.safe_load((directory / "openenv.yaml").read_text())
        assert manifest["name"] == directory.name and manifest["spec_version"] == 1
        info = _create_env_info_from_package(f"openenv-{directory.name}", directory.name, manifest["version"])
        client, action, observation = info.get_client_class(), info.get_action_class(), info.get_observation_class()
        assert (action.__name__, observation.__name__) == ("RagenAction", "RagenObservation")
        assert client.__name__ == info.client_class_name


def test_an_installed_package_is_found_by_autoenv_and_plays_the_same_episode(sokoban_server, tmp_path):
    # pip installs the generated package as a user would; AutoEnv finds it among the installed distributions.
    target, source = tmp_path / "site", tmp_path / "ragen_sokoban_v0"
    shutil.copytree(DEPLOY / "ragen_sokoban_v0", source)  # a build writes into the source tree
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--target", str(target),
         str(source)],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    script = f"""
import asyncio, json
from openenv import AutoEnv
from episodes import responses
import gymnasium as gym

async def play():
    env = gym.make("ragen/Sokoban-v0")
    local, served = [], []
    async with AutoEnv.from_env("ragen_sokoban_v0", base_url={sokoban_server.url!r}) as remote:
        result = await remote.reset(seed=4)
        local.append(env.reset(seed=4)[0])
        served.append(result.observation.text)
        for turn in range(12):
            response = responses(env, turn)
            result = await remote.step(response)
            text, reward, terminated, truncated, info = env.step(response)
            local.append([text, reward, terminated, truncated, info])
            o = result.observation
            served.append([o.text, result.reward, o.terminated, o.truncated, o.info])
            if terminated or truncated:
                break
    print(type(remote).__name__, json.dumps(local) == json.dumps(served), len(local))

asyncio.run(play())
"""
    path = os.pathsep.join([str(target), str(ROOT), str(Path(__file__).parent)])
    env = {**os.environ, "PYTHONPATH": path, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env["HOME"] = str(tmp_path)  # AutoEnv's discovery cache
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    name, same, turns = run.stdout.split()[-3:]
    assert (name, same) == ("RagenSokobanV0Env", "True") and int(turns) > 2


def start_entry_point(env: dict[str, str]) -> tuple[subprocess.Popen, str | None]:
    proc = subprocess.Popen(
        [sys.executable, str(DEPLOY / "ragen_bandit_v0" / "server" / "app.py")],
        env={**os.environ, "PYTHONPATH": str(ROOT), "PORT": "0", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()  # the address line, or "" when it exits
    match = ADDRESS.search(line)
    return proc, match.group(1) if match else None


def healthcheck(url: str, token: str) -> int:
    """Exit status of the Dockerfile's own HEALTHCHECK command, run against ``url``."""
    dockerfile = (DEPLOY / "ragen_bandit_v0" / "Dockerfile").read_text()
    command = json.loads(re.search(r"^HEALTHCHECK .*? CMD (\[.*\])$", dockerfile, re.M).group(1))
    assert command[0] == "python"
    env = {**os.environ, "PORT": url.rsplit(":", 1)[1], "RAGEN_ENVS_TOKEN": token}
    return subprocess.run([sys.executable, *command[1:]], env=env, capture_output=True, timeout=60).returncode


def test_the_entry_point_serves_behind_its_token_and_the_healthcheck_passes():
    import httpx

    proc, url = start_entry_point({"HOST": "127.0.0.1", "RAGEN_ENVS_TOKEN": TOKEN, "RAGEN_ENVS_ALLOW_HOSTS": "space.example"})  # fmt: skip
    try:
        assert url is not None, proc.stderr.read()[-2000:]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(url + "/health", timeout=START_TIMEOUT_S).status_code == 401
        health = httpx.get(url + "/health", headers=auth, timeout=60).json()
        assert health["status"] == "healthy" and health["env_id"] == "ragen/Bandit-v0"
        assert httpx.get(url + "/health", headers={**auth, "Host": "space.example"}, timeout=60).status_code == 200
        assert httpx.get(url + "/health", headers={**auth, "Host": "other.example"}, timeout=60).status_code == 403
        assert healthcheck(url, TOKEN) == 0 and healthcheck(url, "wrong-token-wrong-token") != 0
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_entry_point_refuses_to_serve_other_machines_without_a_token():
    # The image's default: every interface. Without RAGEN_ENVS_TOKEN it stops at once, saying what to give.
    proc, url = start_entry_point({"RAGEN_ENVS_TOKEN": ""})
    assert url is None and proc.wait(START_TIMEOUT_S) == 2
    assert "--token-env" in proc.stderr.read()


def test_autoenv_class_names_follow_the_package_name():
    from openenv.auto._discovery import _infer_class_name

    for env_id in ragen_envs.registered_ids():
        if gym.spec(env_id).entry_point.startswith("ragen_envs."):
            name = package_name(env_id)
            source = (DEPLOY / name / "client.py").read_text()
            assert f"class {_infer_class_name(name + '_env', 'client')}(" in source


def test_episodes_through_the_typed_client_equal_in_process_ones(sokoban_server):
    from ragen_envs.serve.openenv_client import RagenEnvClient

    async def play(seed: int) -> tuple[str, str]:
        env = gym.make("ragen/Sokoban-v0")
        env.action_space.seed(seed)
        async with RagenEnvClient(base_url=sokoban_server.url) as remote:
            first = await remote.reset(seed=seed)
            local, served = [list(env.reset(seed=seed))], [[first.observation.text, first.observation.info]]
            for turn in range(15):
                response = responses(env, turn)
                result = await remote.step(response)
                local.append(list(env.step(response)))
                o = result.observation
                served.append([o.text, result.reward, o.terminated, o.truncated, o.info])
                if result.done:
                    break
            state = await remote.state()
        assert state.env_id == "ragen/Sokoban-v0" and state.seed == seed
        return json.dumps(local), json.dumps(served)

    for seed in (0, 5):
        local, served = asyncio.run(play(seed))
        assert served == local


def test_token_env_names_what_is_wrong(monkeypatch, capsys):
    from ragen_envs.serve.__main__ import main as serve_main

    monkeypatch.delenv("RAGEN_TEST_TOKEN", raising=False)
    assert serve_main(["--env", "ragen/Bandit-v0", "--token-env", "RAGEN_TEST_TOKEN"]) == 2
    assert "--token-env RAGEN_TEST_TOKEN: the variable is not set" in capsys.readouterr().err
    monkeypatch.setenv("RAGEN_TEST_TOKEN", "short")
    assert serve_main(["--env", "ragen/Bandit-v0", "--token-env", "RAGEN_TEST_TOKEN"]) == 2
    assert "at least 16 characters" in capsys.readouterr().err
