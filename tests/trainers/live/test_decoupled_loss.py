"""The decoupled PPO objective: behaviour weight pi_prox / pi_behav (capped, IcePop-masked), PPO ratio
against the proximal policy."""

from __future__ import annotations

import math

import pytest
import torch

from trainers.live.decoupled_loss import DecoupledLossConfig, decoupled_ppo_loss

CFG = DecoupledLossConfig(clip_low=0.2, clip_high=0.28, mask_low=0.5, mask_high=2.0, behaviour_weight_cap=1.5)


def test_at_the_proximal_policy_the_gradient_is_the_behaviour_weighted_policy_gradient() -> None:
    lp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    behaviour = torch.tensor([[-1.0 - math.log(1.2), -2.0 + math.log(1.25)]])  # w = 1.2, 0.8
    mask = torch.ones(1, 2)
    loss, st = decoupled_ppo_loss(lp, lp.detach(), behaviour, torch.tensor([2.0]), mask, CFG)
    loss.backward()
    # d/dlp of -w * r * A with r = exp(lp - prox) = 1 at lp = prox: -w * A, averaged over 2 tokens
    assert lp.grad[0].tolist() == pytest.approx([-1.2 * 2 / 2, -0.8 * 2 / 2], rel=1e-5)
    assert float(st["ratio_mean"]) == pytest.approx(1.0)
    assert float(st["behaviour_weight_mean"]) == pytest.approx(1.0)


def test_the_behaviour_weight_is_capped_and_disagreeing_tokens_are_masked() -> None:
    prox = torch.zeros(1, 3)
    # w = 1.8 (kept, capped at 1.5), 3.0 (beyond mask_high: masked), 0.3 (below mask_low: masked)
    behaviour = -torch.log(torch.tensor([[1.8, 3.0, 0.3]]))
    lp = prox.clone().requires_grad_(True)
    loss, st = decoupled_ppo_loss(lp, prox, behaviour, torch.tensor([1.0]), torch.ones(1, 3), CFG)
    loss.backward()
    assert lp.grad[0].tolist() == pytest.approx([-1.5 / 3, 0.0, 0.0], rel=1e-5)
    assert float(st["masked_frac"]) == pytest.approx(2 / 3)
    assert float(st["capped_frac"]) == pytest.approx(1 / 3)


def test_the_ppo_clip_acts_on_the_ratio_to_the_proximal_policy() -> None:
    prox = torch.zeros(2, 1)
    lp = torch.log(torch.tensor([[1.5], [0.5]])).requires_grad_(True)  # r = 1.5 and 0.5
    loss, st = decoupled_ppo_loss(lp, prox, prox, torch.tensor([1.0, -1.0]), torch.ones(2, 1), CFG)
    loss.backward()
    # A > 0 with r above 1 + clip_high, A < 0 with r below 1 - clip_low: both clipped, no gradient
    assert lp.grad.tolist() == [[0.0], [0.0]]
    assert float(st["clip_frac"]) == 1.0
    assert float(loss.detach()) == pytest.approx(-(1.28 * 1.0 + 0.8 * -1.0) / 2)


def test_padding_and_sample_weights() -> None:
    lp = torch.zeros(2, 2, requires_grad=True)
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    loss, _ = decoupled_ppo_loss(
        lp, lp.detach(), lp.detach(), torch.tensor([1.0, 1.0]), mask, CFG, weights=torch.tensor([1.0, 0.5])
    )
    loss.backward()
    assert lp.grad.flatten().tolist() == pytest.approx([-1 / 3, 0.0, -0.5 / 3, -0.5 / 3])


def test_kl_to_the_reference_pulls_toward_it_and_is_zero_at_it() -> None:
    cfg = DecoupledLossConfig(**{**CFG.__dict__, "kl_coef": 0.5})
    lp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    mask = torch.tensor([[1.0, 1.0]])
    ref = torch.tensor([[-1.0, -1.0]])  # the first token is at the reference, the second below it
    loss, st = decoupled_ppo_loss(
        lp, lp.detach(), lp.detach(), torch.tensor([0.0]), mask, cfg, ref_logprobs=ref
    )
    loss.backward()
    # no advantage: only the k3 term e^d - d - 1 (d = ref - lp) remains; its gradient is -(e^d - 1)
    d = 1.0
    assert float(st["kl"]) == pytest.approx((math.exp(d) - d - 1) / 2)
    assert lp.grad[0].tolist() == pytest.approx([0.0, -0.5 * (math.exp(d) - 1) / 2], rel=1e-5)
    with pytest.raises(ValueError, match="ref_logprobs"):
        decoupled_ppo_loss(lp, lp.detach(), lp.detach(), torch.tensor([0.0]), mask, cfg)
