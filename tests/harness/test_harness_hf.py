"""The hf: agent with a tiny randomly initialised Llama and a tokenizer built offline (nothing from a hub)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from harness.agents import AgentOptions, Context, Request, make_agent  # noqa: E402
from harness.cli import main  # noqa: E402
from harness.mi.estimator import collapse_metrics  # noqa: E402
from tests.helpers.tiny_lm import build_tiny_llama  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny matmuls on a shared 2-core box: one intra-op thread is ~20x faster than two fighting (restored after)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def agent(model_dir):
    return make_agent(f"hf:{model_dir}", AgentOptions(max_new_tokens=12, device="cpu", batch_size=4))


def contexts(n):
    return [
        Context(
            ({"role": "system", "content": "Pick an arm."}, {"role": "user", "content": f"Arms: A{j} and B{j}."}),
            "<think>",
        )
        for j in range(n)
    ]


def encode(agent, text: str) -> list[int]:
    return agent.tokenizer(text, add_special_tokens=False)["input_ids"]


def prompt_text(agent, context: Context) -> str:
    messages = list(context.messages)
    return agent.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + context.prefill


def naive_logprob(agent, context: Context, text: str) -> tuple[float, int]:
    """Reference: one full forward over prompt + text ids, no cache, no batching."""
    prompt, ids = encode(agent, prompt_text(agent, context)), encode(agent, text)
    # the texts below start with a letter, so tokenizing jointly or separately gives the same ids
    assert encode(agent, prompt_text(agent, context) + text) == prompt + ids
    with torch.no_grad():
        logits = agent.model(input_ids=torch.tensor([prompt + ids])).logits[0].float()
    logp = torch.log_softmax(logits / agent.options.temperature, -1)
    return float(sum(logp[len(prompt) + t - 1, tok] for t, tok in enumerate(ids))), len(ids)


def test_score_matrix_with_prefix_cache_matches_full_forwards(agent):
    ctxs = contexts(3)
    texts = ["I pull A1 because it is bold", "Turtle", "maybe the Dragon arm is risky and good"]
    sums, counts = agent.score_matrix(ctxs, texts)
    assert sums.shape == counts.shape == (3, 3)
    for i, text in enumerate(texts):
        for j, ctx in enumerate(ctxs):
            expected, n = naive_logprob(agent, ctx, text)
            assert counts[i, j] == n
            assert sums[i, j] == pytest.approx(expected, abs=1e-3)
    pairwise = agent.score([ctxs[2], ctxs[0]], [texts[1], texts[2]])
    assert pairwise[0].logprob_sum == pytest.approx(sums[1, 2], abs=1e-3)
    assert pairwise[1].logprob_sum == pytest.approx(sums[2, 0], abs=1e-3)
    metrics = collapse_metrics(sums / counts, [0, 1, 2], logp_sum=sums)
    assert all(math.isfinite(est.value) for est in metrics.values())


@pytest.mark.parametrize(
    "token_budget, batch_size, tree_budget, tree_masks",
    [(1024, 32, 256, None), (12, 2, 256, None), (1, 1, 1, None), (64, 4, 9, None), (64, 4, 256, False)],
)
def test_batched_score_matrix_equals_teacher_forcing_each_pair(
    agent, token_budget, batch_size, tree_budget, tree_masks
):
    """The optimised scorer (prompts left-padded in batches; texts merged into prefix trees, many (prompt, tree)
    rows per forward on gathered KV caches) equals one full forward per pair within float noise, for prompts
    and texts of different lengths, empty and one-token texts, texts that share openings or are prefixes of
    others, whatever the budgets split; and so does its one-chain-per-text form (for attention kernels that
    take no custom 4D mask)."""
    from harness.lm.scoring import _prefix_trees, score_matrix_ids

    ctxs = [
        Context(({"role": "system", "content": "Pick an arm."}, {"role": "user", "content": "Arms: A and B."}), "<think>"),
        Context(({"role": "system", "content": "Pick an arm. " * 6}, {"role": "user", "content": "Arms: Bank Vault."}), "<think>"),
        Context(({"role": "user", "content": "x"},), ""),
        Context(({"role": "system", "content": "Pick an arm."}, {"role": "user", "content": "Arms: A and B."}), "<think>"),
    ]  # fmt: skip
    texts = [
        "I pull A1 because it is bold and the risky arm pays more", "Turtle", "", "T", "maybe the Dragon arm",
        "I pull A1 because it is safe", "I pull A1", "I pull B", "maybe",
    ]  # fmt: skip
    heads = [encode(agent, prompt_text(agent, c)) for c in ctxs]
    bodies = [encode(agent, t) for t in texts]
    trees = _prefix_trees(bodies, [i for i, b in enumerate(bodies) if b], tree_budget)
    nodes = sum(len(tree.tokens) for tree in trees)
    assert sorted(i for tree in trees for i in tree.members) == [i for i, b in enumerate(bodies) if b]
    assert all(len(tree.tokens) <= tree_budget or len(tree.members) == 1 for tree in trees)
    if tree_budget >= 64:  # shared openings are run once
        assert nodes < sum(map(len, bodies))
    sums, counts = score_matrix_ids(
        agent.model, heads, bodies, temperature=agent.options.temperature, pad_id=agent.pad_id,
        batch_size=batch_size, token_budget=token_budget, tree_budget=tree_budget, tree_masks=tree_masks,
    )  # fmt: skip
    assert sums.shape == counts.shape == (len(texts), len(ctxs))
    for i, text in enumerate(texts):
        for j, ctx in enumerate(ctxs):
            if not text:
                assert (sums[i, j], counts[i, j]) == (0.0, 0)
                continue
            expected, n = naive_logprob(agent, ctx, text)
            assert counts[i, j] == n
            assert abs(sums[i, j] / n - expected / n) < 1e-5
            assert sums[i, j] == pytest.approx(expected, rel=1e-6, abs=1e-5)
    assert sums[:, 0].tolist() == sums[:, 3].tolist()  # identical prompts, identical numbers


@pytest.mark.parametrize("token_budget", [512, 8])
def test_score_matrix_with_wanted_scores_exactly_those_pairs(agent, token_budget):
    """Column subsampling: only the wanted pairs are scored, each equal to its full forward; a prompt that
    wants no text does not run; the rest is NaN."""
    from harness.lm.scoring import score_matrix_ids

    ctxs = contexts(4)
    texts = ["I pull A1 because it is bold", "I pull A1 because", "Turtle", "", "maybe the Dragon arm", "I"]
    heads = [encode(agent, prompt_text(agent, c)) for c in ctxs]
    bodies = [encode(agent, t) for t in texts]
    wanted = np.array([[(i + j) % 3 != 0 and j != 2 for j in range(4)] for i in range(len(texts))])
    sums, counts = score_matrix_ids(
        agent.model, heads, bodies, temperature=agent.options.temperature, pad_id=agent.pad_id,
        token_budget=token_budget, wanted=wanted,
    )  # fmt: skip
    for i, text in enumerate(texts):
        for j, ctx in enumerate(ctxs):
            if not wanted[i, j]:
                assert math.isnan(sums[i, j])
            elif not text:
                assert (sums[i, j], counts[i, j]) == (0.0, 0)
            else:
                assert sums[i, j] == pytest.approx(naive_logprob(agent, ctx, text)[0], rel=1e-6, abs=1e-5)
    nothing = score_matrix_ids(agent.model, heads, bodies, wanted=np.zeros_like(wanted))[0]
    assert np.isnan(nothing).all()
    with pytest.raises(ValueError, match="wanted must have shape"):
        score_matrix_ids(agent.model, heads, bodies, wanted=wanted[:, :2])
    via_agent = agent.score_matrix(ctxs, texts, wanted=wanted)[0]
    assert np.allclose(via_agent[wanted], sums[wanted], rtol=1e-6, atol=1e-5)
    assert torch.get_num_threads() == 1  # the scoring threads are restored for generation


def test_score_matrix_with_wanted_and_only_empty_texts_still_leaves_the_unwanted_nan(agent):
    from harness.lm.scoring import score_matrix_ids

    heads = [encode(agent, prompt_text(agent, c)) for c in contexts(2)]
    wanted = np.array([[True, False], [False, True]])
    sums, counts = score_matrix_ids(agent.model, heads, [[], []], wanted=wanted)
    assert sums[wanted].tolist() == [0.0, 0.0] and np.isnan(sums[~wanted]).all()
    assert counts.tolist() == [[0, 0], [0, 0]]
    with pytest.raises(ValueError, match="wanted must have shape"):
        score_matrix_ids(agent.model, heads, [[], []], wanted=wanted[:, :1])


def test_generation_is_seeded_per_row_batched_with_left_padding(agent):
    ctx_short = contexts(1)[0]
    ctx_long = Context(
        ctx_short.messages + ({"role": "user", "content": "a much longer second message " * 5},), "<think>"
    )
    alone = agent.generate([Request(ctx_short, 7)])[0]
    batch = agent.generate([Request(ctx_long, 3), Request(ctx_short, 7), Request(ctx_short, 8)])
    assert batch[1].text == alone.text  # same seed, same prompt: same text whatever the batch mates
    assert batch[1].token_logprobs == pytest.approx(alone.token_logprobs, abs=1e-4)
    assert len(alone.token_logprobs) == len(alone.token_entropies) == alone.num_tokens <= 12
    assert all(lp <= 0 for lp in alone.token_logprobs) and all(e >= 0 for e in alone.token_entropies)
    # the log-probs reported at generation are those of the generated tokens under the same distribution
    text = alone.text
    if text and text[0].isalpha() and len(encode(agent, text)) == alone.num_tokens:
        assert agent.score([ctx_short], [text])[0].logprob_sum == pytest.approx(sum(alone.token_logprobs), abs=1e-3)


def test_identical_prompts_share_a_prefill_and_still_sample_apart(agent):
    """Group sampling: K rows of one prompt run one prefill; each row is what its seed gives it alone."""
    from harness.lm.generation import generate_ids

    prompt = encode(agent, prompt_text(agent, contexts(1)[0]))
    other = encode(agent, prompt_text(agent, contexts(2)[1]))
    kwargs = dict(temperature=1.0, max_new_tokens=12, stop_ids=[], pad_id=agent.pad_id)
    shapes = []
    hook = agent.model.register_forward_pre_hook(lambda _, args, kw: shapes.append(tuple(kw["input_ids"].shape)),
                                                 with_kwargs=True)  # fmt: skip
    try:
        group = generate_ids(agent.model, [prompt, other, prompt, prompt, other], [0, 5, 1, 2, 5], **kwargs)
    finally:
        hook.remove()
    assert shapes[0] == (2, max(len(prompt), len(other)))  # the prefill: two distinct prompts
    assert shapes[1] == (5, 1)  # then every row decodes
    for row, (ids, seed) in enumerate([(prompt, 0), (other, 5), (prompt, 1), (prompt, 2), (other, 5)]):
        (alone,) = generate_ids(agent.model, [ids], [seed], **kwargs)
        assert group[row].token_ids == alone.token_ids
        assert group[row].logprobs == pytest.approx(alone.logprobs, abs=1e-4)
    assert group[1].token_ids == group[4].token_ids  # same prompt and seed
    assert len({group[0].token_ids, group[2].token_ids, group[3].token_ids}) == 3  # the seeds, not the prefill


def test_decoding_into_growing_buffers_equals_the_stock_cache(agent, monkeypatch):
    """The in-place KV cache (no copy of the whole cache per token) decodes exactly what transformers' cache does,
    with rows leaving the batch at different steps (batch selection, then a new buffer)."""
    from harness.lm import generation

    prompts = [encode(agent, prompt_text(agent, c)) for c in contexts(5)]
    stops = list(range(3, agent.model.config.vocab_size, 5))  # a fifth of the vocabulary: rows stop at random
    kwargs = dict(temperature=1.0, max_new_tokens=16, stop_ids=stops, pad_id=agent.pad_id)
    growing = generation.generate_ids(agent.model, prompts, [0, 1, 2, 3, 4], keep_prefixes=True, **kwargs)
    assert len({len(g.token_ids) for g in growing}) > 1  # rows left at different steps
    monkeypatch.setattr(generation, "growing_cache", lambda *args, **kw: None)
    stock = generation.generate_ids(agent.model, prompts, [0, 1, 2, 3, 4], keep_prefixes=True, **kwargs)
    for a, b in zip(growing, stock, strict=True):
        assert a.token_ids == b.token_ids and a.stopped == b.stopped
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
        assert a.prefix.ids == b.prefix.ids
        for (ka, va), (kb, vb) in zip(a.prefix.layers, b.prefix.layers, strict=True):
            assert torch.allclose(ka, kb, atol=1e-5) and torch.allclose(va, vb, atol=1e-5)


def test_rows_leaving_the_batch_are_compacted_inside_the_same_buffers(agent):
    """Rows stopping (an increasing selection) move up inside the cache's buffers: no new buffer, and the kept
    rows' keys/values, then the next decode step's, equal the stock cache's; a copy made for scoring
    (``select_cache``) leaves the original's buffers alone."""
    from transformers import DynamicCache

    from harness.lm.kv_cache import growing_cache, select_cache

    model = agent.model
    prompts = torch.tensor([encode(agent, prompt_text(agent, c))[:6] for c in contexts(4)])  # (4, 6)
    caches = {"growing": growing_cache(model, 16), "stock": DynamicCache(config=model.config)}
    with torch.no_grad():
        for cache in caches.values():
            model(input_ids=prompts, use_cache=True, past_key_values=cache)
        layers = caches["growing"].layers
        buffers = [layer._buffers[0].data_ptr() for layer in layers]
        copy = select_cache(caches["growing"], torch.tensor([1, 2]))
        kept = torch.tensor([0, 2, 3])
        for cache in caches.values():
            cache.batch_select_indices(kept)
            model(input_ids=prompts[kept, :1], use_cache=True, past_key_values=cache)
    assert [layer._buffers[0].data_ptr() for layer in layers] == buffers  # compacted in place, then appended
    for grown, stock in zip(layers, caches["stock"].layers, strict=True):
        assert grown.keys.shape == stock.keys.shape == (3, stock.keys.shape[1], 7, stock.keys.shape[3])
        assert torch.allclose(grown.keys, stock.keys, atol=1e-6) and torch.allclose(
            grown.values, stock.values, atol=1e-6
        )
    assert copy.layers[0].keys.shape[0] == 2 and copy.layers[0]._buffers is None


def test_a_huge_token_budget_costs_no_memory_when_rows_stop_early(agent):
    """The in-place cache grows geometrically up to the budget; it does not allocate the budget up front."""
    from harness.lm.generation import generate_ids

    prompts = [encode(agent, prompt_text(agent, c)) for c in contexts(3)]
    every_token = list(range(agent.model.config.vocab_size))
    out = generate_ids(agent.model, prompts, [0, 1, 2], temperature=1.0, max_new_tokens=10**9,
                       stop_ids=every_token, pad_id=agent.pad_id)  # fmt: skip
    assert [len(o.token_ids) for o in out] == [1, 1, 1] and all(o.stopped for o in out)


def test_prefixes_are_ignored_by_a_sliding_window_model():
    """Sliding-window layers count cache columns, padding included: such a model prefills every prompt in full."""
    from harness.lm.generation import generate_ids
    from harness.lm.kv_cache import CachedPrefix

    config = transformers.MistralConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, sliding_window=6, max_position_embeddings=128, pad_token_id=0,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.MistralForCausalLM(config).eval()
    kwargs = dict(temperature=1.0, max_new_tokens=6, stop_ids=[], pad_id=0)
    first = [[5, 6, 7, 8, 9, 10, 11, 12], [13, 14, 15]]
    turn1 = generate_ids(model, first, [0, 1], keep_prefixes=True, **kwargs)
    assert all(o.prefix is None for o in turn1)  # nothing is kept for such a cache
    # handed a prefix anyway (zeros for keys/values: using it would change the tokens), it is not used
    layer = (torch.zeros(2, len(first[0]), 8), torch.zeros(2, len(first[0]), 8))
    bogus = CachedPrefix(tuple(first[0]), (layer, layer))
    second = [first[0] + [20, 21, 22, 23, 24], first[1] + [25, 26]]
    given = generate_ids(model, second, [2, 3], prefixes=[bogus, None], **kwargs)
    alone = [generate_ids(model, [p], [seed], **kwargs)[0] for p, seed in zip(second, [2, 3], strict=True)]
    for g, a in zip(
        given, alone, strict=True
    ):  # (log-probs: a random model's tokens hardly move; used, they differ by 0.04)
        assert g.token_ids == a.token_ids and g.logprobs == pytest.approx(a.logprobs, abs=1e-5)


def test_a_turn_started_from_its_cached_prefix_equals_a_full_prefill(agent):
    """Multi-turn: turn 2 runs only the tokens past what turn 1 left cached, and samples what a full prefill does."""
    from harness.lm.generation import generate_ids

    kwargs = dict(temperature=1.0, max_new_tokens=12, stop_ids=[], pad_id=agent.pad_id)
    first = [encode(agent, prompt_text(agent, c)) for c in contexts(3)]
    turn1 = generate_ids(agent.model, first, [0, 1, 2], keep_prefixes=True, **kwargs)
    for prompt, out in zip(first, turn1, strict=True):  # the fed tokens: the prompt and every new token but the last
        assert out.prefix.ids == tuple(prompt) + out.token_ids[:-1]
        assert all(k.shape[1] == v.shape[1] == len(out.prefix.ids) for k, v in out.prefix.layers)
    more = encode(agent, " Turn 2: the state changed.")
    second = [
        list(first[0]) + list(turn1[0].token_ids) + more,  # extends all that row 0 fed (and its last token)
        list(first[1][:-3]) + more,  # shares only part of row 1's prompt
        list(reversed(first[2])),  # shares nothing with row 2's: starts from scratch
        list(first[0]) + list(turn1[0].token_ids) + more,  # the same prompt as row 0: one prefill
    ]
    widths = []
    hook = agent.model.register_forward_pre_hook(lambda _, args, kw: widths.append(kw["input_ids"].shape[1]),
                                                 with_kwargs=True)  # fmt: skip
    try:
        cached = generate_ids(agent.model, second, [5, 6, 7, 8], prefixes=[o.prefix for o in turn1] + [None], **kwargs)
    finally:
        hook.remove()
    reused = [turn1[0].prefix.reusable(second[0]), turn1[1].prefix.reusable(second[1])]
    assert reused == [len(turn1[0].prefix.ids), len(first[1]) - 3]
    assert turn1[2].prefix.reusable(second[2]) == 0
    assert widths[0] == max(len(second[2]), len(second[0]) - reused[0], len(second[1]) - reused[1])
    full = generate_ids(agent.model, second, [5, 6, 7, 8], **kwargs)
    for a, b in zip(cached, full, strict=True):
        assert a.token_ids == b.token_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_multi_turn_rollout_with_and_without_the_prefix_cache_is_the_same(model_dir):
    """The hf: agent keeps each episode's keys/values between turns; the episodes are those of a cold start."""
    from harness.config import EnvPlan, RunConfig
    from harness.rollout import EnvPool, Job, rollout_chunk

    spec = f"hf:{model_dir}"
    config = RunConfig(agents=(spec,), envs=(EnvPlan("ragen/Sokoban-v0", 3, 2),), mi_samples=0, batch_size=6)
    jobs = [Job(spec, "ragen/Sokoban-v0", seed, sample) for seed in range(3) for sample in range(2)]
    runs = []
    for prefix_cache in (True, False):
        options = AgentOptions(max_new_tokens=10, device="cpu", batch_size=4, extra={"prefix_cache": prefix_cache})
        hf = make_agent(spec, options)
        fed = []  # tokens run per forward
        hook = hf.model.register_forward_pre_hook(lambda _, args, kw, fed=fed: fed.append(kw["input_ids"].numel()),
                                                  with_kwargs=True)  # fmt: skip
        try:
            records = rollout_chunk(hf, config, jobs, EnvPool(config))
            records = sorted(records, key=lambda r: (r["seed"], r["sample"]))
        finally:
            hook.remove()
        assert not hf._prefixes  # every episode ended: the rollout said so and the agent let go of them
        runs.append((records, sum(fed)))
    assert sum(len(r["turns"]) for r in runs[0][0]) > 2 * len(jobs)  # several turns per episode
    assert runs[0][1] < 0.5 * runs[1][1]  # later turns ran only their new tokens (4.5x fewer here)
    runs = [records for records, _ in runs]
    for cached, cold in zip(*runs, strict=True):
        assert [t["response"] for t in cached["turns"]] == [t["response"] for t in cold["turns"]]
        assert [t["logprob_sum"] for t in cached["turns"]] == pytest.approx(
            [t["logprob_sum"] for t in cold["turns"]], abs=1e-3
        )


def test_harness_run_with_hf_agent(model_dir, tmp_path):
    args = ["run", f"hf:{model_dir}", "--env", "ragen/Bandit-v0", "--episodes", "2", "--samples", "2"]
    args += ["--max-new-tokens", "8", "--device", "cpu", "--mi-samples", "4", "--out", str(tmp_path), "--run-id", "hf"]
    assert main([*args, "--quiet", "--no-plots"]) == 0
    doc = json.loads((tmp_path / "hf" / "summary.json").read_text())
    metrics = doc["rows"][0]["metrics"]
    assert metrics["token_entropy"]["value"] > 0 and metrics["mean_tokens"]["value"] <= 8
    lines = (tmp_path / "hf" / "episodes.jsonl").read_text().splitlines()
    turn = json.loads(lines[0])["turns"][0]
    assert turn["response"].startswith("<think>") and turn["logprob_sum"] < 0
    # a random model writes no </think>: MI is unavailable (with the reason), not 0
    mi = metrics["first_turn/mi_estimate"]
    assert mi["value"] is not None or "reasoning" in mi["unavailable"]


def test_missing_checkpoint_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = tmp_path / "nope"
    with pytest.raises((ValueError, OSError), match="nope"):
        make_agent(f"hf:{missing}")
    assert main(["run", f"hf:{missing}", "--env", "ragen/Bandit-v0", "--out", str(tmp_path), "--quiet"]) == 2
    assert "nope" in capsys.readouterr().err
