"""A local stand-in for PyTorch's CPU wheel index: a real HTTP server with a ``torch/`` page, so the install's
reachability probe is exercised without the network."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def cpu_index(tmp_path_factory):
    root = tmp_path_factory.mktemp("cpu-index")
    page = root / "whl" / "cpu" / "torch"
    page.mkdir(parents=True)
    (page / "index.html").write_text('<a href="torch-2.13.0+cpu-cp311-cp311-linux_x86_64.whl">torch</a>\n')
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/whl/cpu"
    server.shutdown()
