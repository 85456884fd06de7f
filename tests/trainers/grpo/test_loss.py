"""The GRPO loss on hand-computed tensors."""

from __future__ import annotations

import math

import pytest
import torch

from trainers.grpo.loss import LossConfig, grpo_loss

CFG = LossConfig(clip_low=0.2, clip_high=0.28, mask_low=0.5, mask_high=2.0)


def _case() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    # ratios: row 0 = [1.5, 0.9, pad], row 1 = [3.0, 0.7, 0.4]; behaviour logprobs are all log(0.1)
    ratios = torch.tensor([[1.5, 0.9, 1.0], [3.0, 0.7, 0.4]])
    behaviour = torch.full((2, 3), math.log(0.1))
    new = (behaviour + ratios.log()).requires_grad_(True)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    adv = torch.tensor([1.0, -1.0])
    return new, behaviour, adv, mask


def test_token_mean_clip_and_mask_by_hand() -> None:
    new, behaviour, adv, mask = _case()
    loss, stats = grpo_loss(new, behaviour, adv, mask, CFG)
    # row 0: 1.5 clipped to 1.28 (adv > 0) -> -1.28; 0.9 inside -> -0.9
    # row 1: 3.0 masked (> 2.0); 0.7 -> min(-0.7, -0.8) = -0.8 -> +0.8 (clipped); 0.4 masked (< 0.5)
    assert loss.item() == pytest.approx((-1.28 - 0.9 + 0.8) / 5, abs=1e-6)
    assert stats["clip_frac"].item() == pytest.approx(2 / 5)
    assert stats["masked_frac"].item() == pytest.approx(2 / 5)
    loss.backward()
    expected = torch.tensor([[0.0, -0.9 / 5, 0.0], [0.0, 0.0, 0.0]])  # d/dlogp ratio*A = ratio*A
    assert torch.allclose(new.grad, expected, atol=1e-6)


def test_seq_mean_and_weights() -> None:
    new, behaviour, adv, mask = _case()
    cfg = LossConfig(agg="seq_mean")
    loss, _ = grpo_loss(new, behaviour, adv, mask, cfg)
    assert loss.item() == pytest.approx(((-1.28 - 0.9) / 2 + 0.8 / 3) / 2, abs=1e-6)
    loss_w, _ = grpo_loss(new, behaviour, adv, mask, CFG, weights=torch.tensor([1.0, 0.5]))
    assert loss_w.item() == pytest.approx((-1.28 - 0.9 + 0.4) / 5, abs=1e-6)
    loss_n, _ = grpo_loss(new, behaviour, adv, mask, CFG, normalizer=10.0)
    assert loss_n.item() == pytest.approx((-1.28 - 0.9 + 0.8) / 10, abs=1e-6)


def test_on_policy_ratio_one_is_plain_policy_gradient() -> None:
    logp = torch.log(torch.tensor([[0.5, 0.25]])).requires_grad_(True)
    loss, stats = grpo_loss(logp, logp.detach(), torch.tensor([2.0]), torch.ones(1, 2), CFG)
    assert loss.item() == pytest.approx(-2.0)  # -(1 * 2 + 1 * 2) / 2
    assert stats["clip_frac"].item() == 0 and stats["masked_frac"].item() == 0
    loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[-1.0, -1.0]]))


def test_kl_k3_to_reference() -> None:
    new = torch.log(torch.tensor([[0.5, 0.2]])).requires_grad_(True)
    ref = torch.log(torch.tensor([[0.25, 0.2]]))
    cfg = LossConfig(kl_coef=0.1)
    loss, stats = grpo_loss(new, new.detach(), torch.tensor([0.0]), torch.ones(1, 2), cfg, ref_logprobs=ref)
    d = math.log(0.25 / 0.5)
    k3 = math.exp(d) - d - 1  # 0.5 + 0.693 - 1 = 0.193; second token: 0
    assert stats["kl"].item() == pytest.approx(k3 / 2, abs=1e-6)
    assert loss.item() == pytest.approx(0.1 * k3 / 2, abs=1e-6)
    with pytest.raises(ValueError, match="ref_logprobs"):
        grpo_loss(new, new.detach(), torch.tensor([0.0]), torch.ones(1, 2), cfg)


def test_padding_with_extreme_logprobs_stays_finite() -> None:
    new = torch.tensor([[-1.0, 50.0]], requires_grad=True)
    behaviour = torch.tensor([[-1.0, -50.0]])
    loss, _ = grpo_loss(new, behaviour, torch.tensor([1.0]), torch.tensor([[1.0, 0.0]]), CFG)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(new.grad).all()
