"""The ``openai:`` agent against a real local HTTP server speaking the protocol, backed by the tiny model.

Besides the well-behaved server (``baselines.tiny.serve``), a faulty one replays a script of misbehaviours
per request (HTTP 500, 429 with Retry-After, a stall past the client's timeout, malformed JSON, a wrong
response shape) before answering normally, so retries, backoff, timeouts and error messages are exercised
over real sockets on 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

pytest.importorskip("transformers")

from baselines.tiny import MODEL_DIR  # noqa: E402
from baselines.tiny.serve import ModelBackend, make_handler, start_server  # noqa: E402
from harness.agents import AgentOptions, Context, Request, ScoringUnavailable, make_agent  # noqa: E402
from harness.agents.openai_api import EndpointAuthError, EndpointConfig, EndpointError, OpenAIAgent  # noqa: E402
from tests.helpers.ports import free_port  # noqa: E402

CONTEXT = Context(
    (
        {"role": "system", "content": "You are playing a two-armed bandit. You pull one arm, once."},
        {"role": "user", "content": "Turn 1:\nState:\nArms: Dragon and Turtle. Which arm do you pull?"},
    ),
    "<think>",
)


@pytest.fixture(scope="module")
def backend():
    return ModelBackend(str(MODEL_DIR))


@pytest.fixture(scope="module")
def server(backend):
    srv, url = start_server(backend)
    yield url
    srv.shutdown()
    srv.server_close()


class Script:
    """Misbehaviours to play, one per request, before behaving; counts requests and peak concurrency."""

    def __init__(self, faults=()):
        self.faults = list(faults)
        self.requests = 0
        self.in_flight = 0
        self.peak = 0
        self.lock = threading.Lock()


@pytest.fixture
def faulty(backend):
    servers = []

    def start(faults=(), api_key=None, delay=0.0):
        script = Script(faults)
        base = make_handler(backend, api_key)

        class Faulty(base):
            def leave(self):
                # Counted out before the reply's first byte: once the client holds a reply it may send its next
                # request, and that one must not overlap this one in the count.
                with script.lock:
                    if self.counted:
                        self.counted = False
                        script.in_flight -= 1

            def send_response(self, *args, **kwargs):
                self.leave()
                super().send_response(*args, **kwargs)

            def do_POST(self):
                with script.lock:
                    script.requests += 1
                    script.in_flight += 1
                    script.peak = max(script.peak, script.in_flight)
                    fault = script.faults.pop(0) if script.faults else None
                self.counted = True
                try:
                    if delay:
                        time.sleep(delay)
                    if fault == "500":
                        self._error(500, "internal error (scripted)", "server_error")
                    elif fault == "429":
                        self.send_response(429)
                        body = b'{"error": {"message": "slow down"}}'
                        self.send_header("Retry-After", "0")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    elif fault == "stall":
                        self.rfile.read(int(self.headers.get("Content-Length") or 0))
                        time.sleep(6.0)
                        self._error(500, "too late")
                    elif fault == "malformed":
                        self.rfile.read(int(self.headers.get("Content-Length") or 0))
                        body = b'{"choices": [{"message": {"content": "<think>x</thi'
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    elif fault == "shape":
                        self.rfile.read(int(self.headers.get("Content-Length") or 0))
                        self._send(200, {"choices": []})
                    elif fault == "400":
                        self.rfile.read(int(self.headers.get("Content-Length") or 0))
                        self._error(400, "max_tokens is too large for this model")
                    else:
                        super().do_POST()
                finally:
                    self.leave()

        srv, url = start_server(backend, handler=Faulty)
        servers.append(srv)
        return script, url

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def agent_for(url, *, sleeps=None, temperature=1.0, max_new_tokens=48, **extra):
    options = AgentOptions(temperature=temperature, max_new_tokens=max_new_tokens, extra=extra)
    record = sleeps.append if sleeps is not None else (lambda seconds: None)
    agent = OpenAIAgent(EndpointConfig.from_spec(f"{url}#tiny", extra), options, sleep=record)
    agent.spec = f"openai:{url}#tiny"
    return agent


def test_generates_parseable_seeded_responses_with_logprobs(server):
    agent = agent_for(server, tokenizer=str(MODEL_DIR))
    requests = [Request(CONTEXT, seed) for seed in range(4)]
    first = agent.generate(requests)
    again = agent.generate(requests)
    assert [g.text for g in first] == [g.text for g in again]  # a response is a function of (context, seed)
    for gen in first:
        assert gen.token_logprobs is not None and len(gen.token_logprobs) == gen.num_tokens > 0
        assert all(lp <= 0 for lp in gen.token_logprobs)
        assert gen.token_entropies is None  # the API does not return full distributions
    assert sum("</answer>" in g.text for g in first) >= 3


def test_score_equals_generation_logprobs(server):
    agent = agent_for(server, tokenizer=str(MODEL_DIR))
    assert agent.can_score
    generations = agent.generate([Request(CONTEXT, seed) for seed in range(6)])
    scores = agent.score([CONTEXT] * len(generations), [g.text for g in generations])
    compared = 0
    for gen, score in zip(generations, scores, strict=True):
        if score.num_tokens == gen.num_tokens:  # same tokenization of the text (almost always)
            assert score.logprob_sum == pytest.approx(sum(gen.token_logprobs), abs=1e-3)
            compared += 1
    assert compared >= 4


def test_make_agent_parses_the_spec_and_options(server):
    agent = make_agent(f"openai:{server}#tiny", AgentOptions(temperature=0.0, max_new_tokens=32))
    assert isinstance(agent, OpenAIAgent) and not agent.can_score
    assert agent.config.base_url == server and agent.config.model == "tiny"
    with pytest.raises(ScoringUnavailable, match="tokenizer"):
        agent.score([CONTEXT], ["x"])
    with pytest.raises(ValueError, match="openai:<base-url>#<model>"):
        make_agent("openai:http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="no option .concurency.. Did you mean .concurrency."):
        make_agent(f"openai:{server}#tiny", AgentOptions(extra={"concurency": 2}))
    queried = make_agent(f"openai:{server}#tiny?concurrency=3&timeout_s=2.5&tokenizer={MODEL_DIR}")
    assert queried.config.concurrency == 3 and queried.config.timeout_s == 2.5 and queried.can_score
    with pytest.raises(ValueError, match="concurrency must be a number"):
        make_agent(f"openai:{server}#tiny?concurrency=many")
    with pytest.raises(ValueError, match="prefill must be one of"):
        EndpointConfig(server, "tiny", prefill="maybe")


def test_retries_server_errors_with_backoff(faulty):
    script, url = faulty(["500", "429", "500"])
    sleeps = []
    agent = agent_for(url, sleeps=sleeps, max_retries=3, backoff_s=0.25)
    (gen,) = agent.generate([Request(CONTEXT, 0)])
    assert gen.text and script.requests == 4
    assert sleeps == [0.25, 0.0, 1.0]  # 0.25·2^attempt, with 429's Retry-After: 0 honoured


def test_gives_up_with_the_last_error_after_all_retries(faulty):
    script, url = faulty(["500"] * 10)
    agent = agent_for(url, max_retries=2, backoff_s=0.0)
    with pytest.raises(EndpointError, match=r"giving up after 3 attempts; last error: HTTP 500: internal error"):
        agent.generate([Request(CONTEXT, 0)])
    assert script.requests == 3


def test_a_stalled_server_times_out_then_recovers(faulty):
    # The timeout bounds every socket read: long enough for a 4-token answer on a loaded CPU, far shorter
    # than the 6 s stall.
    script, url = faulty(["stall"])
    agent = agent_for(url, timeout_s=2.0, max_retries=1, backoff_s=0.0, max_new_tokens=4)
    started = time.perf_counter()
    (gen,) = agent.generate([Request(CONTEXT, 0)])  # first attempt stalls past the timeout, second succeeds
    assert gen.text and script.requests == 2
    assert time.perf_counter() - started < 6.0

    script, url = faulty(["stall", "stall"])
    agent = agent_for(url, timeout_s=2.0, max_retries=1, backoff_s=0.0, max_new_tokens=4)
    with pytest.raises(EndpointError, match="timed out after 2.0s"):
        agent.generate([Request(CONTEXT, 0)])


def test_malformed_json_is_retried_then_reported(faulty):
    script, url = faulty(["malformed"])
    (gen,) = agent_for(url, backoff_s=0.0).generate([Request(CONTEXT, 0)])
    assert gen.text and script.requests == 2

    script, url = faulty(["malformed"] * 5)
    with pytest.raises(EndpointError, match="malformed JSON"):
        agent_for(url, max_retries=2, backoff_s=0.0).generate([Request(CONTEXT, 0)])

    script, url = faulty(["shape"])
    with pytest.raises(EndpointError, match="unexpected response shape"):
        agent_for(url, backoff_s=0.0).generate([Request(CONTEXT, 0)])


def test_client_errors_are_not_retried_and_carry_the_server_message(faulty):
    script, url = faulty(["400"])
    with pytest.raises(EndpointError, match="HTTP 400: max_tokens is too large") as caught:
        agent_for(url).generate([Request(CONTEXT, 0)])
    assert caught.value.status == 400 and script.requests == 1


def test_auth_failure_is_clear_and_never_leaks_the_key(faulty, monkeypatch):
    script, url = faulty(api_key="right-key-123")
    monkeypatch.setenv("TEST_ENDPOINT_KEY", "wrong-key-456")
    agent = agent_for(url, api_key_env="TEST_ENDPOINT_KEY")
    with pytest.raises(EndpointAuthError, match=r"HTTP 401.*\$TEST_ENDPOINT_KEY, which is set") as caught:
        agent.generate([Request(CONTEXT, 0)])
    assert script.requests == 1  # not retried
    assert "wrong-key-456" not in str(caught.value) and "wrong-key-456" not in repr(agent)
    assert "wrong-key-456" not in json.dumps(agent.describe())

    monkeypatch.setenv("TEST_ENDPOINT_KEY", "right-key-123")
    (gen,) = agent.generate([Request(CONTEXT, 0)])
    assert gen.text


def test_connection_refused_is_reported(faulty):
    script, url = faulty()
    port_url = url
    dead = f"http://127.0.0.1:{free_port()}/v1"  # a port nobody listens on
    with pytest.raises(EndpointError, match="connection failed"):
        agent_for(dead, max_retries=1, backoff_s=0.0).generate([Request(CONTEXT, 0)])
    assert port_url  # the live server was untouched
    assert script.requests == 0


def test_concurrency_limit_is_respected(faulty):
    script, url = faulty(delay=0.1)
    agent = agent_for(url, concurrency=2, max_new_tokens=4)
    generations = agent.generate([Request(CONTEXT, seed) for seed in range(6)])
    assert len(generations) == 6 and script.requests == 6
    assert script.peak == 2


def test_server_without_prompt_logprobs_makes_scoring_unavailable(faulty, backend):
    script, url = faulty(["shape"])
    agent = agent_for(url, tokenizer=str(MODEL_DIR), backoff_s=0.0)
    with pytest.raises(ScoringUnavailable, match="no prompt log-probs"):
        agent.score([CONTEXT], ["Dragon sounds bold"])
