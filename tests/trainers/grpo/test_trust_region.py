"""The update bound: a step that moves the policy too far on its own tokens is halved or undone."""

from __future__ import annotations

import math

import pytest
import torch

from trainers.grpo.trust_region import UpdateBound, bounded_step, token_kl


def _policy() -> tuple[torch.nn.Parameter, torch.Tensor, torch.Tensor]:
    """A softmax policy over 4 actions, 64 actions sampled from it, their logprobs before any step."""
    logits = torch.nn.Parameter(torch.tensor([4.0, 0.0, 0.0, 0.0]))  # the first action is nearly certain
    actions = torch.multinomial(
        logits.detach().softmax(-1), 64, replacement=True, generator=torch.Generator().manual_seed(0)
    )
    old = torch.log_softmax(logits.detach(), -1)[actions][None]  # [1, 64]
    return logits, actions, old


def _kl(logits: torch.Tensor, actions: torch.Tensor, old: torch.Tensor) -> float:
    with torch.no_grad():
        new = torch.log_softmax(logits, -1)[actions][None]
    total, n = token_kl(new, old, torch.ones_like(old))
    return total / n


def _push_down_first(logits: torch.nn.Parameter, lr: float) -> torch.optim.Optimizer:
    opt = torch.optim.SGD([logits], lr=lr)
    logits.grad = torch.tensor([1.0, -1 / 3, -1 / 3, -1 / 3])  # descent lowers the likely action
    return opt


def test_token_kl_is_exact_for_a_known_change() -> None:
    old = torch.log(torch.tensor([[0.5, 0.5]]))
    new = torch.log(torch.tensor([[0.25, 1.0]]))
    total, n = token_kl(new, old, torch.tensor([[1.0, 1.0]]))
    # k3 per token: r - 1 - log r with r = 0.5 and 2
    assert n == 2 and total == pytest.approx((0.5 - 1 - math.log(0.5)) + (2 - 1 - math.log(2)))


def test_small_step_stands_unchanged() -> None:
    logits, actions, old = _policy()
    opt = _push_down_first(logits, lr=0.01)
    out = bounded_step([logits], opt.step, lambda: _kl(logits, actions, old), UpdateBound(max_kl=0.05))
    assert out.scale == 1.0 and out.backtracks == 0 and out.applied
    assert torch.allclose(logits.detach(), torch.tensor([3.99, 1 / 300, 1 / 300, 1 / 300]))
    assert out.kl == pytest.approx(_kl(logits, actions, old)) and out.kl <= 0.05


def test_large_step_is_halved_until_within_the_bound() -> None:
    logits, actions, old = _policy()
    opt = _push_down_first(logits, lr=6.0)  # alone it would make the likely action unlikely
    out = bounded_step([logits], opt.step, lambda: _kl(logits, actions, old), UpdateBound(max_kl=0.05))
    assert out.kl_full_step > 1.0  # the unbounded step moved the policy far
    assert 0 < out.scale < 1 and out.backtracks >= 1
    assert out.kl <= 0.05 and out.kl == pytest.approx(_kl(logits, actions, old))
    step = torch.tensor([-6.0, 2.0, 2.0, 2.0]) * out.scale  # the same direction, shortened
    assert torch.allclose(logits.detach(), torch.tensor([4.0, 0.0, 0.0, 0.0]) + step, atol=1e-6)
    assert logits.detach().softmax(-1)[0] > 0.8  # still likely (the full step: 0.006)


def test_step_that_cannot_be_bounded_is_undone() -> None:
    logits, actions, old = _policy()
    opt = _push_down_first(logits, lr=6.0)
    out = bounded_step(
        [logits], opt.step, lambda: _kl(logits, actions, old), UpdateBound(1e-9, max_backtracks=2)
    )
    assert not out.applied and out.scale == 0.0 and out.backtracks == 2 and out.kl == 0.0
    assert torch.equal(logits.detach(), torch.tensor([4.0, 0.0, 0.0, 0.0]))
