"""The shop as a website: parity with the in-process env, bad input, concurrent sessions, limits, the CLI."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
from urllib.parse import quote, urlsplit

import pytest

from ragen_envs.webshop.env import WebShopEnv
from ragen_envs.webshop.pages import parse_html
from ragen_envs.webshop.serve import ShopServer
from ragen_envs.webshop.transport import HttpTransport

JUNK = ("", "<answer>", "click[nothing here]", "search[]", "SEARCH[Blue]", "click[< PREV]", "click[next >]")


@pytest.fixture(scope="module")
def server():
    with ShopServer("1k", max_sessions=64) as srv:
        yield srv


def _get(server, method: str, path: str, body: str | None = None):
    host, port = urlsplit(server.url).hostname, urlsplit(server.url).port
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        headers = {"Content-Type": "application/x-www-form-urlencoded"} if body is not None else {}
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode(), response.getheader("Location")
    finally:
        conn.close()


def _new_session(server, seed: int = 0) -> str:
    status, _, location = _get(server, "POST", f"/new?seed={seed}")
    assert status == 303 and location.startswith("/s/")
    return location.rstrip("/")


def _rollout(env: WebShopEnv, seed: int, responses_rng_seed: int) -> list:
    """Oracle turns mixed with junk and sampled responses; the record of everything the env returned."""
    env.action_space.seed(responses_rng_seed)
    obs, info = env.reset(seed=seed)
    record = [obs, info]
    for turn in range(env.max_turns):
        if turn % 3 == 1:
            response = JUNK[(seed + turn) % len(JUNK)]
        elif turn % 3 == 2:
            response = env.action_space.sample()
        else:
            response = env.oracle_response()
        step = env.step(response)
        record.append((response, *step))
        if step[2] or step[3]:
            break
    return record


def test_http_and_in_process_give_identical_episodes(server):
    local = WebShopEnv()
    remote = WebShopEnv(transport="http", server_url=server.url)
    try:
        for seed in range(12):
            assert repr(_rollout(remote, seed, seed)) == repr(_rollout(local, seed, seed))
        for seed in range(12, 20):  # pure oracle episodes end in a purchase: compare the reward there
            a, b = local.reset(seed=seed), remote.reset(seed=seed)
            assert a == b
            while True:
                x, y = local.step(local.oracle_response()), remote.step(remote.oracle_response())
                assert repr(x) == repr(y)
                if x[2] or x[3]:
                    break
            assert x[2] and x[1] == y[1] == x[4]["purchase_reward"]
    finally:
        remote.close()


def test_http_env_without_url_starts_and_stops_its_own_server():
    env = WebShopEnv(transport="http")
    env.reset(seed=3)
    url = env._transport.url
    env.step(env.oracle_response())
    assert env.page.kind == "results"
    env.close()
    with pytest.raises(OSError):
        http.client.HTTPConnection(urlsplit(url).hostname, urlsplit(url).port, timeout=2).request("GET", "/")


def test_http_env_refuses_a_server_of_another_tier(server):
    with pytest.raises(ValueError, match="serves tier '1k', not tier '10k'"):
        WebShopEnv(tier="10k", transport="http", server_url=server.url).reset(seed=0)


@pytest.mark.parametrize(
    "method, path, status, reason",
    [
        ("GET", "/s/" + "0" * 32 + "/", 404, "unknown session"),
        ("GET", "/s/not-a-session/", 400, "malformed session id"),
        ("GET", "/s/", 400, "malformed session id"),
        ("GET", "/nowhere", 404, "no such page"),
        ("GET", "/static/../../../etc/passwd", 400, "path traversal"),
        ("GET", "/static/%2e%2e/%2e%2e/etc/passwd", 400, "path traversal"),
        ("GET", "/static/secret.txt", 404, "no such page"),
        ("GET", "/new?seed=-1", 400, "'seed' must be in"),
        ("GET", "/new?seed=abc", 400, "must be an integer"),
        ("GET", "/new?task=99999999999999", 400, "'task' must be in"),
        ("GET", "/new", 400, "missing parameter 'seed'"),
        ("PUT", "/new?seed=1", 405, "not allowed"),
        ("GET", "/" + "a" * 5000, 414, "URL too long"),
    ],
)
def test_bad_requests_get_a_4xx_with_a_reason(server, method, path, status, reason):
    got, body, _ = _get(server, method, path)
    assert got == status and reason in body, body


def test_bad_actions_in_a_session_do_not_disturb_it_or_others(server):
    mine, other = _new_session(server, 1), _new_session(server, 2)
    _, other_before, _ = _get(server, "GET", other + "/")
    _, page_html, _ = _get(server, "GET", mine + "/")
    before = parse_html(page_html).page
    bad = [
        (f"{mine}/search?q=jacket", 400, "missing parameter 'v'"),
        (f"{mine}/search?q=jacket&v=x", 400, "must be an integer"),
        (f"{mine}/search?q={'a' * 600}&v=0", 414, "search query too long"),
        (f"{mine}/search?q=jacket&v=7", 409, "stale link"),
        (f"{mine}/click?el=buy%20now&v=0", 400, "nothing called 'buy now'"),
        (f"{mine}/click?el={quote('<script>')}&v=0", 400, "nothing called"),
        (f"{mine}/checkout", 404, "no such session page"),
        (f"{mine}/../../etc/passwd", 400, "path traversal"),
    ]
    for path, status, reason in bad:
        got, body, _ = _get(server, "GET", path)
        assert got == status and reason in body, (path, got, body)
    _, after_html, _ = _get(server, "GET", mine + "/")
    assert parse_html(after_html).page == before
    status, _, location = _get(server, "GET", f"{mine}/search?q=jacket&v=0")
    assert status == 303 and location == mine + "/"
    _, again, _ = _get(server, "GET", f"{mine}/search?q=jacket&v=0")  # the same link twice: refused, not replayed
    assert "stale link" in again
    assert _get(server, "GET", other + "/")[1] == other_before


def test_finished_and_closed_sessions(server):
    session = _new_session(server, 4)
    transport = HttpTransport("1k", server.url)
    try:
        env = WebShopEnv(transport="http", server_url=server.url)
        env.reset(seed=4)
        while not env._done:
            env.step(env.oracle_response())
        path = env._transport._session_path
        page = env.page
        status, body, _ = _get(server, "GET", f"{path}/click?el=buy%20now&v={page.version}")
        assert status == 409 and "episode is finished" in body
        env.close()
        assert _get(server, "GET", path + "/")[0] == 404  # closed on env.close()
    finally:
        transport.close()
    assert _get(server, "POST", session + "/close")[0] == 200
    assert _get(server, "POST", session + "/close")[0] == 404


def test_browser_form_post_starts_a_session(server):
    status, _, location = _get(server, "POST", "/new", body="seed=5")
    assert status == 303
    _, page_html, _ = _get(server, "GET", location)
    env = WebShopEnv()
    env.reset(seed=5)
    assert parse_html(page_html).page == env.page


def test_concurrent_sessions_do_not_leak_state(server):
    seeds = list(range(30, 42))
    expected = {}
    local = WebShopEnv()
    for seed in seeds:
        expected[seed] = repr(_rollout(local, seed, seed))
    got, errors = {}, []

    def worker(chunk):
        env = WebShopEnv(transport="http", server_url=server.url)
        try:
            for seed in chunk:
                got[seed] = repr(_rollout(env, seed, seed))
        except Exception as err:  # noqa: BLE001 - reported by the assert below
            errors.append(err)
        finally:
            env.close()

    threads = [threading.Thread(target=worker, args=(seeds[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert got == expected


def test_session_limit_and_idle_reaper():
    with ShopServer("1k", max_sessions=2, idle_timeout=60) as small:
        first, second = _new_session(small), _new_session(small)
        status, body, _ = _get(small, "GET", "/new?seed=3")
        assert status == 429 and "session limit (2) reached" in body
        assert _get(small, "GET", first + "/")[0] == 200  # existing sessions still work
        import time

        assert small.reap(now=time.monotonic() + 61) == 2
        assert _get(small, "GET", second + "/")[0] == 404
        assert json.loads(_get(small, "GET", "/api/info")[1])["sessions"] == 0
        _new_session(small)


def test_the_reaper_thread_drops_idle_sessions_on_its_own():
    import time

    with ShopServer("1k", idle_timeout=0.2) as quick:
        session = _new_session(quick)
        deadline = time.monotonic() + 10
        while _get(quick, "GET", "/api/info") and json.loads(_get(quick, "GET", "/api/info")[1])["sessions"]:
            assert time.monotonic() < deadline, "the reaper never ran"
            time.sleep(0.1)
        assert _get(quick, "GET", session + "/")[0] == 404


def test_server_refuses_a_non_loopback_host_unless_allowed():
    with pytest.raises(ValueError, match="not a loopback address"):
        ShopServer("1k", host="0.0.0.0")


def test_cli_prints_its_url_and_serves():
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragen_envs.webshop.serve", "--tier", "1k", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = proc.stdout.readline()
        assert "serving at http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        url = line.split("serving at ", 1)[1].strip()
        parts = urlsplit(url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        conn.request("GET", "/api/info")
        info = json.loads(conn.getresponse().read())
        assert info["tier"] == "1k" and info["products"] == 1000
        conn.request("GET", "/")
        assert "Start shopping" in conn.getresponse().read().decode()
        conn.close()
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0


def test_hostile_responses_over_http_never_raise_and_match_in_process(server):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    local = WebShopEnv(response_format="raw")
    remote = WebShopEnv(response_format="raw", transport="http", server_url=server.url)
    pieces = st.sampled_from(
        ["search[", "click[", "]", "next >", "< prev", "buy now", "\x00", "é", "\u212a", " ", "%2e"]
    )
    hostile = st.one_of(
        st.text(max_size=200),
        st.lists(st.one_of(pieces, st.text(max_size=8)), max_size=30).map("".join),
        st.builds(lambda s: f"search[{s}]", st.text(max_size=3000)),
    )

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(hostile)
    def same_outcome(response):
        if local._done:
            local.reset(seed=1)
            remote.reset(seed=1)
        assert repr(remote.step(response)) == repr(local.step(response))

    local.reset(seed=1)
    remote.reset(seed=1)
    try:
        same_outcome()
    finally:
        remote.close()
