"""The decoupled PPO objective of asynchronous RL (AReaL), with IcePop-style token masking.

Live traffic was sampled by whatever policy version served it (the behaviour policy, whose logprobs the
proxy recorded), so the PPO trust region is taken around a *proximal* policy instead: the learner's
weights before this update. Per token::

    w = min(pi_prox / pi_behav, cap)                    behaviour importance weight, no gradient
    r = pi_theta / pi_prox                              PPO ratio
    loss = -w * min(r * A, clip(r, 1 - clip_low, 1 + clip_high) * A)

and a token whose pi_prox / pi_behav leaves [mask_low, mask_high] gets no gradient at all (the training
and inference engines disagree on it: IcePop). With one optimizer step per update pi_theta equals pi_prox
at the gradient, so r = 1 and the clip only acts from the second mini-batch on (``ppo_minibatches``).
Samples without behaviour logprobs (a backend that reports none) use pi_prox as pi_behav (w = 1).

Shapes: B samples, T completion positions (right-padded).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch


@dataclass(frozen=True)
class DecoupledLossConfig:
    clip_low: float = 0.2
    clip_high: float = 0.28
    mask_low: float = 0.5
    mask_high: float = 2.0
    behaviour_weight_cap: float = 5.0
    agg: Literal["token_mean", "seq_mean"] = "token_mean"


def decoupled_ppo_loss(
    logprobs: torch.Tensor,  # [B, T] log pi_theta(token), requires grad
    proximal_logprobs: torch.Tensor,  # [B, T] log pi_prox(token): the learner before this update
    behaviour_logprobs: torch.Tensor,  # [B, T] log pi_behav(token): what the serving engine reported
    advantages: torch.Tensor,  # [B]
    mask: torch.Tensor,  # [B, T] 1.0 on completion tokens, 0.0 on padding
    cfg: DecoupledLossConfig,
    weights: torch.Tensor | None = None,  # [B] per-sample weight (staleness), default 1
    normalizer: float | None = None,  # token_mean: tokens of the whole batch; seq_mean: its samples
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Returns (scalar loss, detached stats: clip_frac, masked_frac, capped_frac, behaviour_weight_mean,
    ratio_mean)."""
    mask = mask.to(logprobs.dtype)
    weights = torch.ones_like(advantages) if weights is None else weights
    prox = proximal_logprobs.detach()
    with torch.no_grad():
        behav_w = torch.exp((prox - behaviour_logprobs) * mask)  # [B, T]; 1 on padding
        keep = ((behav_w >= cfg.mask_low) & (behav_w <= cfg.mask_high)).to(mask.dtype) * mask  # IcePop
        capped = (behav_w > cfg.behaviour_weight_cap).to(mask.dtype) * keep
        behav_w = behav_w.clamp(max=cfg.behaviour_weight_cap)
    ratio = torch.exp((logprobs - prox) * mask)  # [B, T]
    adv = advantages[:, None]  # [B, 1]
    surr1 = ratio * adv
    surr2 = torch.clamp(ratio, 1.0 - cfg.clip_low, 1.0 + cfg.clip_high) * adv
    pg = -torch.minimum(surr1, surr2) * behav_w  # [B, T]
    token_w = keep * weights[:, None]  # [B, T]
    if cfg.agg == "token_mean":
        denom = normalizer if normalizer is not None else mask.sum().clamp(min=1.0)
        loss = (pg * token_w).sum() / denom
    else:
        lengths = mask.sum(-1).clamp(min=1.0)  # [B]
        loss = ((pg * token_w).sum(-1) / lengths).sum() / (normalizer or max(1, logprobs.shape[0]))
    with torch.no_grad():
        n_tok = mask.sum().clamp(min=1.0)
        clipped = (surr2 < surr1).to(mask.dtype) * keep
        stats = {
            "clip_frac": clipped.sum() / n_tok,
            "masked_frac": (mask - keep).sum() / n_tok,
            "capped_frac": capped.sum() / n_tok,
            "behaviour_weight_mean": (behav_w * keep).sum() / keep.sum().clamp(min=1.0),
            "ratio_mean": (ratio.detach() * mask).sum() / n_tok,
        }
    return loss, stats
