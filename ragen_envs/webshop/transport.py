"""How the env reaches the shop: in-process (fast path) or over HTTP, through the site's own links.

Both return the :class:`~ragen_envs.webshop.pages.Page` the shop shows after each action. The HTTP transport
never sees server state: it parses each HTML page back into a ``Page``, follows the link of the element
it clicks and submits the search form, exactly as a browser would.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlencode, urljoin, urlsplit

from ragen_envs.webshop.pages import Page, ParsedPage, parse_html
from ragen_envs.webshop.shop import Shop, ShopState, build_page, click, new_state, search


class InProcessTransport:
    """Runs the shop's rules in this process."""

    def __init__(self, shop: Shop) -> None:
        self.shop = shop
        self.state: ShopState | None = None

    def start(self, task_id: int) -> Page:
        """Start task ``task_id``; returns the search page."""
        self.state = new_state(self.shop, task_id)
        return build_page(self.shop, self.state)

    def search(self, query: str) -> Page:
        """``search[query]``; returns the page shown after it."""
        search(self.shop, self.state, query)
        return build_page(self.shop, self.state)

    def click(self, key: str) -> Page:
        """``click[key]``; returns the page shown after it."""
        click(self.shop, self.state, key)
        return build_page(self.shop, self.state)

    def close(self) -> None:
        """Drop the session state."""
        self.state = None


class ShopHTTPError(RuntimeError):
    """The server answered an action with an error status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class HttpTransport:
    """Drives a shop server (``python -m ragen_envs.webshop.serve``) over one keep-alive connection.

    With no ``url`` it starts a private server on a loopback port and stops it on :meth:`close`.
    """

    def __init__(self, tier: str, url: str | None = None, timeout: float = 30.0) -> None:
        self._server = None
        if url is None:
            from ragen_envs.webshop.serve import ShopServer

            self._server = ShopServer(tier).start()
            url = self._server.url
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"server_url must look like http://host:port/, got {url!r}")
        self.url = url
        self._host, self._port, self._timeout = parts.hostname, parts.port or 80, timeout
        self._conn: http.client.HTTPConnection | None = None
        self._session_path: str | None = None
        self._parsed: ParsedPage | None = None
        try:
            info = json.loads(self._request("GET", "/api/info")[1])
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise ConnectionError(
                f"cannot reach the web shop server at server_url={url!r} ({exc}); start one with "
                f"`python -m ragen_envs.webshop.serve --tier {tier}` or fix the URL"
            ) from None
        if info.get("tier") != tier:
            self.close()
            raise ValueError(f"the server at {url} serves tier {info.get('tier')!r}, not tier {tier!r}")

    def _request(self, method: str, path: str) -> tuple[int, str, str | None]:
        """(status, body, Location) for one request, reconnecting once if the keep-alive socket was closed."""
        for attempt in (0, 1):
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            try:
                self._conn.request(method, path, headers={"Connection": "keep-alive"})
                response = self._conn.getresponse()
                body = response.read().decode("utf-8")
                if response.getheader("Connection", "").lower() == "close":
                    self._conn.close()
                    self._conn = None
                return response.status, body, response.getheader("Location")
            except (ConnectionError, http.client.HTTPException, OSError):
                if self._conn is not None:
                    self._conn.close()
                self._conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _go(self, path: str) -> Page:
        """Request an action URL, follow its redirect to the page, parse the page."""
        status, body, location = self._request("GET", path)
        if status in (301, 302, 303) and location:
            status, body, _ = self._request("GET", urlsplit(urljoin(path, location)).path)
        if status != 200:
            raise ShopHTTPError(status, body.strip()[:300])
        self._parsed = parse_html(body)
        return self._parsed.page

    def start(self, task_id: int) -> Page:
        """Open a session on task ``task_id`` (ending any previous one); returns its first page. Raises
        :class:`ShopHTTPError`."""
        self._end_session()
        status, body, location = self._request("POST", f"/new?{urlencode({'task': task_id})}")
        if status != 303 or not location:
            raise ShopHTTPError(status, body.strip()[:300])
        self._session_path = urlsplit(location).path.rstrip("/")
        return self._go(self._session_path + "/")

    def search(self, query: str) -> Page:
        """Submit the page's search form; returns the next page (the same page when it has no search box)."""
        action = self._parsed.search_action
        if action is None:
            return self._parsed.page
        return self._go(f"{action}?{urlencode({'q': query, 'v': self._parsed.page.version})}")

    def click(self, key: str) -> Page:
        """Follow the link of element ``key``; returns the next page (the same page when there is no such link)."""
        href = self._parsed.links.get(key)
        if href is None:
            return self._parsed.page
        return self._go(href)

    def _end_session(self) -> None:
        if self._session_path is not None:
            try:
                self._request("POST", f"{self._session_path}/close")
            except OSError:
                pass  # the server is gone; its reaper will not matter
            self._session_path = None

    def close(self) -> None:
        """End the session, close the connection and stop the server this transport started, if any."""
        if self._conn is not None:
            self._end_session()
            self._conn.close()
            self._conn = None
        if self._server is not None:
            self._server.close()
            self._server = None
