"""PPO/GRPO building blocks against hand-worked examples."""

import pytest

torch = pytest.importorskip("torch")

from baselines.ppo.losses import (  # noqa: E402
    aggregate,
    gae_advantages,
    group_advantages,
    kl_penalty,
    masked_whiten,
    ppo_policy_loss,
    token_entropy,
    value_loss,
)


def test_gae_hand_worked():
    # one sequence, 3 response tokens, reward 1 on the last; gamma 0.9, lambda 0.8
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 0.6, 0.7]])
    mask = torch.ones(1, 3)
    adv, ret = gae_advantages(rewards, values, mask, gamma=0.9, lam=0.8)
    d2 = 1.0 - 0.7  # next value 0 at the end
    d1 = 0.0 + 0.9 * 0.7 - 0.6
    d0 = 0.0 + 0.9 * 0.6 - 0.5
    a2 = d2
    a1 = d1 + 0.72 * a2
    a0 = d0 + 0.72 * a1
    torch.testing.assert_close(adv, torch.tensor([[a0, a1, a2]]))
    torch.testing.assert_close(ret, adv + values)


def test_gae_skips_masked_observation_tokens():
    rewards = torch.tensor([[0.0, 0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 9.0, 9.0, 0.7]])  # positions 1-2 are env tokens: their values must not matter
    mask = torch.tensor([[1.0, 0.0, 0.0, 1.0]])
    adv, _ = gae_advantages(rewards, values, mask, gamma=1.0, lam=1.0)
    compact, _ = gae_advantages(torch.tensor([[0.0, 1.0]]), torch.tensor([[0.5, 0.7]]), torch.ones(1, 2))
    torch.testing.assert_close(adv[:, [0, 3]], compact)
    assert adv[0, 1] == 0 and adv[0, 2] == 0


def test_gae_with_gamma_lambda_one_is_return_minus_value():
    rewards = torch.tensor([[0.0, 0.0, 2.0]])
    values = torch.tensor([[0.1, 0.2, 0.3]])
    adv, _ = gae_advantages(rewards, values, torch.ones(1, 3))
    torch.testing.assert_close(adv, 2.0 - values)


def test_group_advantages():
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0], [2.0, 2.0, 2.0, 2.0]])
    grpo = group_advantages(r)
    std = torch.tensor([1.0, 0.0, 0.0, 1.0]).std()
    torch.testing.assert_close(grpo[0], (r[0] - 0.5) / (std + 1e-6))
    torch.testing.assert_close(grpo[1], torch.zeros(4))
    torch.testing.assert_close(group_advantages(r, normalize_std=False)[0], r[0] - 0.5)


def test_ppo_loss_equals_policy_gradient_at_ratio_one():
    torch.manual_seed(0)
    logits = torch.randn(2, 5, requires_grad=True)
    logp = torch.log_softmax(logits, -1)
    old = logp.detach()
    adv = torch.randn(2, 5)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.float32)
    loss, stats = ppo_policy_loss(logp, old, adv, mask)
    (grad_ppo,) = torch.autograd.grad(loss, logits, retain_graph=True)
    pg = -(adv * logp * mask).sum() / mask.sum()  # REINFORCE surrogate
    (grad_pg,) = torch.autograd.grad(pg, logits)
    torch.testing.assert_close(grad_ppo, grad_pg)
    assert stats["approx_kl"] == 0 and stats["clipfrac"] == 0


def test_ppo_clipping_is_asymmetric():
    logp = torch.log(torch.tensor([[1.5, 0.5]]))
    old = torch.zeros(1, 2)
    adv = torch.tensor([[1.0, -1.0]])
    loss, stats = ppo_policy_loss(logp, old, adv, torch.ones(1, 2), clip_low=0.2, clip_high=0.28)
    # token 0: ratio 1.5 > 1.28 with A>0 -> clipped to 1.28; token 1: ratio 0.5 < 0.8 with A<0 -> clipped to 0.8
    torch.testing.assert_close(loss, torch.tensor(((-1.28) + 0.8) / 2))
    assert stats["clipfrac"] == 1.0


def verl_agg_loss(loss_mat, loss_mask, mode):
    """verl 0.6 ``agg_loss``, written out from its formulas."""
    if mode == "token-mean":
        return (loss_mat * loss_mask).sum() / loss_mask.sum()
    if mode == "seq-mean-token-sum":
        return torch.mean(torch.sum(loss_mat * loss_mask, dim=-1))
    return torch.mean(torch.sum(loss_mat * loss_mask, dim=-1) / torch.sum(loss_mask, dim=-1))


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
def test_aggregation_modes_equal_verl_and_split_exactly_into_micro_batches(mode):
    g = torch.Generator().manual_seed(0)
    loss = torch.randn(6, 9, generator=g)
    mask = (torch.rand(6, 9, generator=g) > 0.3).float()
    mask[:, 0] = 1
    whole = aggregate(loss, mask, mode)
    torch.testing.assert_close(whole, verl_agg_loss(loss, mask, mode))
    # micro-batches of 2 rows with the minibatch's normaliser (tokens or sequences) sum to the whole
    denominator = float(mask.sum()) if mode == "token-mean" else 6.0
    parts = sum(aggregate(loss[i : i + 2], mask[i : i + 2], mode, denominator) for i in range(0, 6, 2))
    torch.testing.assert_close(parts, whole)


def test_aggregation_hand_worked_and_bad_name():
    logp = torch.zeros(2, 4)
    adv = torch.ones(2, 4)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float32)
    loss, _ = ppo_policy_loss(logp, logp, adv, mask, aggregation="seq-mean-token-sum")  # Dr.GRPO
    torch.testing.assert_close(loss, torch.tensor(-(2 + 4) / 2))
    loss, _ = ppo_policy_loss(logp, logp, adv, mask, aggregation="seq-mean-token-mean")  # GRPO
    torch.testing.assert_close(loss, torch.tensor(-1.0))
    loss, _ = ppo_policy_loss(logp, logp, adv * torch.tensor([[1.0], [2.0]]), mask, aggregation="token-mean")
    torch.testing.assert_close(loss, torch.tensor(-(2 * 1 + 4 * 2) / 6))
    with pytest.raises(ValueError, match="aggregation"):
        ppo_policy_loss(logp, logp, adv, mask, aggregation="mean")


def test_masked_whiten_is_verls_formula():
    g = torch.Generator().manual_seed(1)
    values = torch.randn(5, 7, generator=g) * 3 + 2
    mask = (torch.rand(5, 7, generator=g) > 0.4).float()
    mean = (values * mask).sum() / mask.sum()
    n = mask.sum()
    var = (((values - mean) ** 2) * mask).sum() / n * (n / (n - 1))  # verl masked_var: unbiased
    expected = (values - mean) * torch.rsqrt(var + 1e-8)
    torch.testing.assert_close(masked_whiten(values, mask), expected)
    torch.testing.assert_close(masked_whiten(values, mask, shift_mean=False), expected + mean)
    w = masked_whiten(values, mask)[mask.bool()]
    assert abs(float(w.mean())) < 1e-5 and float(w.std(unbiased=True)) == pytest.approx(1.0, abs=1e-5)
    # the statistics come through ``reduce`` (an all-reduce across ranks in the trainer): given the whole
    # batch's count, sum and centred sum of squares, one rank's half whitens exactly as the whole does
    flat = values.flatten()
    count, total = 35.0, float(flat.sum())
    answers = iter([count, total, float(((flat - total / count) ** 2).sum())])
    half = masked_whiten(flat[:17], torch.ones(17), reduce=lambda _: next(answers))
    torch.testing.assert_close(half, masked_whiten(flat, torch.ones(35))[:17])
    with pytest.raises(ValueError, match="at least 2"):
        masked_whiten(torch.ones(1, 3), torch.tensor([[1.0, 0.0, 0.0]]))


def test_kl_k1_default_and_k3_clamped_as_verl():
    lp = torch.log(torch.tensor([[0.5, 0.1]]))
    ref = torch.log(torch.tensor([[0.25, 0.1]]))
    torch.testing.assert_close(kl_penalty(lp, ref), lp - ref)  # k1
    log_ratio = ref - lp
    torch.testing.assert_close(kl_penalty(lp, ref, "low_var_kl"), torch.exp(log_ratio) - log_ratio - 1)
    far = torch.tensor([[0.0]]), torch.tensor([[30.0]])  # log ratio 30 -> clamped to 20 -> kl clamped to 10
    assert kl_penalty(*far, "low_var_kl").item() == 10.0
    near = kl_penalty(torch.tensor([[0.0]]), torch.tensor([[-5.0]]), "low_var_kl").item()
    assert near == pytest.approx(float(torch.exp(torch.tensor(-5.0))) + 4.0)  # inside the clamp
    assert kl_penalty(*far).item() == -30.0  # k1 is not clamped (verl)
    with pytest.raises(ValueError, match="kl_loss_type"):
        kl_penalty(lp, ref, "k9")


def test_value_loss_clip_and_entropy_and_kl():
    v = torch.tensor([[2.0]])
    old = torch.tensor([[0.0]])
    ret = torch.tensor([[1.0]])
    # clipped value 0.5: max((2-1)^2, (0.5-1)^2) = 1 -> 0.5
    torch.testing.assert_close(value_loss(v, old, ret, torch.ones(1, 1), clip=0.5), torch.tensor(0.5))
    uniform = torch.zeros(1, 1, 8)
    torch.testing.assert_close(token_entropy(uniform), torch.log(torch.tensor([[8.0]])))
    lp = torch.log(torch.tensor([[0.5]]))
    assert kl_penalty(lp, lp).item() == 0 and kl_penalty(lp, torch.log(torch.tensor([[0.25]]))).item() > 0
    assert kl_penalty(lp, torch.log(torch.tensor([[0.25]])), "low_var_kl").item() > 0
