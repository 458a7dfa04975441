"""``openai:<base-url>#<model>``: any OpenAI-compatible endpoint (vLLM or SGLang server, hosted APIs).

Generation goes to ``POST <base-url>/chat/completions`` with the context's messages, ``temperature``,
``max_tokens`` (the per-turn budget), ``seed`` (the request's, so a seeded server is reproducible),
``stop: ["</answer>"]`` (the stop string, which servers drop from the text, is put back) and
``logprobs: true``; the returned per-token log-probs become ``Generation.token_logprobs`` when the server
sends them. Token entropies need the full distribution, which no such API returns: they stay ``None``.

The assistant prefill (``"<think>"``) is sent the vLLM/SGLang way by default (``prefill="continue"``: a final
assistant message plus ``continue_final_message: true, add_generation_prompt: false``, and
``include_stop_str_in_output: true`` so the log-probs cover ``</answer>`` too). Hosted APIs reject those fields: use ``prefill="omit"``, which sends the messages alone and strips the prefill from the reply
when the model wrote it itself.

Scoring (``log p(text | context)``, all the MI family needs) uses ``POST <base-url>/completions`` with
``echo: true, logprobs: 0``: the prompt log-probs that vLLM/SGLang return for the rendered chat + prefill
+ text, summed over the tokens at or after the text's first character (``text_offset``). Rendering the chat
needs the model's chat template: pass ``tokenizer=<dir-or-name>`` (loaded offline with transformers). With
no tokenizer the agent cannot score (``can_score = False``) and the harness reports MI as unavailable; a
server that returns no prompt log-probs makes ``score`` raise :class:`ScoringUnavailable` likewise.

Reliability: at most ``concurrency`` requests in flight; each attempt has a total deadline of ``timeout_s``
(connect, send, wait and the whole reply: a server that drips its reply is cut off at the deadline) and a cap of
``max_reply_mb`` on the reply's body (``bounded_http``); a larger reply fails at once with
:class:`EndpointError`. Every reply is read as hostile input (``openai_reply``): a field that is missing or of
the wrong kind raises :class:`EndpointError` naming it, never anything else. Connection errors, timeouts,
HTTP 408/409/429/5xx and malformed JSON are retried ``max_retries``
times with exponential backoff (``backoff_s · 2^attempt``, capped at 30 s, ``Retry-After`` honoured);
401/403 raise :class:`EndpointAuthError` and other 4xx :class:`EndpointError` at once, with the server's
message. The API key is read from the environment variable ``api_key_env`` (``OPENAI_API_KEY``) when the
request is sent and is never stored on the agent, logged, or put in an error message.

Options (``AgentOptions.extra``, or the spec's query: ``openai:<base-url>#<model>?tokenizer=<dir>&concurrency=4``):
``api_key_env``, ``concurrency`` (8), ``timeout_s`` (60, per attempt, in all), ``max_reply_mb`` (32),
``max_retries`` (4), ``backoff_s`` (0.5), ``prefill`` (``continue``/``omit``), ``tokenizer``, ``logprobs``
(True).
"""

from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.parse
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from harness.agents import bounded_http, openai_reply
from harness.agents.base import Agent, Context, Generation, Request, Score, ScoringUnavailable
from harness.agents.options import AgentOptions
from harness.transcript import render_prompt
from ragen_envs.core import check_choice, check_range

STOP = "</answer>"
ANSWER_OPEN = "<answer>"
PREFILL_MODES = ("continue", "omit")
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class EndpointError(RuntimeError):
    """An OpenAI-compatible endpoint failed (HTTP error, bad JSON, timeout after all retries)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class EndpointAuthError(EndpointError):
    """The endpoint rejected the credentials (HTTP 401/403)."""


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to reach the endpoint; built from the spec and ``AgentOptions.extra``."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    timeout_s: float = 60.0
    max_reply_mb: int = 32
    max_retries: int = 4
    backoff_s: float = 0.5
    prefill: str = "continue"
    tokenizer: str | None = None
    logprobs: bool = True

    def __post_init__(self) -> None:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")
        if not self.model:
            raise ValueError("model must be non-empty: use openai:<base-url>#<model>")
        check_range("concurrency", self.concurrency, 1, integer=True)
        check_range("timeout_s", self.timeout_s, 0.001)
        check_range("max_reply_mb", self.max_reply_mb, 1, 4096, integer=True)
        check_range("max_retries", self.max_retries, 0, integer=True)
        check_range("backoff_s", self.backoff_s, 0.0)
        check_choice("prefill", self.prefill, PREFILL_MODES)

    @classmethod
    def from_spec(cls, argument: str, extra: dict[str, Any] | None = None) -> EndpointConfig:
        """``<base-url>#<model>[?key=value&…]`` plus the options in ``extra`` (unknown keys are an error).

        Options in the spec's query (``#qwen?tokenizer=/models/qwen&concurrency=4``) let the command line set
        them; ``extra`` wins over the query.
        """
        base_url, hash_, model = argument.rpartition("#")
        if not hash_:
            raise ValueError(f"openai agent spec must be openai:<base-url>#<model>, got openai:{argument!r}")
        model, _, query = model.partition("?")
        options: dict[str, Any] = {}
        for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
            options[key] = _coerce(key, value)
        options.update({k: v for k, v in (extra or {}).items() if v is not None})  # None: unset
        fields = {f for f in cls.__dataclass_fields__ if f not in ("base_url", "model")}
        unknown = sorted(set(options) - fields)
        if unknown:
            raise ValueError(f"unknown openai agent option(s) {unknown}; allowed: {sorted(fields)}")
        return cls(base_url=base_url.rstrip("/"), model=model, **options)


def _coerce(key: str, value: str) -> Any:
    """A query-string option as the type its field has."""
    kinds = {"concurrency": int, "max_retries": int, "max_reply_mb": int, "timeout_s": float, "backoff_s": float}
    if key in kinds:
        try:
            return kinds[key](value)
        except ValueError:
            raise ValueError(f"openai agent option {key} must be a number, got {value!r}") from None
    if key == "logprobs":
        return value.lower() not in ("0", "false", "no", "")
    return value


def _restore_stop(text: str, finish_reason: str | None) -> str:
    """Servers drop the stop string; put ``</answer>`` back when it was what stopped the text."""
    if finish_reason == "stop" and not text.endswith(STOP):
        opened = text.rfind(ANSWER_OPEN)
        if opened >= 0 and text.find(STOP, opened) < 0:
            return text + STOP
    return text


class OpenAIAgent(Agent):
    """An agent backed by an OpenAI-compatible HTTP endpoint; see the module docstring."""

    def __init__(self, config: EndpointConfig, options: AgentOptions | None = None, *, sleep: Callable = time.sleep):
        self.config = config
        self.options = options or AgentOptions()
        self._sleep = sleep
        self._template = None
        if config.tokenizer is not None:
            from transformers import AutoTokenizer

            self._template = AutoTokenizer.from_pretrained(config.tokenizer)
        self.can_score = self._template is not None

    @classmethod
    def from_spec(cls, argument: str, options: AgentOptions) -> OpenAIAgent:
        """Build the agent from the text after ``openai:`` in its spec and the ``extra`` options."""
        return cls(EndpointConfig.from_spec(argument, options.extra), options)

    # ---- HTTP -------------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.config.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _post_once(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        raw = bounded_http.post(
            self.config.base_url + path,
            json.dumps(body).encode(),
            self._headers(),
            timeout_s=self.config.timeout_s,
            max_bytes=self.config.max_reply_mb << 20,
        )
        try:
            data = openai_reply.decode(raw)
        except ValueError as error:
            raise _Retryable(f"malformed JSON from {path} ({error}): {raw[:200]!r}") from None
        if not isinstance(data, dict):
            raise _Retryable(f"malformed JSON from {path}: expected an object, got {type(data).__name__}")
        return data

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST with retries and backoff; raise :class:`EndpointError` with the reason when all attempts fail."""
        url = self.config.base_url + path
        last = ""
        for attempt in range(self.config.max_retries + 1):
            wait = min(30.0, self.config.backoff_s * 2**attempt)
            try:
                return self._post_once(path, body)
            except urllib.error.HTTPError as error:
                detail = _error_detail(error)
                if error.code in (401, 403):
                    raise EndpointAuthError(
                        f"{url}: HTTP {error.code} (authentication failed; the key is read from "
                        f"${self.config.api_key_env}, which is {'set' if os.environ.get(self.config.api_key_env) else 'not set'}): "
                        f"{detail}",
                        error.code,
                    ) from None
                if error.code not in RETRY_STATUS:
                    hint = ""
                    if error.code == 404 and not self.config.base_url.endswith("/v1"):
                        hint = (f" (OpenAI-compatible servers serve {path} under /v1: did you mean "
                                f"openai:{self.config.base_url}/v1#{self.config.model}?)")  # fmt: skip
                    raise EndpointError(f"{url}: HTTP {error.code}: {detail}{hint}", error.code) from None
                last = f"HTTP {error.code}: {detail}"
                retry_after = error.headers.get("Retry-After") if error.headers else None
                if retry_after and retry_after.strip().isdigit():
                    wait = min(30.0, float(retry_after))
            except bounded_http.ReplyTooLarge as error:
                raise EndpointError(f"{url}: {error} (the max_reply_mb option sets it)") from None
            except _Retryable as error:
                last = str(error)
            except TimeoutError:
                last = f"timed out after {self.config.timeout_s}s (the whole request)"
            except (urllib.error.URLError, ConnectionError, OSError) as error:
                reason = getattr(error, "reason", error)
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    last = f"timed out after {self.config.timeout_s}s (the whole request)"
                else:
                    last = f"connection failed: {reason}"
            if attempt < self.config.max_retries:
                self._sleep(wait)
        hint = " (is the server running, at this host and port?)" if last.startswith("connection failed") else ""
        raise EndpointError(f"{url}: giving up after {self.config.max_retries + 1} attempts; last error: {last}{hint}")

    # ---- the protocol ---------------------------------------------------------------------------------------
    def _chat_body(self, request: Request) -> dict[str, Any]:
        context = request.context
        messages = [dict(m) for m in context.messages]
        body: dict[str, Any] = {
            "model": self.config.model,
            "temperature": self.options.temperature,
            "max_tokens": self.options.max_new_tokens,
            "seed": int(request.seed),
            "stop": [STOP],
            "n": 1,
        }
        if self.config.logprobs:
            body["logprobs"] = True
        if context.prefill and self.config.prefill == "continue":
            messages.append({"role": "assistant", "content": context.prefill})
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
            body["include_stop_str_in_output"] = True
        body["messages"] = messages
        return body

    def _generate_one(self, request: Request) -> Generation:
        data = self._post("/chat/completions", self._chat_body(request))
        try:
            reply = openai_reply.chat_reply(data)
        except openai_reply.ReplyShapeError as error:
            raise EndpointError(
                f"{self.config.base_url}/chat/completions: unexpected response shape: {error}"
            ) from None
        text = reply.text
        prefill = request.context.prefill
        if prefill and self.config.prefill == "omit" and text.lstrip().startswith(prefill):
            text = text.lstrip()[len(prefill) :]
        text = _restore_stop(text, reply.finish_reason)
        return Generation(text=text, num_tokens=reply.completion_tokens, token_logprobs=reply.token_logprobs)

    def generate(self, requests: Sequence[Request]) -> list[Generation]:
        """Agent protocol's generate: one :class:`Generation` per request, in order, sent to the endpoint with up to ``concurrency`` requests in flight."""
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.config.concurrency, len(requests))) as pool:
            return list(pool.map(self._generate_one, requests))

    def _score_one(self, pair: tuple[Context, str]) -> Score:
        context, text = pair
        prompt = render_prompt(self._template, context)
        body = {
            "model": self.config.model,
            "prompt": prompt + text,
            "max_tokens": 1,
            "temperature": 1.0 if self.options.temperature == 0 else self.options.temperature,
            "echo": True,
            "logprobs": 0,
        }
        data = self._post("/completions", body)
        try:
            picked = openai_reply.span_logprobs(data, len(prompt), len(prompt) + len(text))
        except openai_reply.ReplyShapeError as error:
            if error.missing:
                raise ScoringUnavailable(
                    f"{self.config.base_url}/completions returned no prompt log-probs (echo + logprobs unsupported?): "
                    f"{error}"
                ) from None
            raise EndpointError(f"{self.config.base_url}/completions: unexpected response shape: {error}") from None
        return Score(logprob_sum=float(sum(picked)), num_tokens=len(picked))

    def score(self, contexts: Sequence[Context], texts: Sequence[str]) -> list[Score]:
        """Agent protocol's score: teacher-forced log p(``texts[i]`` | ``contexts[i]``) as one :class:`Score` per pair; raises :class:`ScoringUnavailable` without a chat template (the tokenizer option)."""
        if not self.can_score:
            raise ScoringUnavailable(
                f"agent {self.spec or 'openai'!r} cannot score without a chat template: pass the tokenizer option"
            )
        pairs = list(zip(contexts, texts, strict=True))
        if not pairs:
            return []
        with ThreadPoolExecutor(max_workers=min(self.config.concurrency, len(pairs))) as pool:
            return list(pool.map(self._score_one, pairs))

    def describe(self) -> dict[str, Any]:
        """Agent protocol's describe: spec and endpoint settings (the API key's env variable name, never the key)."""
        c = self.config
        return {
            "spec": self.spec,
            "base_url": c.base_url,
            "model": c.model,
            "api_key_env": c.api_key_env,
            "prefill": c.prefill,
            "temperature": self.options.temperature,
            "max_new_tokens": self.options.max_new_tokens,
        }

    def __repr__(self) -> str:
        return f"OpenAIAgent({self.config.base_url!r}, model={self.config.model!r})"


class _Retryable(Exception):
    """A response that arrived but cannot be used (bad JSON); worth another attempt."""


def _error_detail(error: urllib.error.HTTPError) -> str:
    """The server's error message, from an OpenAI-style JSON body when there is one (truncated)."""
    raw = getattr(error, "body_prefix", b"")
    if not raw:
        return error.reason if isinstance(error.reason, str) else ""
    return openai_reply.error_message(raw) or raw.decode("utf-8", "replace")[:300]
