"""One HTTP POST whose whole cost is bounded: a total deadline and a cap on the reply's size.

urllib's ``timeout`` bounds each socket operation, not the request: a server that sends one byte a second
keeps every read alive forever, and ``response.read()`` keeps whatever an endless body sends. Here the
connection arms a watchdog at connect that shuts the socket down at the deadline (connecting, sending,
waiting for the headers, reading the body: any of them), and the body is read in chunks up to ``max_bytes``
(a declared ``Content-Length`` over the cap fails before anything is read).
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.error
import urllib.request

_CHUNK = 1 << 16
ERROR_BODY_BYTES = 4096
"""How much of an error reply's body is kept (for its message), read within the same deadline."""


class DeadlineExceeded(TimeoutError):
    """The request did not complete within its total deadline."""


class ReplyTooLarge(Exception):
    """The reply's body is larger than the cap."""


class _Watched:
    """A connection whose socket is shut down at ``deadline``, whatever operation is in progress then."""

    deadline: float
    handler: _Handler

    def connect(self) -> None:
        self.timeout = max(0.001, min(self.timeout, self.deadline - time.monotonic()))
        super().connect()
        watchdog = threading.Timer(max(0.0, self.deadline - time.monotonic()), self.handler.expire, (self.sock,))
        watchdog.daemon = True  # never keeps the interpreter alive
        self.handler.watchdogs.append(watchdog)
        watchdog.start()


class _HTTP(_Watched, http.client.HTTPConnection):
    pass


class _HTTPS(_Watched, http.client.HTTPSConnection):
    pass


class _Handler(urllib.request.HTTPHandler, urllib.request.HTTPSHandler):
    """Opens connections that carry the request's deadline; remembers their watchdogs to cancel them."""

    def __init__(self, deadline: float) -> None:
        urllib.request.HTTPHandler.__init__(self)
        urllib.request.HTTPSHandler.__init__(self)
        self.deadline = deadline
        self.watchdogs: list[threading.Timer] = []
        self.expired = False

    def expire(self, sock: socket.socket) -> None:
        """The deadline passed: end whatever the socket is doing (a read then sees the end of the stream)."""
        self.expired = True
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:  # already closed: the request finished in time
            pass

    def _connection(self, cls):
        def make(host, **kwargs):
            connection = cls(host, **kwargs)
            connection.deadline, connection.handler = self.deadline, self
            return connection

        return make

    def http_open(self, req):
        return self.do_open(self._connection(_HTTP), req)

    def https_open(self, req):
        return self.do_open(self._connection(_HTTPS), req, context=self._context)


def post(url: str, data: bytes, headers: dict[str, str], *, timeout_s: float, max_bytes: int) -> bytes:
    """POST ``data`` and return the reply's body. Raises :class:`DeadlineExceeded` when the whole exchange takes
    longer than ``timeout_s``, :class:`ReplyTooLarge` for a body over ``max_bytes``, ``urllib.error.HTTPError``
    for an error status (the first ``ERROR_BODY_BYTES`` of its body, read within the deadline, in its
    ``body_prefix``) and ``OSError``
    for connection failures."""
    deadline = time.monotonic() + timeout_s
    handler = _Handler(deadline)
    opener = urllib.request.build_opener(handler)
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with opener.open(request, timeout=timeout_s) as response:
            body = read_capped(response, max_bytes)
        if handler.expired:  # the body ended because the socket was shut: it is cut short
            raise DeadlineExceeded(f"no complete reply within {timeout_s}s")
        return body
    except urllib.error.HTTPError as error:
        error.body_prefix = _prefix(error)  # read before the watchdog is cancelled: a dripping error body is cut too
        raise
    except (OSError, http.client.HTTPException):
        if not handler.expired and time.monotonic() < deadline:
            raise
        raise DeadlineExceeded(f"no complete reply within {timeout_s}s") from None
    finally:
        for watchdog in handler.watchdogs:
            watchdog.cancel()


def read_capped(response, max_bytes: int) -> bytes:
    """Up to ``max_bytes`` of ``response``'s body; :class:`ReplyTooLarge` as soon as it is known to be larger."""
    declared = response.headers.get("Content-Length") if response.headers else None
    if declared and declared.strip().isdigit() and int(declared) > max_bytes:
        raise ReplyTooLarge(f"the reply declares {int(declared)} bytes, over the cap of {max_bytes}")
    body = bytearray()
    while chunk := response.read(min(_CHUNK, max_bytes + 1 - len(body))):
        body += chunk
        if len(body) > max_bytes:
            raise ReplyTooLarge(f"the reply is larger than the cap of {max_bytes} bytes")
    return bytes(body)


def _prefix(error: urllib.error.HTTPError) -> bytes:
    try:
        return error.read(ERROR_BODY_BYTES) or b""
    except (OSError, ValueError, AttributeError, http.client.HTTPException):
        return b""  # the status code still says enough
