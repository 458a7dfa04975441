"""PPO/GRPO building blocks against hand-worked examples."""

import pytest

torch = pytest.importorskip("torch")

from baselines.ppo.losses import (  # noqa: E402
    gae_advantages,
    group_advantages,
    kl_penalty,
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


def test_dr_grpo_aggregation_and_bad_name():
    logp = torch.zeros(2, 4)
    adv = torch.ones(2, 4)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float32)
    loss, _ = ppo_policy_loss(logp, logp, adv, mask, aggregation="seq-mean-token-sum-norm")
    torch.testing.assert_close(loss, torch.tensor(-(2 + 4) / 2 / 4))
    with pytest.raises(ValueError, match="aggregation"):
        ppo_policy_loss(logp, logp, adv, mask, aggregation="mean")


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
