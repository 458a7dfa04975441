"""What the ``openai:`` agent's bounded transport and reply checks cost per request, beside the plain client.

    python benchmarks/bench_openai_client.py --rounds 7 --calls 200

A threaded HTTP server on 127.0.0.1 answers every POST with the same chat completion (a 48-token reply with
per-token log-probs, as vLLM sends it). Each round times, interleaved, ``calls`` sequential requests through:

- ``bounded``: the agent's path, ``OpenAIAgent._generate_one`` (``bounded_http.post`` with its deadline watchdog
  and size cap, then ``openai_reply.chat_reply``);
- ``plain``: the transport and parsing the agent had before, ``urllib.request.urlopen(timeout=…).read()`` and
  ``json.loads``, picking the same fields without checking their kinds.

Prints the median microseconds per request of each and the ratio bounded / plain. The server's own work is in
both, so the ratio understates the client-side difference.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness.agents import AgentOptions, Context, Request
from harness.agents.openai_api import EndpointConfig, OpenAIAgent

REPLY = json.dumps(
    {
        "choices": [
            {
                "message": {"role": "assistant", "content": "<think>" + "word " * 40 + "</think><answer>Dragon"},
                "finish_reason": "stop",
                "logprobs": {"content": [{"token": "w", "logprob": -0.25, "top_logprobs": []}] * 48},
            }
        ],
        "usage": {"prompt_tokens": 60, "completion_tokens": 48},
    }
).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)

    def log_message(self, *args):
        pass


def plain(url: str, body: dict) -> tuple:
    """The former client: urlopen with a per-read timeout, read everything, json.loads, unchecked fields."""
    request = urllib.request.Request(
        url + "/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        data = json.loads(response.read())
    choice = data["choices"][0]
    content = choice["logprobs"]["content"]
    return choice["message"]["content"], tuple(float(t["logprob"]) for t in content)


def main() -> None:
    """Time both clients round by round and print medians and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    agent = OpenAIAgent(EndpointConfig.from_spec(f"{url}#m"), AgentOptions())
    request = Request(Context(({"role": "user", "content": "Which arm?"},), "<think>"), 0)
    body = agent._chat_body(request)
    contenders = {"bounded": lambda: agent._generate_one(request), "plain": lambda: plain(url, body)}
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, call in contenders.items():
            start = time.perf_counter()
            for _ in range(args.calls):
                call()
            times[name].append((time.perf_counter() - start) / args.calls * 1e6)
    server.shutdown()
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"{name:8s} {value:8.0f} µs/request  (min {min(times[name]):.0f}, max {max(times[name]):.0f})")
    print(f"ratio bounded/plain: {medians['bounded'] / medians['plain']:.2f}x")


if __name__ == "__main__":
    main()
