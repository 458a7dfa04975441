"""``baselines.tiny.serve`` streams (``"stream": true``) as OpenAI's API does: read with OpenAI's own client."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")
openai = pytest.importorskip("openai")

from baselines.tiny import MODEL_DIR  # noqa: E402
from baselines.tiny.serve import ModelBackend, start_server  # noqa: E402

MESSAGES = [
    {"role": "system", "content": "You are playing a two-armed bandit. You pull one arm, once."},
    {"role": "user", "content": "Turn 1:\nState:\nArms: Dragon and Turtle. Which arm do you pull?"},
    {"role": "assistant", "content": "<think>"},
]
VLLM_ARGS = {"continue_final_message": True, "add_generation_prompt": False, "include_stop_str_in_output": True}


@pytest.fixture(scope="module")
def client():
    srv, url = start_server(ModelBackend(str(MODEL_DIR)))
    yield openai.OpenAI(base_url=url, api_key="unused", max_retries=0, timeout=60)
    srv.shutdown()
    srv.server_close()


def test_streamed_chat_equals_the_plain_response_token_by_token(client):
    kwargs = dict(model="model", messages=MESSAGES, max_tokens=48, seed=3, stop=["</answer>"], logprobs=True)
    plain = client.chat.completions.create(**kwargs, extra_body=VLLM_ARGS)
    stream = client.chat.completions.create(
        **kwargs, stream=True, stream_options={"include_usage": True}, extra_body=VLLM_ARGS
    )
    chunks = list(stream)
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    pieces = [c.choices[0].delta.content or "" for c in chunks if c.choices]
    assert len([p for p in pieces if p]) > 3  # token by token, not one blob
    assert "".join(pieces) == plain.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [plain.choices[0].finish_reason]
    streamed_lps = [
        e.logprob for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content
    ]
    assert streamed_lps == [e.logprob for e in plain.choices[0].logprobs.content]
    assert chunks[-1].usage.completion_tokens == plain.usage.completion_tokens


def test_streamed_completion_and_a_bad_request(client):
    prompt = "Arms: Dragon and Turtle."
    plain = client.completions.create(model="model", prompt=prompt, max_tokens=12, seed=1)
    streamed = list(client.completions.create(model="model", prompt=prompt, max_tokens=12, seed=1, stream=True))
    assert "".join(c.choices[0].text for c in streamed) == plain.choices[0].text
    assert streamed[-1].choices[0].finish_reason == plain.choices[0].finish_reason
    with pytest.raises(openai.BadRequestError, match="echo is not supported with stream"):
        list(client.completions.create(model="model", prompt=prompt, max_tokens=4, echo=True, stream=True))


def test_prompt_logprobs_give_one_value_per_token_even_for_an_empty_prompt():
    backend = ModelBackend()
    for prompt in ("", "Turn 1:\nState:\nX"):
        echoed = backend.prompt_logprobs(prompt, temperature=1.0)
        assert len(echoed["tokens"]) == len(echoed["token_logprobs"]) == len(echoed["text_offset"])
