"""The update's teacher-forced scoring equals the straightforward computation it replaced, numerically.

The reference below is the plain path: one right-padded forward under a padding mask, the LM head and
log-softmax at every position, nothing shared between rows. The learner's path skips work that cannot change
a scored number; these tests show log-probs, entropies, hidden states and gradients agree to float rounding.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from baselines.ppo.generation import sequence_logprobs  # noqa: E402


def reference_logprobs(model, sequences, spans, temperature=1.0):
    """(logp, mask, entropy, hidden) as (B, W-1) columns: padded forward with a mask, full vocabulary."""
    width = max(len(s) for s in sequences)
    ids = torch.zeros((len(sequences), width), dtype=torch.long)
    attention = torch.zeros_like(ids)
    mask = torch.zeros((len(sequences), width - 1))
    for row, (seq, row_spans) in enumerate(zip(sequences, spans, strict=True)):
        ids[row, : len(seq)] = torch.tensor(seq)
        attention[row, : len(seq)] = 1
        for start, end in row_spans:
            mask[row, start - 1 : end - 1] = 1
    out = model(input_ids=ids, attention_mask=attention, output_hidden_states=True)
    logp_all = torch.log_softmax(out.logits[:, :-1].float() / temperature, dim=-1)
    logp = logp_all.gather(-1, ids[:, 1:, None])[..., 0]
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, mask, entropy, out.hidden_states[-1][:, :-1]


@pytest.fixture(scope="module")
def model(tiny_model_dir):
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).train()


def grpo_like_batch(vocab: int, seed: int = 0):
    """Two groups of rows sharing their first prompt, responses of unequal length, some rows with two turns."""
    g = torch.Generator().manual_seed(seed)

    def tokens(n):
        return torch.randint(3, vocab, (n,), generator=g).tolist()

    sequences, spans, groups = [], [], []
    for group, prompt_len in enumerate((23, 9)):
        prompt = tokens(prompt_len)
        for sample in range(3):
            first = tokens(4 + 3 * sample)
            seq, row_spans = prompt + first, [(prompt_len, prompt_len + len(first))]
            if sample != 1:  # a second turn: an observation, then another response
                seq = seq + tokens(5)
                second = tokens(2 + sample)
                row_spans.append((len(seq), len(seq) + len(second)))
                seq = seq + second
            sequences.append(seq)
            spans.append(row_spans)
            groups.append(group)
    return sequences, spans, groups


def grads(model, loss):
    model.zero_grad(set_to_none=True)
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


def assert_same_grads(ours, reference):
    """Per parameter, the gradients differ by at most 1e-5 of their norm (float rounding: sums in another order)."""
    assert ours.keys() == reference.keys() and ours
    for name in ours:
        difference = float((ours[name] - reference[name]).norm() / reference[name].norm().clamp_min(1e-12))
        assert difference < 1e-5, (name, difference)


def attention_masks(model, run):
    """The attention masks the first decoder layer's attention received while ``run()`` ran."""
    seen = []
    handle = model.model.layers[0].self_attn.register_forward_pre_hook(
        lambda module, args, kwargs: seen.append(kwargs.get("attention_mask")), with_kwargs=True
    )
    try:
        result = run()
    finally:
        handle.remove()
    return result, seen


def test_scoring_without_a_padding_mask_equals_the_masked_forward(model):
    sequences, spans, _ = grpo_like_batch(model.config.vocab_size)
    (logp, mask, entropy, hidden), seen = attention_masks(
        model, lambda: sequence_logprobs(model, sequences, spans, 0.7, with_entropy=True)
    )
    assert seen and all(m is None for m in seen)  # SDPA's causal kernel, no dense (B, 1, W, W) mask
    assert_same_scores(model, sequences, spans, (logp, mask, entropy, hidden), 0.7)


def test_the_lm_head_runs_on_response_positions_only(model):
    sequences, spans, _ = grpo_like_batch(model.config.vocab_size, seed=1)
    head_rows = []
    handle = model.get_output_embeddings().register_forward_hook(
        lambda module, args, out: head_rows.append(out.shape[:-1].numel())
    )
    try:
        scores = sequence_logprobs(model, sequences, spans, 1.3, with_entropy=True)
    finally:
        handle.remove()
    assert head_rows == [sum(end - start for row in spans for start, end in row)]  # not B × W positions
    lengths = [sum(end - start for start, end in row) for row in spans]
    assert scores[0].shape == (len(sequences), max(lengths))
    assert scores[1].sum(-1).tolist() == lengths  # packed: a row's span tokens first, in order
    assert_same_scores(model, sequences, spans, scores, 1.3)


def assert_same_scores(model, sequences, spans, scores, temperature):
    """Packed scores equal the reference's span columns, and so do the gradients through them."""
    logp, mask, entropy, hidden = scores
    ref_logp, ref_mask, ref_entropy, ref_hidden = reference_logprobs(model, sequences, spans, temperature)
    ours, on = mask.bool(), ref_mask.bool()  # row-major: each row's span tokens in order, in both layouts
    torch.testing.assert_close(logp[ours], ref_logp[on], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(entropy[ours], ref_entropy[on], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(hidden[ours], ref_hidden[on], rtol=1e-5, atol=1e-6)
    weights = torch.linspace(-1, 1, int(on.sum()))
    assert_same_grads(
        grads(model, (logp[ours] * weights).sum() + entropy[ours].sum() + hidden[ours].sum()),
        grads(model, (ref_logp[on] * weights).sum() + ref_entropy[on].sum() + ref_hidden[on].sum()),
    )


def test_a_groups_shared_prompt_runs_once_and_scores_as_the_full_rows(model):
    sequences, spans, groups = grpo_like_batch(model.config.vocab_size, seed=2)
    inputs = []
    handle = model.get_input_embeddings().register_forward_hook(lambda module, args, out: inputs.append(out.shape[:2]))
    try:
        scores = sequence_logprobs(model, sequences, spans, 0.9, with_entropy=True, groups=groups)
    finally:
        handle.remove()
    # per group: its prompt (less the token predicting the first response token) once, then the rows' suffixes
    assert [tuple(shape) for shape in inputs] == [(1, 22), (3, 42 - 22), (1, 8), (3, 28 - 8)]
    assert_same_scores(model, sequences, spans, scores, 0.9)


def test_the_last_layers_mlp_runs_at_scored_positions_only(model):
    """Its output elsewhere feeds only final states nothing reads; the prefix pass scores nothing at all."""
    sequences, spans, groups = grpo_like_batch(model.config.vocab_size, seed=4)
    mlp_rows, first_rows = [], []
    hooks = [
        model.model.layers[-1].mlp.register_forward_hook(lambda module, args, out: mlp_rows.append(args[0].shape[0])),
        model.model.layers[0].mlp.register_forward_hook(
            lambda module, args, out: first_rows.append(args[0].shape[:-1].numel())
        ),
    ]
    try:
        scores = sequence_logprobs(model, sequences, spans, 1.0, with_entropy=True, groups=groups)
    finally:
        for hook in hooks:
            hook.remove()
    scored = [sum(end - start for start, end in spans[r]) for r in range(len(sequences))]
    assert mlp_rows == [0, sum(scored[:3]), 0, sum(scored[3:])]  # per group: its prefix, then its rows
    assert sum(first_rows) > sum(mlp_rows)  # the other layers run every position
    assert_same_scores(model, sequences, spans, scores, 1.0)


def test_rows_share_only_within_their_group_and_a_lone_row_runs_whole(model):
    sequences, spans, groups = grpo_like_batch(model.config.vocab_size, seed=3)
    sequences, spans, groups = sequences[:4], spans[:4], [0, 0, 0, 7]  # group 7: a single row, nothing to share
    scores = sequence_logprobs(model, sequences, spans, 1.0, with_entropy=True, groups=groups)
    assert_same_scores(model, sequences, spans, scores, 1.0)


def test_rows_of_very_unequal_length_run_in_length_runs_and_score_as_the_full_rows(model):
    """A group where one episode played many more turns than the rest: the short rows are not padded to it."""
    g = torch.Generator().manual_seed(5)

    def tokens(n):
        return torch.randint(3, model.config.vocab_size, (n,), generator=g).tolist()

    prompt = tokens(12)
    sequences, spans = [], []
    for n in (6, 130, 7, 6, 5):  # one long row among short ones (several turns: observation, then response)
        response = tokens(n)
        row_spans = [(12, 12 + n)]
        seq = prompt + response
        if n > 100:
            seq = seq + tokens(9)
            row_spans.append((len(seq), len(seq) + 20))
            seq = seq + tokens(20)
        sequences.append(seq)
        spans.append(row_spans)
    inputs = []
    handle = model.get_input_embeddings().register_forward_hook(lambda module, args, out: inputs.append(out.shape[:2]))
    try:
        scores = sequence_logprobs(model, sequences, spans, 1.1, with_entropy=True, groups=[0] * len(sequences))
    finally:
        handle.remove()
    # the prompt less one token once; the long row alone; the four short ones together, not padded to 148
    assert [tuple(shape) for shape in inputs] == [(1, 11), (1, len(sequences[1]) - 11), (4, 19 - 11)]
    assert_same_scores(model, sequences, spans, scores, 1.1)


def test_length_runs_split_a_padded_batch_only_where_it_saves_more_than_a_forward():
    from baselines.ppo.generation import length_runs

    assert length_runs([44, 440, 45, 44], overhead=32) == [[1], [2, 0, 3]]  # 4·440 > 440 + 3·45 + 32
    assert length_runs([12, 8, 20], overhead=32) == [[2, 0, 1]]  # splitting saves 16 positions, less than 32
    assert length_runs([12, 8, 20], overhead=0) == [[2], [0], [1]]
    assert length_runs([50, 50], overhead=float("inf")) == [[0, 1]]
    assert length_runs([]) == []


def test_micro_batches_hold_whole_groups_in_the_given_order():
    from baselines.ppo.batch import Row, micro_batches

    rows = [Row(group, sample, [1, 2, 3], [(2, 3)]) for group, sample in [(1, 0), (0, 0), (1, 1), (0, 1), (2, 0)]]
    chunks = micro_batches(rows, 2)
    assert [[(r.group, r.sample) for r in chunk] for chunk in chunks] == [[(0, 0), (0, 1)], [(1, 0), (1, 1)], [(2, 0)]]


def test_bfloat16_autocast_runs_the_update_in_bf16_and_keeps_fp32_weights(model, tiny_model_dir):
    from baselines.ppo import batch as B
    from baselines.ppo import losses as L
    from baselines.ppo.config import PPOConfig

    sequences, spans, groups = grpo_like_batch(model.config.vocab_size, seed=4)
    rows = [B.Row(g, i, seq, sp) for i, (seq, sp, g) in enumerate(zip(sequences, spans, groups, strict=True))]
    for i, row in enumerate(rows):
        row.advantages = torch.full((row.length,), (-1.0) ** i)
    results = {}
    for dtype in ("float32", "bfloat16-autocast"):
        config = PPOConfig(model=tiny_model_dir, dtype=dtype, entropy_coef=0.01, advantage="grpo")
        seen: list = []
        handle = model.model.layers[0].mlp.down_proj.register_forward_hook(
            lambda m, a, out, seen=seen: seen.append(out.dtype)
        )
        try:
            loss, _ = L.policy_loss(rows, model, config, B.normalizer(rows, config))
        finally:
            handle.remove()
        results[dtype] = (float(loss), grads(model, loss), set(seen))
    assert results["float32"][2] == {torch.float32} and results["bfloat16-autocast"][2] == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert all(g.dtype == torch.float32 for g in results["bfloat16-autocast"][1].values())
    assert results["bfloat16-autocast"][0] == pytest.approx(results["float32"][0], rel=0.05, abs=1e-3)
