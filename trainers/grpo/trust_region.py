"""Bound how far one optimizer step moves the policy on the tokens it trained on (a backtracking line search).

Why: GRPO takes one optimizer step per batch, and the PPO clip cannot limit that step (every ratio starts
near 1, so nothing is clipped yet). With Adam at a high learning rate one step can move a policy far outside
the region its samples describe; measured on the toy reversal task, a single step took the stop token's
probability after the answer from ~1 to ~0, every later completion ran to the length limit with reward 0,
every group had zero variance and training never recovered. After the step this module measures
KL(pi_old || pi_new) on the batch's own completion tokens with the k3 estimator, E_old[r - 1 - log r] with
r = pi_new / pi_old, against the logprobs the loss already computed (the learner passes the fresh samples'
tokens, drawn from about pi_old; a logged off-policy sample was not); above ``max_kl`` it halves the step
(theta = theta_old + s * delta) until the bound holds, and after ``max_backtracks`` halvings it undoes the
step. The optimizer's moment estimates keep the step's gradient either way.

    python -m pytest tests/trainers/grpo/test_trust_region.py
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class UpdateBound:
    max_kl: float  # nats per completion token
    max_backtracks: int = 4


@dataclass(frozen=True)
class StepOutcome:
    kl: float  # KL of the update that stands (0.0 when it was undone)
    kl_full_step: float  # KL the unscaled optimizer step would have caused
    scale: float  # fraction of the optimizer's step that stands: 1, 0.5, ..., or 0 (undone)
    backtracks: int

    @property
    def applied(self) -> bool:
        return self.scale > 0


def token_kl(
    new_logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor
) -> tuple[float, float]:
    """(sum, token count) of the k3 estimate of KL(old || new) over masked tokens sampled from ``old``."""
    log_r = (new_logprobs - old_logprobs) * mask  # [B, T]
    k3 = (torch.exp(log_r) - 1.0 - log_r) * mask  # >= 0 per token
    return float(k3.sum()), float(mask.sum())


def bounded_step(
    params: Sequence[torch.nn.Parameter],
    step: Callable[[], None],
    measure_kl: Callable[[], float],
    bound: UpdateBound,
) -> StepOutcome:
    """Run ``step`` (the optimizer step), then shrink or undo it until ``measure_kl()`` <= ``bound.max_kl``."""
    before = [p.detach().clone() for p in params]
    step()
    kl = full = measure_kl()
    scale, backtracks = 1.0, 0
    with torch.no_grad():
        while kl > bound.max_kl and backtracks < bound.max_backtracks:
            for p, b in zip(params, before, strict=True):
                p.add_(b).mul_(0.5)  # theta <- theta_old + (theta - theta_old) / 2
            scale, backtracks = scale / 2, backtracks + 1
            kl = measure_kl()
        if kl > bound.max_kl:
            for p, b in zip(params, before, strict=True):
                p.copy_(b)
            return StepOutcome(kl=0.0, kl_full_step=full, scale=0.0, backtracks=backtracks)
    return StepOutcome(kl=kl, kl_full_step=full, scale=scale, backtracks=backtracks)
