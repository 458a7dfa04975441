"""The ``openai:`` agent against hostile endpoints: replies that drip, flood or take any shape end in the agent's
one-line :class:`EndpointError` (or :class:`ScoringUnavailable` for a server without prompt log-probs), within
the request's deadline and the reply cap, never in another exception.

The endpoints are raw sockets on 127.0.0.1 speaking just enough HTTP/1.1; each connection is served by a
thread that gives up after ``CONNECTION_LIFETIME_S`` whatever the client does, at most ``MAX_CONNECTIONS`` at
once (more are closed on accept), and the server stops at the end of its test.
"""

from __future__ import annotations

import json
import math
import re
import socket
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.agents import AgentOptions, Context, Request, ScoringUnavailable
from harness.agents.openai_api import EndpointConfig, EndpointError, OpenAIAgent

CONTEXT = Context(({"role": "user", "content": "Which arm?"},), "<think>")
CONNECTION_LIFETIME_S = 15.0
MAX_CONNECTIONS = 16
GOOD = {
    "choices": [
        {
            "message": {"role": "assistant", "content": "<think>ok</think><answer>Dragon"},
            "finish_reason": "stop",
            "logprobs": {"content": [{"token": "a", "logprob": -0.5}, {"token": "b", "logprob": -1.0}]},
        }
    ],
    "usage": {"completion_tokens": 2},
}


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


class HostileServer:
    """A loopback listener whose every connection runs ``behaviour(conn, stats)`` after reading the request."""

    def __init__(self, behaviour) -> None:
        self.behaviour = behaviour
        self.sent = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.stopping = threading.Event()
        self.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self.slots.acquire(blocking=False):
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(CONNECTION_LIFETIME_S)
        deadline = time.monotonic() + CONNECTION_LIFETIME_S
        try:
            _read_request(conn)
            self.behaviour(self, conn, deadline)
        except OSError:
            pass  # the client hung up: what the agent is meant to do
        finally:
            conn.close()
            self.slots.release()

    def send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.sent += len(data)

    def close(self) -> None:
        self.stopping.set()
        self.listener.close()
        self.thread.join(timeout=5)


@pytest.fixture
def hostile():
    servers = []

    def start(behaviour):
        server = HostileServer(behaviour)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


def reply(body: bytes, status: str = "200 OK") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode() + body


def agent_for(url, **extra) -> OpenAIAgent:
    extra = {"max_retries": 0, "backoff_s": 0.0, **extra}
    agent = OpenAIAgent(EndpointConfig.from_spec(f"{url}#m", extra), AgentOptions(extra=extra), sleep=lambda s: None)
    agent.spec = f"openai:{url}#m"
    return agent


# ---- drip and flood ----------------------------------------------------------------------------------


def drip_body(server, conn, deadline):
    body = json.dumps(GOOD).encode()
    server.send(conn, reply(body)[: -len(body)])
    for byte in body:  # one byte every 0.2 s: each read is quick, the reply never ends in time
        if time.monotonic() > deadline:
            return
        server.send(conn, bytes([byte]))
        time.sleep(0.2)


def drip_headers(server, conn, deadline):
    for byte in b"HTTP/1.1 200 OK\r\n" + b"X-Slow: " + b"a" * 10_000:
        if time.monotonic() > deadline:
            return
        server.send(conn, bytes([byte]))
        time.sleep(0.2)


@pytest.mark.parametrize("behaviour", [drip_body, drip_headers], ids=["body", "headers"])
def test_a_dripping_reply_ends_at_the_total_deadline(hostile, behaviour):
    server = hostile(behaviour)
    started = time.monotonic()
    with pytest.raises(EndpointError, match=r"timed out after 1.0s \(the whole request\)") as caught:
        agent_for(server.url, timeout_s=1.0).generate([Request(CONTEXT, 0)])
    assert time.monotonic() - started < 4.0  # 1 s and scheduling slack; before the fix: until the server gave up
    assert "\n" not in str(caught.value)


def endless_body(server, conn, deadline):
    server.send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
    chunk = b'{"choices": [' + b" " * 65536
    while time.monotonic() < deadline and server.sent < 256 << 20:
        server.send(conn, chunk)


def huge_declared(server, conn, deadline):
    server.send(conn, b"HTTP/1.1 200 OK\r\nContent-Length: 10000000000\r\nConnection: close\r\n\r\n{")


def test_an_endless_reply_is_cut_at_the_cap(hostile):
    server = hostile(endless_body)
    with pytest.raises(EndpointError, match=r"larger than the cap of 1048576 bytes.*max_reply_mb"):
        agent_for(server.url, max_reply_mb=1, max_retries=3).generate([Request(CONTEXT, 0)])
    time.sleep(0.2)
    # Not retried, and the client stopped reading near the cap: what the server got out is the cap plus what
    # the two sockets' buffers hold, far from the 256 MiB it would send to a reader that keeps going.
    assert server.sent < 32 << 20

    server = hostile(huge_declared)
    with pytest.raises(EndpointError, match="declares 10000000000 bytes, over the cap"):
        agent_for(server.url, max_reply_mb=1).generate([Request(CONTEXT, 0)])


def test_a_dripping_error_body_is_cut_at_the_deadline_too(hostile):
    def drip_error(server, conn, deadline):
        server.send(conn, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n")
        while time.monotonic() < deadline:
            server.send(conn, b"x")
            time.sleep(0.2)

    server = hostile(drip_error)
    started = time.monotonic()
    with pytest.raises(EndpointError, match="HTTP 400"):
        agent_for(server.url, timeout_s=1.0).generate([Request(CONTEXT, 0)])
    assert time.monotonic() - started < 4.0


# ---- malformed shapes ------------------------------------------------------------------------------------


def serving(body_of):
    """A behaviour answering 200 with ``body_of()`` (bytes) to every request."""

    def behaviour(server, conn, deadline):
        server.send(conn, reply(body_of()))

    return behaviour


def with_choice(**fields):
    choice = {**GOOD["choices"][0], **fields}
    return json.dumps({**GOOD, "choices": [choice]}).encode()


MALFORMED = [
    (with_choice(logprobs={"content": [{"logprob": None}]}), r"choices\[0\]\.logprobs\.content\[0\]\.logprob: .*null"),
    (b"[" * 200_000 + b"]" * 200_000, "malformed JSON .*nested too deeply"),
    (with_choice(logprobs={"content": [{"logprob": "-1"}]}), r"content\[0\]\.logprob: .*a string"),
    (with_choice(logprobs={"content": [{"token": "a"}]}), r"content\[0\]\.logprob: missing"),
    (with_choice(logprobs={"content": [{"logprob": 3.0}]}), r"content\[0\]\.logprob: .*at most 0"),
    (with_choice(logprobs={"content": "abc"}), r"logprobs\.content: expected a list"),
    (with_choice(message={"content": 7}), r"choices\[0\]\.message\.content: expected a string"),
    (with_choice(message="hi"), r"choices\[0\]\.message: expected an object"),
    (with_choice(finish_reason=["stop"]), r"choices\[0\]\.finish_reason: expected a string"),
    (json.dumps({**GOOD, "usage": {"completion_tokens": "7"}}).encode(), r"usage\.completion_tokens"),
    (json.dumps({"choices": "x"}).encode(), r"choices: expected a list"),
    (json.dumps({"choices": [[1]]}).encode(), r"choices\[0\]: expected an object"),
    (b'{"choices": [{"message": {"content": "x"}, "logprobs": {"content": [{"logprob": NaN}]}}]}', r"logprob: .*nan"),
    (b"\xff\xfe not json", "malformed JSON"),
]


@pytest.mark.parametrize(("body", "message"), MALFORMED, ids=range(len(MALFORMED)))
def test_each_malformed_reply_is_one_line_naming_the_field(hostile, body, message):
    server = hostile(serving(lambda: body))
    with pytest.raises(EndpointError, match=message) as caught:
        agent_for(server.url).generate([Request(CONTEXT, 0)])
    assert "\n" not in str(caught.value)


def score_reply(offsets, values) -> bytes:
    return json.dumps({"choices": [{"logprobs": {"text_offset": offsets, "token_logprobs": values}}]}).encode()


def template_dir():
    pytest.importorskip("transformers")
    from baselines.tiny import MODEL_DIR

    return str(MODEL_DIR)


SCORING = [
    (score_reply([0, 1], [None]), r"token_logprobs: has 1 items but text_offset has 2", EndpointError),
    (score_reply([0, 10**4], [None, "x"]), r"token_logprobs\[1\]: .*a string", EndpointError),
    (score_reply([0, 10**4], [None, None]), r"token_logprobs\[1\]: .*null", EndpointError),
    (score_reply(["0"], [None]), r"text_offset\[0\]: expected a character offset", EndpointError),
    (json.dumps({"choices": [{"text": "x"}]}).encode(), r"choices\[0\]\.logprobs: missing", ScoringUnavailable),
]


@pytest.mark.parametrize(("body", "message", "error"), SCORING, ids=range(len(SCORING)))
def test_each_malformed_scoring_reply_names_the_field(hostile, body, message, error):
    server = hostile(serving(lambda: body))
    agent = agent_for(server.url, tokenizer=template_dir())
    # The scored text starts after the rendered prompt: offset 10**4 lies inside it as long as
    # the prompt is shorter, so make the text reach that far.
    with pytest.raises(error, match=message):
        agent.score([CONTEXT], ["x" * 2 * 10**4])


# ---- fuzz ------------------------------------------------------------------------------------------------

KEYS = ["choices", "message", "content", "logprobs", "logprob", "finish_reason", "usage", "completion_tokens",
        "text_offset", "token_logprobs", "role", "error"]  # fmt: skip
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)  # fmt: skip


@st.composite
def reply_bodies(draw) -> bytes:
    """Whole random JSON, a good reply with one part replaced by random JSON, raw bytes, or deep nesting."""
    kind = draw(st.sampled_from(["json", "mutated", "bytes", "deep"]))
    if kind == "bytes":
        return draw(st.binary(max_size=64))
    if kind == "deep":
        depth = draw(st.integers(500, 100_000))
        return draw(st.sampled_from([b"[", b'{"a":'])) * depth
    if kind == "json":
        return json.dumps(draw(json_values)).encode()
    body = json.loads(json.dumps(GOOD))
    paths = [["choices"], ["choices", 0], ["choices", 0, "message"], ["choices", 0, "message", "content"],
             ["choices", 0, "finish_reason"], ["choices", 0, "logprobs"], ["choices", 0, "logprobs", "content"],
             ["choices", 0, "logprobs", "content", 1], ["choices", 0, "logprobs", "content", 0, "logprob"],
             ["usage"], ["usage", "completion_tokens"]]  # fmt: skip
    *parent, last = draw(st.sampled_from(paths))
    target = body
    for step in parent:
        target = target[step]
    target[last] = draw(json_values)
    return json.dumps(body).encode()


@pytest.fixture(scope="module")
def fuzz_server():
    current = {"body": b"{}"}
    server = HostileServer(lambda srv, conn, deadline: srv.send(conn, reply(current["body"])))
    yield server, current
    server.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=reply_bodies())
def test_fuzzed_replies_give_a_generation_or_the_agents_error(fuzz_server, body):
    server, current = fuzz_server
    current["body"] = body
    try:
        (gen,) = agent_for(server.url).generate([Request(CONTEXT, 0)])
    except EndpointError as error:
        assert "\n" not in str(error)
        return
    assert isinstance(gen.text, str)
    assert gen.num_tokens is None or (isinstance(gen.num_tokens, int) and gen.num_tokens >= 0)
    assert gen.token_logprobs is None or all(math.isfinite(v) and v <= 1e-4 for v in gen.token_logprobs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    offsets=json_values | st.lists(st.integers(-3, 2000) | json_values, max_size=6),
    values=json_values | st.lists(st.floats() | st.none() | json_values, max_size=6),
)
def test_fuzzed_scoring_replies_give_a_score_or_the_agents_error(fuzz_server, offsets, values):
    server, current = fuzz_server
    current["body"] = json.dumps(
        {"choices": [{"logprobs": {"text_offset": offsets, "token_logprobs": values}}]}
    ).encode()
    agent = _scoring_agent(server.url)
    try:
        (score,) = agent.score([CONTEXT], ["Dragon"])
    except (EndpointError, ScoringUnavailable) as error:
        assert "\n" not in str(error)
        return
    assert math.isfinite(score.logprob_sum) and score.num_tokens >= 0


_agents: dict[str, OpenAIAgent] = {}


def _scoring_agent(url: str) -> OpenAIAgent:
    if url not in _agents:  # loading the chat template once, not per example
        _agents[url] = agent_for(url, tokenizer=template_dir())
    return _agents[url]


@pytest.mark.parametrize(
    ("behaviour", "options", "message"),
    [
        (drip_body, "timeout_s=1", "timed out after 1.0s"),
        (endless_body, "--agent-opt max_reply_mb=1", "larger than the cap"),
        (serving(lambda: with_choice(logprobs={"content": [{"logprob": None}]})), "", r"content\[0\]\.logprob"),
        (serving(lambda: b"[" * 200_000 + b"]" * 200_000), "", "nested too deeply"),
    ],
    ids=["drip", "flood", "null-logprob", "deep-array"],
)
def test_harness_run_ends_with_one_line(hostile, tmp_path, capsys, behaviour, options, message):
    from harness.cli import main

    server = hostile(behaviour)
    flags = options.split() if options.startswith("--") else []
    query = "&".join(filter(None, ["max_retries=0", "backoff_s=0", "" if flags else options]))
    argv = ["run", f"openai:{server.url}#m?{query}", "--env", "ragen/Bandit-v0", "--episodes", "1", "--samples", "1"]
    argv += flags
    assert main([*argv, "--out", str(tmp_path), "--no-plots", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("harness: error: ") and "Traceback" not in err, err
    assert re.search(message, err), err


def test_every_endpoint_setting_is_a_registered_agent_option():
    from harness.agents.registry import OPENAI_OPTIONS

    settings_ = set(EndpointConfig.__dataclass_fields__) - {"base_url", "model"}
    assert settings_ == {option.name for option in OPENAI_OPTIONS}
