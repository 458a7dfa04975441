"""The ``vllm:`` agent: a clear install hint without vLLM; on a GPU with vLLM, the tiny model through it."""

from __future__ import annotations

import importlib.util

import pytest

from harness.agents import AgentOptions, Context, Request, make_agent

HAS_VLLM = importlib.util.find_spec("vllm") is not None


def has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed: the missing-extra message cannot be checked")
def test_without_vllm_the_error_names_the_extra():
    with pytest.raises(ImportError, match=r"pip install -e '\.\[gpu\]'"):
        make_agent("vllm:Qwen/Qwen2.5-0.5B-Instruct")


def test_unknown_engine_options_are_rejected_before_loading():
    if HAS_VLLM:
        pytest.skip("with vLLM installed this would build an engine")
    # checked before vLLM is imported: the error names the bad key and the allowed ones
    with pytest.raises(ValueError, match=r"gpu_memory_utilisation.*allowed: .*enable_prefix_caching"):
        make_agent("vllm:x", AgentOptions(extra={"gpu_memory_utilisation": 0.3}))


@pytest.mark.gpu
@pytest.mark.skipif(not (HAS_VLLM and has_cuda()), reason="needs vLLM and a CUDA GPU (extra: gpu)")
def test_tiny_model_through_vllm_generates_and_scores_consistently():
    from baselines.tiny import MODEL_DIR

    agent = make_agent(
        f"vllm:{MODEL_DIR}", AgentOptions(temperature=1.0, max_new_tokens=64, extra={"enforce_eager": True})
    )
    context = Context(
        (
            {"role": "system", "content": "You are playing a two-armed bandit. You pull one arm, once."},
            {"role": "user", "content": "Turn 1:\nState:\nArms: Dragon and Turtle. Which arm do you pull?"},
        ),
        "<think>",
    )
    generations = agent.generate([Request(context, seed) for seed in range(4)])
    again = agent.generate([Request(context, seed) for seed in range(4)])
    assert [g.text for g in generations] == [g.text for g in again]
    scores = agent.score([context] * 4, [g.text for g in generations])
    for generation, score in zip(generations, scores):
        if score.num_tokens == generation.num_tokens:
            assert score.logprob_sum == pytest.approx(sum(generation.token_logprobs), abs=1e-2)
