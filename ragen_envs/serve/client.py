"""A synchronous client with Gymnasium's signatures: ``reset(seed) -> (obs, info)``, ``step(text) -> (obs, reward,
terminated, truncated, info)``.

Every wait is bounded: connecting by ``connect_timeout``, each answer by ``timeout``. A server that goes away
(or ends the session: full, idle too long, a step past its timeout) raises :class:`ServerGone`; one that stops
answering raises ``TimeoutError``. Either way the episode is lost
and the connection is closed (a late answer would otherwise be read as the answer to the next request);
a new ``Client`` and a ``reset`` start over. An error the server reports raises :class:`ServerError` and the
session goes on.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ragen_envs.serve.protocol import SESSION_ENDING


class ServerError(RuntimeError):
    """The server answered a request with an error (``code`` is OpenEnv's or the server's, see ``protocol``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message


class ServerGone(ConnectionError):
    """The connection to the server is closed or cannot be opened; the episode is lost. ``code`` is the error
    the server sent before closing (``CAPACITY_REACHED``, ``IDLE_TIMEOUT``, ...), if it sent one."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


def ws_url(url: str) -> str:
    """``ws[s]://host:port/ws`` for a server address given as ``http[s]://`` or ``ws[s]://``, with or without /ws."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    scheme = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}.get(parts.scheme)
    if scheme is None or not parts.netloc:
        raise ValueError(f"Server address must look like http://127.0.0.1:8000, got {url!r}")
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, parts.netloc, path if path.endswith("/ws") else f"{path}/ws", "", ""))


class Client:
    """One session (one env) on a ``python -m ragen_envs.serve`` server.

    ``token``: the server's bearer token (``--token-file``), sent as ``Authorization: Bearer <token>``.
    ``timeout``: seconds to wait for each answer. The default outlasts the server's own worst case (up to
    ``--step-timeout`` waiting for the env thread plus as long running, 120 s each by default), so a slow step
    reaches the client as the server's ``BUSY``/``TIMEOUT`` with its reason rather than as a client timeout.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        *,
        timeout: float = 300.0,
        connect_timeout: float = 10.0,
        max_message_bytes: int = 64 << 20,
        token: str | None = None,
    ) -> None:
        from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI
        from websockets.sync.client import connect

        self.url = ws_url(url)
        self.timeout = timeout
        try:
            # Entered by hand: the session outlives this call (websockets 17 asks for a `with` otherwise).
            self._ws = connect(
                self.url,
                open_timeout=connect_timeout,
                close_timeout=2.0,
                max_size=max_message_bytes,
                compression=None,  # loopback and LAN: deflate costs more CPU than it saves
                additional_headers={"Authorization": f"Bearer {token}"} if token is not None else None,
            ).__enter__()
        except (OSError, InvalidHandshake, InvalidURI, TimeoutError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e) or type(e).__name__
            if isinstance(e, InvalidStatus):  # the server's refusal says why (Host, Origin, token, too many)
                said = e.response.body.decode("utf-8", "replace")[:300] if e.response.body else ""
                reason = f"HTTP {e.response.status_code}{': ' + said if said else ''}"
            raise ServerGone(
                f"Cannot open a session at {self.url}: {reason}. Is `python -m ragen_envs.serve` running there?"
            ) from None

    # ---- Gymnasium-shaped calls -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, episode_id: str | None = None) -> tuple[str, dict[str, Any]]:
        """Gymnasium's reset, over the socket: returns (observation text, info). Raises :class:`ServerError` or
        :class:`ServerGone`."""
        data: dict[str, Any] = {"seed": seed}
        if episode_id is not None:
            data["episode_id"] = episode_id
        payload = self._request({"type": "reset", "data": data}, "reset")
        return payload["observation"]["text"], payload["observation"]["info"]

    def step(self, response: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Gymnasium's step, over the socket: play the model's text; returns (observation, reward, terminated,
        truncated, info). Raises ``TypeError`` for a non-str."""
        if not isinstance(response, str):
            raise TypeError(f"step() takes the model's text (a str), got {type(response).__name__}")
        payload = self._request({"type": "step", "data": {"response": response}}, "step")
        obs = payload["observation"]
        return obs["text"], payload["reward"], obs["terminated"], obs["truncated"], obs["info"]

    def state(self) -> dict[str, Any]:
        """OpenEnv's state message: where the session's episode stands, as the server reports it."""
        return self._request({"type": "state"}, "state")

    def close(self) -> None:
        """End the session and close the connection (idempotent; a server already gone is fine)."""
        ws, self._ws = self._ws, None
        if ws is None:
            return
        try:
            ws.send(json.dumps({"type": "close"}))
        except Exception:  # noqa: BLE001  (the server may be gone already)
            pass
        ws.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # ---- the wire ---------------------------------------------------------------------------------------
    def _request(self, message: dict[str, Any], what: str) -> dict[str, Any]:
        from websockets.exceptions import ConnectionClosed

        if self._ws is None:
            raise ServerGone(f"The session at {self.url} is closed; open a new Client")
        try:
            self._ws.send(json.dumps(message))
            raw = self._ws.recv(timeout=self.timeout)
        except ConnectionClosed as e:
            last_word = self._last_word()
            self._drop()
            rcvd = e.rcvd
            why = f"code {rcvd.code}{': ' + rcvd.reason if rcvd.reason else ''}" if rcvd else "no close frame"
            if last_word is not None:
                why = f"{last_word[1]} ({last_word[0]})"
            raise ServerGone(
                f"The server at {self.url} closed the connection during {what}: {why}; the episode is lost",
                last_word[0] if last_word else None,
            ) from None
        except TimeoutError:
            self._drop()
            raise TimeoutError(
                f"No answer to {what} from {self.url} within {self.timeout:g} s; the session is closed"
            ) from None
        except OSError as e:
            self._drop()
            raise ServerGone(f"Lost the connection to {self.url} during {what}: {e}") from None
        answer = json.loads(raw)
        if answer.get("type") == "error":
            data = answer.get("data", {})
            code, message = str(data.get("code", "UNKNOWN")), str(data.get("message", ""))
            if code in SESSION_ENDING:
                self._drop()
                raise ServerGone(f"The server at {self.url} ended the session during {what}: {message} ({code})", code)
            raise ServerError(code, message)
        return answer["data"]

    def _last_word(self) -> tuple[str, str] | None:
        """(code, message) of an error the server sent just before it closed (a full server, an idle session)."""
        try:
            answer = json.loads(self._ws.recv(timeout=0.5))
            data = answer.get("data", {}) if answer.get("type") == "error" else None
            return (str(data.get("code")), str(data.get("message"))) if data else None
        except Exception:  # noqa: BLE001  (nothing was left to read)
            return None

    def _drop(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            try:
                ws.close()
            except Exception:  # noqa: BLE001
                pass
