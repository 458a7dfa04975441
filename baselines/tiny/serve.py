"""A small OpenAI-compatible HTTP server backed by a transformers model (the tiny model by default).

``python -m baselines.tiny.serve [--model DIR] [--port 8000] [--api-key-env NAME]`` serves, on 127.0.0.1:

- ``GET /v1/models``
- ``POST /v1/chat/completions``: ``messages``, ``temperature``, ``max_tokens``, ``seed``, ``stop``,
  ``logprobs`` (per-token log-probs in ``choices[0].logprobs.content``), and vLLM's
  ``continue_final_message``/``add_generation_prompt``/``include_stop_str_in_output`` extensions;
- ``POST /v1/completions``: ``prompt``, ``max_tokens`` (0 allowed), ``echo`` with ``logprobs`` (the prompt's
  per-token log-probs with ``text_offset``, as vLLM returns them: what ``openai:`` scoring uses);
- ``"stream": true`` on either: server-sent events as OpenAI's API sends them (a ``data: {chunk}`` event per
  token, ``chat.completion.chunk``/``text_completion`` objects, the role first and the finish reason last,
  a usage chunk with ``stream_options.include_usage``, then ``data: [DONE]``). The response is computed
  first and then sent token by token: the events are what a streaming client expects, not a latency gain.

It exists so the ``openai:`` agent can be tested against a real server speaking the protocol, and so a user
can try that agent without a GPU. One request is computed at a time (a lock around the model), each with
its own seed. When ``--api-key-env`` names a set variable, requests must carry ``Authorization: Bearer <key>``.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from baselines.tiny import MODEL_DIR


class ModelBackend:
    """The model, its tokenizer and the two operations the endpoints need."""

    def __init__(self, model_dir: str = str(MODEL_DIR), threads: int | None = 1) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads is not None:  # a small model gains nothing from intra-op threads (see harness.agents.hf)
            torch.set_num_threads(threads)

        self.tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
        self.name = os.path.basename(os.path.normpath(model_dir))
        self.lock = threading.Lock()

    def render_chat(self, messages: list[dict[str, str]], continue_final: bool) -> str:
        """The prompt of ``messages``; ``continue_final`` continues a final assistant message instead of opening one."""
        if continue_final and messages and messages[-1].get("role") == "assistant":
            head = self.tokenizer.apply_chat_template(messages[:-1], tokenize=False, add_generation_prompt=True)
            return head + messages[-1].get("content", "")
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def complete(self, prompt: str, *, temperature: float, max_tokens: int, seed: int, stop: list[str]) -> dict:
        """Generate; cut at the first stop string. Returns text, token texts/log-probs and finish reason."""
        from harness.lm.generation import generate_ids

        tok = self.tokenizer
        ids = tok.encode(prompt, add_special_tokens=False)
        if max_tokens <= 0:
            return {"text": "", "tokens": [], "logprobs": [], "finish_reason": "length", "prompt_tokens": len(ids)}
        stop_ids = [tok.eos_token_id] + [tok.convert_tokens_to_ids(s) for s in stop if s in tok.get_vocab()]
        with self.lock:
            (decoded,) = generate_ids(
                self.model, [ids], [seed], temperature=temperature, max_new_tokens=max_tokens,
                stop_ids=stop_ids, pad_id=tok.pad_token_id,
            )  # fmt: skip
        pieces = [tok.decode([t]) for t in decoded.token_ids]
        logprobs = list(decoded.logprobs)
        if decoded.stopped and decoded.token_ids[-1] == tok.eos_token_id:
            pieces, logprobs = pieces[:-1], logprobs[:-1]
        finish = "stop" if decoded.stopped else "length"
        return {"tokens": pieces, "logprobs": logprobs, "finish_reason": finish, "prompt_tokens": len(ids)}

    def prompt_logprobs(self, prompt: str, temperature: float) -> dict:
        """Per-token log-probs of ``prompt`` (the first token has none), with each token's text offset."""
        import torch

        from harness.lm.generation import scaled_logprobs

        encoded = self.tokenizer(prompt, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = encoded["input_ids"], encoded["offset_mapping"]
        values: list[float | None] = [None] if ids else []  # one value per token; an empty prompt has none
        if len(ids) > 1:
            with self.lock, torch.inference_mode():
                logits = self.model(input_ids=torch.tensor([ids])).logits[0, :-1]  # (T-1, V)
                logp = scaled_logprobs(logits, temperature)
                values += logp.gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()
        tokens = [self.tokenizer.decode([t]) for t in ids]
        return {"tokens": tokens, "token_logprobs": values, "text_offset": [start for start, _ in offsets]}


def _cut_at_stop(tokens: list[str], logprobs: list[float], stop: list[str], include: bool):
    """Text up to the first stop string (kept when ``include``), and the tokens that produced it."""
    text = "".join(tokens)
    cut, hit = len(text), None
    for s in stop:
        at = text.find(s)
        if 0 <= at < cut:
            cut, hit = at, s
    if hit is None:
        return text, tokens, logprobs, False
    end = cut + (len(hit) if include else 0)
    kept, kept_lp, used = [], [], 0
    for piece, lp in zip(tokens, logprobs, strict=True):
        if used >= end:
            break
        kept.append(piece)
        kept_lp.append(lp)
        used += len(piece)
    return text[:end], kept, kept_lp, True


def stream_chunks(result: dict, body: dict) -> list[dict]:
    """The chunks of a streamed response, built from the complete one: one per token, as OpenAI streams."""
    choice = result["choices"][0]
    head = {"id": result["id"], "created": int(time.time()), "model": result["model"]}
    usage = body.get("stream_options") or {}
    chunks = []
    if result["object"] == "chat.completion":
        head["object"] = "chat.completion.chunk"
        chunks.append({**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                            "finish_reason": None}]})  # fmt: skip
        entries = (choice.get("logprobs") or {}).get("content")
        for k, piece in enumerate(choice["tokens"]):
            delta: dict[str, Any] = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
            if entries is not None:
                delta["logprobs"] = {"content": [entries[k]]}
            chunks.append({**head, "choices": [delta]})
        chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]})
    else:
        head["object"] = "text_completion"
        logprobs = body.get("logprobs") is not None
        for piece, lp in zip(choice["tokens"], choice["token_logprobs"], strict=True):
            part: dict[str, Any] = {"index": 0, "text": piece, "finish_reason": None}
            if logprobs:
                part["logprobs"] = {"tokens": [piece], "token_logprobs": [lp]}
            chunks.append({**head, "choices": [part]})
        chunks.append({**head, "choices": [{"index": 0, "text": "", "finish_reason": choice["finish_reason"]}]})
    if usage.get("include_usage"):
        chunks.append({**head, "choices": [], "usage": result["usage"]})
    return chunks


def make_handler(backend: ModelBackend, api_key: str | None):
    """The request handler class for one backend (and optional key)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            return None  # quiet: tests start many servers

        def _send(self, status: int, payload: dict) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
            self._send(status, {"error": {"message": message, "type": kind, "code": status}})

        def _authorized(self) -> bool:
            if api_key is None or self.headers.get("Authorization") == f"Bearer {api_key}":
                return True
            self._error(401, "invalid or missing API key", "authentication_error")
            return False

        def _body(self) -> dict | None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                data = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._error(400, "request body is not valid JSON")
                return None
            if not isinstance(data, dict):
                self._error(400, "request body must be a JSON object")
                return None
            return data

        def do_GET(self) -> None:
            if not self._authorized():
                return
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": backend.name, "object": "model"}]})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            if not self._authorized():
                return
            body = self._body()
            if body is None:
                return
            try:
                if self.path == "/v1/chat/completions":
                    result = self.chat(body)
                elif self.path == "/v1/completions":
                    result = self.completions(body)
                else:
                    self._error(404, f"no route {self.path}")
                    return
            except (KeyError, TypeError, ValueError) as error:
                self._error(400, f"bad request: {error}")
                return
            if body.get("stream"):
                self._stream(result, body)
            else:
                self._send(200, result)

        def _stream(self, result: dict, body: dict) -> None:
            """``result`` (a complete response) as the server-sent events of a streamed one."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")  # the stream's end is the connection's end
            self.end_headers()
            self.close_connection = True
            for chunk in stream_chunks(result, body):
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def chat(self, body: dict) -> dict:
            messages = body["messages"]
            if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
                raise ValueError("messages must be a list of objects")
            continue_final = bool(body.get("continue_final_message", False))
            prompt = backend.render_chat(messages, continue_final)
            stop = body.get("stop") or []
            stop = [stop] if isinstance(stop, str) else list(stop)
            result = backend.complete(
                prompt,
                temperature=float(body.get("temperature", 1.0)),
                max_tokens=int(body.get("max_tokens", 256)),
                seed=int(body.get("seed", 0)),
                stop=stop,
            )
            include = bool(body.get("include_stop_str_in_output", False))
            text, tokens, logprobs, hit = _cut_at_stop(result["tokens"], result["logprobs"], stop, include)
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "tokens": tokens,  # the text's pieces, for streaming (removed from the plain response)
                "finish_reason": "stop" if hit else result["finish_reason"],
            }
            if body.get("logprobs"):
                choice["logprobs"] = {
                    "content": [{"token": t, "logprob": lp} for t, lp in zip(tokens, logprobs, strict=True)]
                }
            if not body.get("stream"):
                del choice["tokens"]
            return {
                "id": f"chatcmpl-{time.monotonic_ns()}",
                "object": "chat.completion",
                "model": body.get("model", backend.name),
                "choices": [choice],
                "usage": {"prompt_tokens": result["prompt_tokens"], "completion_tokens": len(tokens)},
            }

        def completions(self, body: dict) -> dict:
            prompt = body["prompt"]
            if not isinstance(prompt, str):
                raise ValueError("prompt must be a string")
            temperature = float(body.get("temperature", 1.0))
            result = backend.complete(
                prompt, temperature=temperature, max_tokens=int(body.get("max_tokens", 16)),
                seed=int(body.get("seed", 0)), stop=[],
            )  # fmt: skip
            text = "".join(result["tokens"])
            choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": result["finish_reason"]}
            if body.get("stream"):
                if body.get("echo"):
                    raise ValueError("echo is not supported with stream")
                choice["tokens"], choice["token_logprobs"] = result["tokens"], result["logprobs"]
            if body.get("echo"):
                choice["text"] = prompt + text
                if body.get("logprobs") is not None:
                    echoed = backend.prompt_logprobs(prompt, temperature)
                    offsets = [
                        len(prompt) + sum(len(t) for t in result["tokens"][:k]) for k in range(len(result["tokens"]))
                    ]
                    choice["logprobs"] = {
                        "tokens": echoed["tokens"] + result["tokens"],
                        "token_logprobs": echoed["token_logprobs"] + result["logprobs"],
                        "text_offset": echoed["text_offset"] + offsets,
                    }
            return {
                "id": f"cmpl-{time.monotonic_ns()}",
                "object": "text_completion",
                "model": body.get("model", backend.name),
                "choices": [choice],
                "usage": {"prompt_tokens": result["prompt_tokens"], "completion_tokens": len(result["tokens"])},
            }

    return Handler


def start_server(backend: ModelBackend, port: int = 0, api_key: str | None = None, handler=None):
    """Serve on 127.0.0.1 in a daemon thread; returns (server, base_url). Stop with ``server.shutdown()``."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler or make_handler(backend, api_key))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def main(argv: list[str] | None = None) -> int:
    """``python -m baselines.tiny.serve``: serve the model until Ctrl-C; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(MODEL_DIR))
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--api-key-env", default=None, help="require the key held by this environment variable")
    args = parser.parse_args(argv)
    api_key = os.environ.get(args.api_key_env) if args.api_key_env else None
    backend = ModelBackend(args.model)
    server, url = start_server(backend, args.port, api_key)
    print(f"serving {backend.name} at {url} (Ctrl-C stops)")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
