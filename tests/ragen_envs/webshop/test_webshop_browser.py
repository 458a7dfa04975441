"""A real browser (headless Chromium, driven over the DevTools protocol) shops on the server.

It starts a session from the index page's form, searches through the search form, opens an item, picks
options and buys by clicking the page's links, and checks every page and the final reward against the
in-process env played with the same seed and actions.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from ragen_envs.webshop.env import WebShopEnv
from ragen_envs.webshop.pages import parse_html
from ragen_envs.webshop.serve import ShopServer

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking")


class DevTools:
    """The few DevTools-protocol calls the test needs, over one websocket to one page."""

    def __init__(self, ws_url: str) -> None:
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=20, suppress_origin=True)
        self.ids = itertools.count(1)

    def call(self, method: str, **params):
        msg_id = next(self.ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def js(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for_version(self, version: int, timeout: float = 20.0) -> str:
        """Wait until the shop page with this version has loaded; return its HTML."""
        probe = "(() => { const m = document.querySelector('main.ws-page'); return m && document.readyState === 'complete' ? Number(m.dataset.version) : null })()"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.js(probe) == version:
                    return self.js("document.documentElement.outerHTML")
            except RuntimeError:
                pass  # the page is navigating: the old document is gone
            time.sleep(0.05)
        raise TimeoutError(f"page version {version} did not load; at {self.js('location.href')}")

    def close(self) -> None:
        self.ws.close()


@pytest.fixture
def browser(tmp_path: Path):
    if CHROMIUM is None:
        pytest.skip("needs Chromium (apt-get install chromium; scripts/install.sh --test installs it)")
    pytest.importorskip("websocket", reason="needs websocket-client (the dev extra)")
    profile = tmp_path / "profile"
    proc = subprocess.Popen(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, "chromium exited at start"
            assert time.monotonic() < deadline, "chromium did not open its DevTools port"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            targets = json.load(response)
        page = next(t for t in targets if t["type"] == "page")
        tools = DevTools(page["webSocketDebuggerUrl"])
        yield tools
        tools.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _quote_js(text: str) -> str:
    return json.dumps(text)


def test_a_browser_shops_and_earns_the_in_process_reward(browser):
    seed = 6
    env = WebShopEnv(response_format="raw")
    env.reset(seed=seed)
    with ShopServer("1k") as server:
        browser.call("Page.navigate", url=server.url)
        deadline = time.monotonic() + 20
        while browser.js("document.querySelector('input[name=seed]') !== null && document.readyState") != "complete":
            assert time.monotonic() < deadline, "index page did not load"
            time.sleep(0.05)
        browser.js(f"document.querySelector('input[name=seed]').value = '{seed}'; document.forms[0].submit()")
        page = parse_html(browser.wait_for_version(0)).page
        assert page == env.page
        seen = []
        while env.page.kind != "done":
            action = env.oracle_response()
            verb, arg = action[:-1].split("[", 1)
            if verb == "search":
                browser.js(f"document.getElementById('search_input').value = {_quote_js(arg)};")
                browser.js("document.querySelector('form.ws-search button').click()")
            else:
                browser.js(f"document.querySelector('a[data-key=' + CSS.escape({_quote_js(arg)}) + ']').click()")
            env.step(action)
            seen.append(env.page.kind)
            page = parse_html(browser.wait_for_version(env.page.version)).page
            assert page == env.page, action
        assert {"results", "item", "done"} <= set(seen)
        assert sum(1 for kind in seen if kind == "item") >= 2, "the browser picked at least one option"
        reward = float(browser.js("document.querySelector('meta[name=ws-reward]').content"))
        assert reward == env.page.reward == 1.0
        assert "Your score (min 0.0, max 1.0)" in browser.js("document.body.innerText")

        # A hastier shopper: the first result, no options. The reward is partial, and the same as in-process.
        env.reset(seed=seed + 1)
        browser.call("Page.navigate", url=f"{server.url}new?seed={seed + 1}")
        browser.wait_for_version(0)
        browser.js(f"document.getElementById('search_input').value = {_quote_js(env.task.query)};")
        browser.js("document.querySelector('form.ws-search button').click()")
        env.step(f"search[{env.task.query}]")
        first = env.page.products()[0].lower()
        assert parse_html(browser.wait_for_version(1)).page == env.page
        for key, version in ((first, 2), ("buy now", 3)):
            browser.js(f"document.querySelector('a[data-key=' + CSS.escape({_quote_js(key)}) + ']').click()")
            env.step(f"click[{key}]")
            assert parse_html(browser.wait_for_version(version)).page == env.page
        reward = float(browser.js("document.querySelector('meta[name=ws-reward]').content"))
        assert reward == env.page.reward < 1.0
